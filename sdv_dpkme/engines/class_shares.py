"""Class shares from every release that carries them (post-processing, no new release).

A class-conditional release holds, per class c, the joint embedding M[c] = (1/n) sum_{i: y_i = c}
phi(x_i). Wherever a map has a set of entries I whose sum is the same public constant a for every
valid row (a categorical column's one-hot block in a sum kernel; the cells of a pair of two
categorical columns; an all-categorical product; the [z, 1 - z] missingness pair of a nullable
column in the marginal map), sum_{k in I} M[c, k] = a p_c, the class share. The release adds
independent Gaussian noise of std s per entry, so (1/a) sum_{k in I} (M[c, k] + noise) estimates
p_c with variance |I| s^2 / a^2, independent of the other entry sets and of the explicit
'class_proportions' release (disjoint noise). Their inverse-variance mean is the minimum-
variance unbiased combination; every variance is public (sigma, sensitivity, n and widths).

A release pooled over the classes (the 'one_way' term) carries no class share: the target is
not one of its columns, and each of its one-hot blocks sums to 1 over the classes.
"""

import math

import numpy as np
import torch

from sdv_dpkme.features import (
    OneWayMap,
    PairwiseKernelMap,
    ProductKernelMap,
    SumKernelMap,
)
from sdv_dpkme.features.marginal import FourierMarginalMap, FourierSeries


def share_sets(fmap):
    """[(entry indices, a)]: disjoint entry sets of ``fmap``'s features whose sum is the public
    constant ``a`` on every valid row (one-hot blocks sum to 1; the one pass's projection is a
    no-op on valid rows). Empty for a map without such a set (random Fourier features)."""
    if isinstance(fmap, SumKernelMap):
        out, at, scale = [], 0, 1 / math.sqrt(len(fmap.blocks))
        for b in fmap.blocks:
            width = fmap._block_dim(b)
            if b.kind == 'categorical':
                out.append((torch.arange(at, at + width), scale))
            at += width
        return out
    if isinstance(fmap, ProductKernelMap):
        every = all(b.kind == 'categorical' for b in fmap.blocks)
        return [(torch.arange(fmap.dim), 1.0)] if every else []
    if isinstance(fmap, PairwiseKernelMap):
        out, at, scale = [], 0, 1 / math.sqrt(fmap.n_pairs)
        series = FourierSeries(fmap.length_scale, fmap.n_frequencies)
        widths = [series.width(b) if b.kind == 'numeric' else b.width for b in fmap.blocks]
        for i, j in fmap.pairs:  # each pair's cells, row-major, in the map's pair order
            a, b = fmap.blocks[i], fmap.blocks[j]
            cells = widths[i] * widths[j]
            if a.kind == b.kind == 'categorical':
                out.append((torch.arange(at, at + cells), scale))
            at += cells
        return out
    if isinstance(fmap, FourierMarginalMap):  # [(1 - z) psi, z, 1 - z] / sqrt(2) per nullable
        out, at, scale = [], 0, 1 / math.sqrt(2 * len(fmap.blocks))
        series = FourierSeries(fmap.length_scale, fmap.n_frequencies)
        for b in fmap.blocks:
            width = series.width(b)
            if b.nullable:
                out.append((torch.arange(at + width - 2, at + width), scale))
            at += width
        return out
    if isinstance(fmap, OneWayMap):  # categorical blocks first (when released per class)
        out, at, scale = [], 0, 1 / math.sqrt(fmap.n_columns)
        for b in fmap.categorical:
            out.append((torch.arange(at, at + b.width), scale))
            at += b.width
        return out
    return []


def combined_shares(proportions, proportions_std, releases):
    """(estimate (C,), its noise std per class, number of estimates combined).

    ``proportions``: the released class proportions (C,) with noise std ``proportions_std`` per
    entry; ``releases``: (feature map, noisy joint embedding (C, dim), noise std per entry,
    pooled) of the class-conditional releases. Each share set of a map gives one estimate of
    every class's share; all are averaged by inverse variance."""
    proportions = np.asarray(proportions, dtype=float)
    estimates, variances = [proportions], [float(proportions_std) ** 2]
    for fmap, noisy, std, pooled in releases:
        if pooled:
            continue
        noisy = torch.as_tensor(noisy, dtype=torch.float64)
        for index, scale in share_sets(fmap):
            estimates.append(noisy[:, index].sum(1).numpy() / scale)
            variances.append(len(index) * float(std) ** 2 / scale ** 2)
    variances = np.asarray(variances)
    if np.any(variances <= 0):  # a noiseless release (epsilon = inf) is exact
        exact = int(np.argmin(variances))
        return estimates[exact], 0.0, len(estimates)
    precision = 1 / variances
    estimate = sum(p * e for p, e in zip(precision, estimates)) / precision.sum()
    return estimate, float(precision.sum() ** -0.5), len(estimates)


def nonnegative_mean(estimate, std):
    """E[p | estimate] for a share p >= 0 under a flat prior and Gaussian noise of ``std``:
    estimate + std * pdf(t) / cdf(t), t = estimate / std (the mean of a normal truncated at 0).
    Never 0 while the noise is not negligible: a declared class whose estimate came out <= 0 is
    kept at a share of the order of the noise (0.8 std at estimate 0) instead of never being
    sampled; a share several std above 0 is left as it is."""
    estimate = np.asarray(estimate, dtype=float)
    if not std > 0:
        return np.clip(estimate, 0, None)
    t = estimate / std
    log_cdf = torch.special.log_ndtr(torch.as_tensor(t, dtype=torch.float64)).numpy()
    mills = np.exp(-0.5 * t * t - 0.5 * math.log(2 * math.pi) - log_cdf)
    return np.clip(estimate + std * mills, 0, None)
