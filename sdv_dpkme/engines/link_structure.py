"""Which categorical heads to link, read from the released pair tables (post-processing).

A linked head fits the released joint table of its pair cell by cell, noise included; an unlinked
one can only blur it. Per candidate pair (a, b), from T = sum_c w_c T_c, the released class-
conditional joint tables T_c pooled with the released class weights w_c (cells = w_a x w_b,
each with noise variance s^2 = sum_c w_c^2 s_c^2, public), its marginals r, q:

  signal = ||T - r q^T||^2 - cells s^2 (1 + |r|^2 + |q|^2)   (association energy, debiased)
  noise  = cells s^2                                        (what fitting every cell adds)
  tv     = (|T - r q^T|_1 - cells s sqrt(2 / pi)) / 2        (distance from independence in
                                                             total variation, debiased)

(the marginals' own noise adds about cells s^2 (|r|^2 + |q|^2) to the first term). The tables
are pooled over classes because a rare class's table is mostly noise. Each head links to at
most ``max_parents`` earlier heads (layout order: the order they are drawn in), the ones with the
largest signal among those whose signal is at least ``min_ratio`` x their noise. Nothing here
reads a private row: only the releases, their public noise and the layout.

The same scores pick the pairs of a second, selected release (``select_pairs``): the ``count``
pairs with the largest association energy or ``tv``, whose tables are then released again with
their own share of the budget (as AIM and MST measure a few chosen marginals rather than every
one). The energy is ruled by a few large cells (a shared 'not in universe' category); ``tv``, the
L1 error MST's selection uses and SDMetrics' contingency score measures, also sees a hierarchy
spread over many small cells (detailed x major industry).
"""

import numpy as np
import pandas as pd
import torch

#: a pair is linked only where its association energy is at least this multiple of the noise
#: energy its cells add
MIN_SIGNAL_RATIO = 1.0


def pair_scores(pair_map, target, cell_noise, class_weights, names, pairs=None):
    """DataFrame (child, parent, signal, noise, tv) over every pair of ``names`` (the candidate
    categorical blocks, layout order), parent before child, or over the (parent, child)
    ``pairs`` given. ``target`` (C, dim): the released 'pairs' means per class; ``cell_noise``
    (C,): one cell's noise std per class; ``class_weights`` (C,): released (0 for classes not
    trained)."""
    weights = np.asarray(class_weights, dtype=float)
    w = torch.as_tensor(weights / weights.sum(), dtype=torch.float64)
    s2 = float((w ** 2 * cell_noise.double() ** 2).sum())
    pooled = (w @ target.double())[None]
    if pairs is None:
        pairs = [(parent, child) for j, child in enumerate(names) for parent in names[:j]]
    rows = []
    for (parent, child), tables in pair_map.joint_tables(pooled, pairs).items():
        table = tables[0]
        r, q = table.sum(1).clamp(min=0), table.sum(0).clamp(min=0)
        noise = table.numel() * s2
        gap = table - r[:, None] * q[None, :]
        energy = float((gap ** 2).sum())
        signal = energy - noise * (1 + float(r @ r) + float(q @ q))
        tv = (float(gap.abs().sum()) - table.numel() * (s2 * 2 / np.pi) ** 0.5) / 2
        rows.append((child, parent, signal, noise, tv))
    return pd.DataFrame(rows, columns=['child', 'parent', 'signal', 'noise', 'tv'])


def choose_parents(scores, names, max_parents, min_ratio=MIN_SIGNAL_RATIO, by='signal'):
    """{child: parents} from ``pair_scores``: up to ``max_parents`` earlier heads each, the
    largest ``by`` ('signal' or 'tv', > 0) among those with signal >= min_ratio x noise (and
    > 0); children without any are left out."""
    keep = scores[(scores.signal > 0) & (scores.signal >= min_ratio * scores.noise)
                  & (scores[by] > 0)]
    parents = {}
    for child in names:
        best = keep[keep.child == child].nlargest(max_parents, by)
        if len(best):
            parents[child] = tuple(p for p in names if p in set(best.parent))
    return parents


def select_pairs(scores, count, spanning=False, by='signal'):
    """``count`` (parent, child) pairs of ``pair_scores``, largest ``by`` ('signal' or 'tv')
    first (ties: layout order). ``spanning``: first a maximum spanning forest over those scores
    (Kruskal: the strongest pair that joins two groups of columns not yet joined, as MST
    measures its 2-way marginals), then the strongest pairs left."""
    ranked = scores.sort_values(by, ascending=False, kind='stable')
    ranked = list(zip(ranked.parent, ranked.child))
    if not spanning:
        return ranked[:count]
    group = {}

    def root(name):
        while group.get(name, name) != name:
            name = group[name]
        return name

    tree = []
    for parent, child in ranked:
        a, b = root(parent), root(child)
        if a != b and len(tree) < count:
            group[a] = b
            tree.append((parent, child))
    return tree + [p for p in ranked if p not in set(tree)][:count - len(tree)]
