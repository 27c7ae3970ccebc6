"""Shrinking the releases toward a public prior, for a generator that collapsed on them.

Where every release is mostly noise (a few hundred rows at a small epsilon), the distribution
closest to the noisy targets can be a point mass: the trained generator then gives (nearly)
identical rows (``generator.collapsed_classes``). A release t of d coordinates with public
noise variance s^2 per coordinate is then replaced by its James-Stein estimate

    m + max(0, 1 - (d - 2) s^2 / ||t - m||^2) (t - m),

with m the embedding of a public prior under the same feature map: every column uniform over
its public domain (numeric values uniform on the encoded [0, 1] scale and present, categories
uniform over their buckets). The factor keeps as much of t - m as stands out of the noise and
nothing where none does, and the estimate has a lower expected squared error than t for d > 2,
whatever the true embedding. It reads only the releases, their public noise and the public
layout: post-processing, no budget. Where the releases carry signal the generator does better
on the raw targets than on shrunk ones (it can only produce distributions, so most of the noise
already misses it), so the engine uses this only as a fallback after a collapse.
"""

import dataclasses

import numpy as np
import torch

from sdv_dpkme.features.columns import split_columns


def prior_rows(blocks, width, target, label, rows, generator):
    """``rows`` encoded rows of the public prior, all of class ``label`` ((rows, width) float32)."""
    x = torch.zeros(rows, width)
    for block in blocks:
        if block.kind == 'numeric':  # a nullable column's indicator stays 0: present
            x[:, block.columns[0]] = torch.rand(rows, generator=generator)
        else:
            pick = torch.randint(len(block.columns), (rows,), generator=generator)
            x[torch.arange(rows), torch.as_tensor(block.columns)[pick]] = 1.0
    if target is not None:
        x[:, list(target.columns)] = 0.0
        x[:, target.columns[label]] = 1.0
    return x


@torch.no_grad()
def prior_embeddings(blocks, width, target, objectives, generator, rows=8192):
    """Per objective, each class's mean feature vector under the prior ((C, P) float64; a Monte
    Carlo mean over ``rows`` rows per class), or None where the target is not a fixed tensor.
    A list in the objectives' order (several may share a name, e.g. the product redraws)."""
    n_classes = 1 if target is None else target.width
    means = [[] if isinstance(o.target, torch.Tensor) else None for o in objectives]
    for label in range(n_classes):
        x = prior_rows(blocks, width, target, label, rows, generator)
        y = torch.nn.functional.one_hot(torch.full((rows,), label), n_classes).float()
        with split_columns(x, blocks):
            for objective, mean in zip(objectives, means):
                if mean is not None:
                    sums, _ = objective.feature_map.class_moments(x, y)
                    mean.append(sums[label].double() / rows)
    return [None if mean is None else torch.stack(mean) for mean in means]


def james_stein(value, centre, variance):
    """``(estimate, factor)``: ``value`` (d,) shrunk toward ``centre`` for noise ``variance``
    per coordinate; factor 1 for d <= 2 or no noise."""
    d = value.shape[0]
    gap = float(((value - centre) ** 2).sum())
    if d <= 2 or variance <= 0 or gap <= 0:
        return value, 1.0
    factor = max(0.0, 1.0 - (d - 2) * variance / gap)
    return centre + factor * (value - centre), factor


def shrunk_objectives(objectives, blocks, width, target, weights, generator):
    """``(objectives, factors)``: the objectives with each fixed, noisy target shrunk toward
    the prior (``james_stein`` per class; a pooled target toward the prior's mixture under the
    released class ``weights``); others unchanged. ``factors``: {name: [factor per class, for
    each objective of that name in turn]}."""
    priors = prior_embeddings(blocks, width, target, objectives, generator)
    mix = torch.as_tensor(np.asarray(weights, dtype=float))
    mix = mix / mix.sum()
    out, factors = [], {}
    for objective, centre in zip(objectives, priors):
        if centre is None or objective.noise_std is None:
            out.append(objective)
            continue
        if objective.pooled:
            centre = (mix[:, None] * centre).sum(0, keepdim=True)
        values = objective.target.detach().double().cpu().clone()
        variance = objective.noise_std.detach().double().cpu() ** 2
        kept = factors.setdefault(objective.name, [])
        for c in range(values.shape[0]):
            values[c], factor = james_stein(values[c], centre[c], float(variance[c]))
            kept.append(round(factor, 4))
        out.append(dataclasses.replace(
            objective, target=values.to(dtype=objective.target.dtype,
                                        device=objective.target.device)))
    return out, factors
