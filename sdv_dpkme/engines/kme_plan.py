"""The release plan of the kernel-mean-embedding engine and the plain releases it prescribes.

``plan_releases`` splits the precision of the budget over the release groups; the accountant
turns the plan into noise multipliers. One pass over the private rows (``one_pass``) then gives
every term's exact class sums, and each is released once with Gaussian noise scaled to its
sensitivity (``release_class_proportions``, ``release_embeddings``). The class shares are then
estimated from all of these releases together (``shared_class_weights``, post-processing)
before they turn the joint releases into class-conditional targets (``term_objectives``).
Nothing here knows SDV.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from sdv_dpkme.engines.accumulate import as_rows
from sdv_dpkme.engines.class_shares import combined_shares, nonnegative_mean
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


def noisy_class_weights(counts_release, min_weight=1e-3, std=None):
    """Post-processing of estimated class proportions: floor, drop tiny, renormalise.

    With the estimate's noise ``std``, each share is first its mean given that it is >= 0
    (``class_shares.nonnegative_mean``): a class whose estimate came out <= 0 while the noise is
    larger keeps a share of the order of the noise instead of never being sampled. Without
    ``std``, negative shares are clipped to 0. Shares below ``min_weight`` are then dropped.
    On a tiny table or a small budget the noise can push every proportion below ``min_weight``;
    the classes are then sampled uniformly (still post-processing) with a warning, not a crash
    after the budget was spent.
    """
    w = np.asarray(counts_release, dtype=float)
    w = nonnegative_mean(w, std) if std is not None else np.clip(w, 0, None)
    w[w < min_weight] = 0.0
    if w.sum() <= 0:
        warnings.warn(
            'Every released class proportion came out ~0 (the noise swamps the counts of this '
            'table at this epsilon), so the classes are sampled uniformly. Use a larger epsilon '
            'or a larger table for class shares that follow the data.', UserWarning, stacklevel=2)
        return np.full(w.shape, 1.0 / w.size)
    return w / w.sum()


def release_class_proportions(stats, target, ledger, noise_multiplier):
    """The 'class_proportions' release: (noisy proportions (C,), noise std per entry), or
    (None, None) without a target. ``stats``: the ``ClassSums`` of the pass."""
    if target is None:
        return None, None
    released = ledger.mechanism.release(
        stats.proportions(), name='class_proportions',
        description=f"proportions of the {target.width} buckets of '{target.name}'",
        sensitivity=np.sqrt(2) / stats.n, noise_multiplier=noise_multiplier,
    )
    return released.numpy(), float(noise_multiplier) * np.sqrt(2) / stats.n


def class_weights(estimate, std=None):
    """Class-share estimate (C,) -> (sampling weights, divisor of joint embeddings); None: no
    target. The last bucket (out-of-domain) is modelled but never sampled."""
    if estimate is None:
        return np.ones(1), torch.ones(1, 1, dtype=torch.float64)
    weights = np.append(noisy_class_weights(np.asarray(estimate)[:-1], std=std), 0.0)
    divisor = torch.as_tensor(np.where(weights > 0, weights, 1.0))[:, None]
    return weights, divisor


def shared_class_weights(proportions, std, terms, releases):
    """(weights, divisor, estimate std, estimates combined): the class shares from the
    'class_proportions' release combined by inverse variance with the per-class totals that
    the class-conditional ``releases`` (``release_embeddings``) carry
    (``class_shares.combined_shares``), floored as ``noisy_class_weights`` says. All
    post-processing of releases already made."""
    if proportions is None:
        return (*class_weights(None), None, 0)
    estimate, combined_std, count = combined_shares(
        proportions, std, [(t.feature_map, noisy, s, t.pooled)
                           for t, (noisy, s) in zip(terms, releases)])
    return (*class_weights(estimate, combined_std), combined_std, count)


def one_pass(rows, n_classes, terms, verbose):
    """The partial sums of every term over the rows (an array or a row source: a Parquet
    reader, a Dask or Spark DataFrame), merged; no noise yet."""
    return as_rows(rows).accumulate([t.feature_map for t in terms], n_classes, verbose=verbose)


def release_embeddings(stats, terms, sigmas, ledger):
    """One Gaussian release per term of the merged pass ``stats``: [(noisy joint embedding,
    noise std per entry)].

    A pooled term's release is the sum over the classes of its joint embedding, (1/n) sum_i
    phi(x_i): a row's class does not enter, so its sensitivity is the map's sup ||phi(x) -
    phi(x')|| / n, which ``replace_sensitivity`` bounds (the class-sums bound covers the case
    of the same class)."""
    n = stats.n
    out = []
    for term, embedding in zip(terms, stats.means()):
        sensitivity = replace_sensitivity(term.feature_map) / n
        if term.pooled:
            embedding = embedding.sum(0, keepdim=True)
        noisy = ledger.mechanism.release(
            embedding, name=term.group, description=term.feature_map.describe(),
            sensitivity=sensitivity, noise_multiplier=sigmas[term.group],
        )
        out.append((noisy, sigmas[term.group] * sensitivity))
    return out


def term_objectives(terms, releases, divisor):
    """The released embeddings -> objectives: joint -> class-conditional means (divided by the
    class shares, post-processing); a pooled target stays as is."""
    objectives = []
    for term, (noisy, std) in zip(terms, releases):
        objectives.append(Objective(
            term.label, term.feature_map,
            noisy if term.pooled else noisy / divisor,
            weight=term.weight, first_step=term.first_step, last_step=term.last_step,
            period=term.period, phase=term.phase,
            noise_std=torch.full((1,), std, dtype=torch.float64) if term.pooled
            else std / divisor[:, 0],
            pooled=term.pooled,
        ))
    return objectives
