"""The release plan of the kernel-mean-embedding engine and the plain releases it prescribes.

``plan_releases`` splits the precision of the budget over the release groups; the accountant
turns the plan into noise multipliers. One pass over the private rows (``one_pass``) then gives
every term's exact class sums, and each is released once with Gaussian noise scaled to its
sensitivity (``release_class_weights``, ``release_terms``). Nothing here knows SDV.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from sdv_dpkme.engines.accumulate import as_rows
from sdv_dpkme.engines.errors import EngineInputError
from sdv_dpkme.engines.generator import Objective
from sdv_dpkme.features import replace_sensitivity


@dataclass
class KernelTerm:
    """One released embedding and its loss term."""

    group: str  # release (budget) group
    label: str  # name in the loss history
    feature_map: object
    weight: float = 1.0
    first_step: int = 0
    last_step: int = None  # exclusive; None = until the end
    period: int = 1  # used on the steps where step % period == phase
    phase: int = 0
    pooled: bool = False  # released pooled over the classes: (1/n) sum_i phi(x_i), shape (1, P)


def plan_releases(terms, shares, has_target, extra_groups=()):
    """``{group: (share of the precision, number of releases)}`` over the groups that exist
    (``extra_groups``: single releases that are not terms)."""
    counts = {}
    for term in terms:
        counts[term.group] = counts.get(term.group, 0) + 1
    if has_target:
        counts['class_proportions'] = 1
    for group in extra_groups:
        counts[group] = 1
    unknown = set(counts) - set(shares)
    if unknown:
        raise EngineInputError(f'budget_shares lacks a share for {sorted(unknown)}.')
    plan = {name: (float(shares[name]), count) for name, count in counts.items()}
    total = sum(share for share, _ in plan.values())
    if not all(share > 0 for share, _ in plan.values()):
        raise EngineInputError(f'budget_shares must be positive, got {shares}.')
    return {name: (share / total, count) for name, (share, count) in plan.items()}


def noisy_class_weights(counts_release, min_weight=1e-3):
    """Post-processing of released class proportions: clip, drop tiny, renormalise.

    On a tiny table or a small budget the noise can push every proportion below ``min_weight``;
    the classes are then sampled uniformly (still post-processing) with a warning, not a crash
    after the budget was spent.
    """
    w = np.clip(np.asarray(counts_release, dtype=float), 0, None)
    w[w < min_weight] = 0.0
    if w.sum() <= 0:
        warnings.warn(
            'Every released class proportion came out ~0 (the noise swamps the counts of this '
            'table at this epsilon), so the classes are sampled uniformly. Use a larger epsilon '
            'or a larger table for class shares that follow the data.', UserWarning, stacklevel=2)
        return np.full(w.shape, 1.0 / w.size)
    return w / w.sum()


def release_class_weights(stats, target, ledger, noise_multiplier):
    """Released class proportions -> (sampling weights, divisor of joint embeddings).

    ``stats``: the ``ClassSums`` of the pass (its exact class counts and n). The last bucket
    (out-of-domain) is modelled but never sampled.
    """
    if target is None:
        return np.ones(1), torch.ones(1, 1, dtype=torch.float64)
    n_classes = target.width
    released = ledger.mechanism.release(
        stats.proportions(), name='class_proportions',
        description=f"proportions of the {n_classes} buckets of '{target.name}'",
        sensitivity=np.sqrt(2) / stats.n, noise_multiplier=noise_multiplier,
    )
    weights = np.append(noisy_class_weights(released.numpy()[:-1]), 0.0)
    divisor = torch.as_tensor(np.where(weights > 0, weights, 1.0))[:, None]
    return weights, divisor


def one_pass(rows, n_classes, terms, verbose):
    """The partial sums of every term over the rows (an array or a row source: a Parquet
    reader, a Dask or Spark DataFrame), merged; no noise yet."""
    return as_rows(rows).accumulate([t.feature_map for t in terms], n_classes, verbose=verbose)


def release_terms(stats, terms, sigmas, divisor, ledger):
    """One Gaussian release per term of the merged pass ``stats`` -> objectives.

    A pooled term's release is the sum over the classes of its joint embedding, (1/n) sum_i
    phi(x_i): a row's class does not enter, so its sensitivity is the map's sup ||phi(x) -
    phi(x')|| / n, which ``replace_sensitivity`` bounds (the class-sums bound covers the case
    of the same class)."""
    if not terms:
        return []
    n = stats.n
    objectives = []
    for term, embedding in zip(terms, stats.means()):
        sensitivity = replace_sensitivity(term.feature_map) / n
        if term.pooled:
            embedding = embedding.sum(0, keepdim=True)
        noisy = ledger.mechanism.release(
            embedding, name=term.group, description=term.feature_map.describe(),
            sensitivity=sensitivity, noise_multiplier=sigmas[term.group],
        )
        std = sigmas[term.group] * sensitivity
        objectives.append(Objective(
            term.label, term.feature_map,
            # joint -> class-conditional means (post-processing); a pooled target stays as is
            noisy if term.pooled else noisy / divisor,
            weight=term.weight, first_step=term.first_step, last_step=term.last_step,
            period=term.period, phase=term.phase,
            noise_std=torch.full((1,), std, dtype=torch.float64) if term.pooled
            else std / divisor[:, 0],
            pooled=term.pooled,
        ))
    return objectives
