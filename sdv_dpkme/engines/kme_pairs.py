"""Categorical pairs of the kernel-mean-embedding engine: the selected pair release and links.

``release_selected_pairs`` chooses a few categorical pairs on the released 'pairs' tables
(post-processing) and releases their tables again from the same pass, with their own share of
the budget. ``pair_cell_noise`` and ``selected_links`` decide, from the releases and their public
noise only, which categorical heads of the generator see earlier draws
(``engines.link_structure``).
"""

from dataclasses import dataclass

import numpy as np
import torch

from sdv_dpkme.engines.generator import Objective
from sdv_dpkme.engines.link_structure import (
    MIN_SIGNAL_RATIO,
    choose_parents,
    pair_scores,
    select_pairs,
)
from sdv_dpkme.features import PairwiseKernelMap, replace_sensitivity

#: linked categorical heads fit the released pair tables cell by cell, noise included: they are
#: used only while one cell's noise std (in probability units, root mean square over the
#: trained classes) is at most this. Above it, on small tables, links fit the noise and lose
#: quality; which pairs to link is then chosen pair by pair (``link_structure``), as linking
#: every narrow pair below this limit still lost quality on wide tables
LINK_NOISE_LIMIT = 0.03


@dataclass
class PairSelection:
    """Release ``count`` categorical pairs chosen on the 'pairs' release again, as group
    'selected_pairs', and match them with ``weight``. The pairs: the largest ``score``
    ('signal': association energy, or 'tv': distance from independence), after a maximum
    spanning forest when ``spanning`` (``link_structure.select_pairs``).
    ``count`` None: one fewer than the categorical columns (a spanning tree's size)."""

    count: int = None
    weight: float = 1.0
    spanning: bool = False
    score: str = 'signal'

    def size(self, n_columns):
        return n_columns - 1 if self.count is None else self.count


def pairs_index(terms):
    """Index of the 'pairs' term (a ``PairwiseKernelMap``), None without one."""
    return next((k for k, t in enumerate(terms) if isinstance(t.feature_map, PairwiseKernelMap)),
                None)


def selectable(terms):
    """Names of the categorical columns of the 'pairs' term (public layout)."""
    k = pairs_index(terms)
    return [] if k is None else [b.name for b in terms[k].feature_map.blocks
                                 if b.kind == 'categorical']


def release_selected_pairs(stats, terms, objectives, weights, divisor, sigmas, selection,
                           ledger):
    """Choose ``selection.count`` categorical pairs on the released 'pairs' tables
    (post-processing), release their block of the same exact pass again (a map over K
    categorical pairs: sensitivity sqrt(2)/n, ``PairwiseKernelMap.replace_bound``), combine each
    table with its 'pairs' copy by inverse variance (post-processing) and add the matching
    objective. Returns the chosen pairs."""
    k = pairs_index(terms)
    fmap, pairs = terms[k].feature_map, objectives[k]
    cell_noise = pairs.noise_std * fmap.n_pairs ** 0.5
    names = selectable(terms)
    scores = pair_scores(fmap, pairs.target, cell_noise, weights, names)
    chosen = select_pairs(scores, selection.size(len(names)), selection.spanning,
                          selection.score)
    sub = fmap.restricted(chosen)
    n, sigma = stats.n, sigmas['selected_pairs']
    bound, sub_bound = replace_sensitivity(fmap), replace_sensitivity(sub)
    noisy = ledger.mechanism.release(
        fmap.restrict_sums(stats.sums[k] / n, sub), name='selected_pairs',
        description=(f'{sub.describe()}: the {len(chosen)} categorical pairs most associated in '
                     "the 'pairs' release, released again"),
        sensitivity=sub_bound / n, noise_multiplier=sigma,
        details={'pairs': [f'{a} x {b}' for a, b in sub.pair_names()]},
    ) / divisor
    # per-cell noise variances of the two copies of a table (same class divisor for both)
    var_pairs = (sigmas[terms[k].group] * bound) ** 2 * fmap.n_pairs
    var_selected = (sigma * sub_bound) ** 2 * sub.n_pairs
    keep = var_selected / (var_pairs + var_selected) if var_pairs + var_selected > 0 else 0.0
    combined = keep * fmap.restrict_sums(pairs.target, sub) + (1 - keep) * noisy
    pairs.target = fmap.replace_pairs(pairs.target, sub, combined)
    objectives.append(Objective(
        'Selected pairs', sub, combined, weight=selection.weight,
        noise_std=(sigma * sub_bound / n) * (1 - keep) ** 0.5 / divisor[:, 0],
    ))
    return sub.pair_names()


def pair_cell_noise(objectives, classes):
    """Std of the release noise in one cell of the 'pairs' tables (a pair's joint class-
    conditional frequencies), root mean square over ``classes``; None without that release.
    Public: from the calibrated sigma, n and the released class weights."""
    for o in objectives:
        if isinstance(o.feature_map, PairwiseKernelMap) and o.noise_std is not None:
            std = o.noise_std[torch.as_tensor(classes)] * o.feature_map.n_pairs ** 0.5
            return float((std ** 2).mean() ** 0.5)
    return None


def selected_links(objectives, weights, names, max_parents, min_ratio=MIN_SIGNAL_RATIO):
    """({child: parents}, scores): each of the candidate heads ``names`` linked to at most
    ``max_parents`` earlier ones, chosen on the released 'pairs' tables (``link_structure``)."""
    pairs = next(o for o in objectives if isinstance(o.feature_map, PairwiseKernelMap))
    fmap = pairs.feature_map
    names = [b.name for b in fmap.blocks if b.name in set(names)]  # in the map: layout order
    cell_noise = pairs.noise_std * fmap.n_pairs ** 0.5
    scores = pair_scores(fmap, pairs.target, cell_noise, weights, names)
    return choose_parents(scores, names, max_parents, min_ratio), scores


def links_to_use(objectives, weights, training):
    """(links, scores, cell noise): ``training.category_links`` apply only where the pair tables
    resolve what they fit (``LINK_NOISE_LIMIT``), restricted to the chosen parents when
    ``training.max_link_parents``."""
    noise = pair_cell_noise(objectives, np.flatnonzero(weights > 0))
    links = training.category_links if noise is not None and noise <= LINK_NOISE_LIMIT else ()
    scores = None
    if links and training.max_link_parents:
        links, scores = selected_links(objectives, weights, links, training.max_link_parents,
                                       training.link_signal_ratio)
    return links, scores, noise
