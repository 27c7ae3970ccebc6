"""Calibrate a trained generator's categorical heads to the released pair tables (post-processing).

Matching kernel mean embeddings in L2 fits a wide joint table (detailed x major industry: 1,325
cells, one of hundreds of pairs in one term) only loosely, even against exact releases. After
training, each categorical head (child) takes logit offsets for its own categories and for the
category drawn in up to ``max_parents`` earlier categorical heads (parents). The parents are
chosen on the releases: the largest debiased total variation from independence among pairs whose
association energy is at least their noise energy (``link_structure.pair_scores``), each pair
scored on its least noisy release ('Selected pairs' before 'Pairs'). Tables are pooled over the
classes with the released class weights (a rare class's own tables are mostly noise), so the
offsets are shared by the classes.

Targets, fixed from the first round of generated rows G (expected frequencies, from the
probabilities each category is drawn from) and the release T with cell noise s:

  marginal:  G + soft(T - G, t sd),  sd^2 = s^2 + Var(G)   (moves only beyond the noise);
  pair:      the same, or, where the cells of soft(T, t s) hold at least ``sparse`` of the mass
             (the release resolves the table: a hierarchy), those cells with the generator's
             rows and columns where none stands out; then raked to the parent's and the child's
             marginal targets, so that the cells' noise does not move the margins.

Each round draws rows and, head by head in layout order, runs iterative proportional fitting of
the head's factors on those rows (exact for them: an offset multiplies each row's probabilities
of its categories). Only the releases, their public noise and the generator are read: no private
row, no extra epsilon.
"""

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from sdv_dpkme.engines.link_structure import choose_parents as link_parents
from sdv_dpkme.engines.link_structure import pair_scores
from sdv_dpkme.features import PairwiseKernelMap

#: most one pass of iterative proportional fitting may add to one cell's offset (nats): a cell
#: generated a handful of times against a large released one is moved over several passes
MAX_STEP = 3.0
#: passes of iterative proportional fitting over a head's factors per round of generated rows
INNER_ITERATIONS = 5
#: bound of the fitted offsets (nats), well past what any released table can ask for
MAX_OFFSET = 15.0


def _pair_sources(objectives):
    """(feature map, per-class tables (C, dim), per-class cell noise (C,)) of the fixed pair
    releases, the least noisy first (a selected release covers fewer pairs at less noise)."""
    out = []
    for o in objectives:
        if isinstance(o.feature_map, PairwiseKernelMap) and isinstance(o.target, torch.Tensor) \
                and o.noise_std is not None:
            fmap = o.feature_map
            out.append((fmap, o.target.double(), o.noise_std.double() * fmap.n_pairs ** 0.5))
    return sorted(out, key=lambda s: s[0].n_pairs)


def choose_parents(objectives, class_weights, names, max_parents):
    """{child: parents} over the categorical block names ``names`` (layout order), parents
    before their child, by debiased total variation (``link_structure.choose_parents``). Each
    pair is scored on its least noisy release (``pair_scores``): a pair released again is kept
    where its own, smaller noise lets it stand out."""
    sources = _pair_sources(objectives)
    names = [b.name for b in sources[-1][0].blocks if b.name in set(names)] if sources else []
    order = {name: k for k, name in enumerate(names)}
    scored, frames = set(), []
    for fmap, target, noise in sources:
        pairs = [tuple(sorted(p, key=order.get)) for p in fmap.pair_names()
                 if set(p) <= set(names) and frozenset(p) not in scored]
        scored |= {frozenset(p) for p in pairs}
        if pairs:
            frames.append(pair_scores(fmap, target, noise, class_weights, names, pairs))
    if not frames:
        return {}
    return link_parents(pd.concat(frames, ignore_index=True), names, max_parents, by='tv')


def released_table(sources, parent, child):
    """(C, w_parent, w_child) tables and (C,) cell noise of the least noisy release of a pair."""
    for fmap, target, noise in sources:
        if frozenset((parent, child)) in {frozenset(p) for p in fmap.pair_names()}:
            return fmap.joint_tables(target, [(parent, child)])[parent, child], noise
    raise KeyError(f'no release holds the pair {parent} x {child}')


def released_marginals(sources, names):
    """{name: ((C, w) frequencies, (C, 1) noise std)} of the categorical columns ``names``: the
    inverse-variance mean of the row sums of every released pair table holding the column (each
    pair from its least noisy release; a row sum of w_partner cells has w_partner x their
    noise variance)."""
    names, done, parts = set(names), set(), {}
    for fmap, target, noise in sources:
        pairs = [p for p in fmap.pair_names()
                 if set(p) <= names and frozenset(p) not in done]
        done |= {frozenset(p) for p in pairs}
        for (a, b), t in fmap.joint_tables(target, pairs).items():
            for name, sums, width in ((a, t.sum(2), t.shape[2]), (b, t.sum(1), t.shape[1])):
                var = (noise ** 2 * width).clamp(min=1e-30)[:, None]
                parts.setdefault(name, []).append((sums, var))
    out = {}
    for name, estimates in parts.items():
        precision = sum(1 / var for _, var in estimates)
        out[name] = (sum(m / var for m, var in estimates) / precision, precision ** -0.5)
    return out


def _moved(target, generated, noise, variance, threshold):
    """``generated`` frequencies moved toward the release ``target`` only where they differ by
    more than ``threshold`` stds of the release noise and of the generated mean (``variance``),
    soft-thresholded (what is added is never the noise); at least 0."""
    sd = (noise ** 2 + variance) ** 0.5
    gap = target - generated
    return (generated + gap.sign() * (gap.abs() - threshold * sd).clamp(min=0)).clamp(min=0)


def _rake(table, row_sums, column_sums, iterations=20):
    """``table`` (>= 0) rescaled by rows and columns toward the given sums (iterative
    proportional fitting; rows or columns without mass are left as they are)."""
    for _ in range(iterations):
        table = table * _ratio(row_sums, table.sum(1))[:, None]
        table = table * _ratio(column_sums, table.sum(0))[None, :]
    return table


def _ratio(wanted, have):
    return torch.where(have > 0, wanted / have.clamp(min=1e-30), torch.ones_like(have))


def _target(table, generated, noise, variance, threshold, sparse, parent_marginal,
            child_marginal):
    """A head's fixed target: the generated frequencies moved toward the release beyond its
    noise. A pair's table whose cells standing out of the noise from 0 hold at least ``sparse``
    of the mass (the release resolves it: a hierarchy) starts from those cells instead, with the
    generator's rows and columns where none stands out; either is raked to the parent's and the
    child's targets, so that the cells' noise does not move the margins."""
    moved = _moved(table, torch.zeros_like(generated), noise, 0.0, threshold)
    if sparse is None or float(moved.sum()) < sparse:
        moved = _moved(table, generated, noise, variance, threshold)
    else:
        empty = moved.sum(1) <= 0
        moved[empty] = generated[empty]
        empty = moved.sum(0) <= 0
        moved[:, empty] = generated[:, empty]
    rows = generated.sum(1) if parent_marginal is None else \
        torch.cat([parent_marginal, generated.new_zeros(len(generated) - len(parent_marginal))])
    return _rake(moved, _normalised(rows), _normalised(child_marginal))


def _normalised(frequencies):
    return frequencies / frequencies.sum().clamp(min=1e-30)


def _log_step(moved, generated, floor):
    step = torch.log((moved + floor) / (generated + floor))
    return step.clamp(-MAX_STEP, MAX_STEP)


def _frequencies(probs, parent=None):
    """Expected frequencies of a head's public categories in generated rows, from the
    probabilities each row's category is drawn from (less sampling error than the draws),
    overall or by the category drawn in an earlier head (``parent``: (index per row, number of
    buckets)); and the variance of that mean over rows."""
    n = len(probs)
    if parent is None:
        mean = probs.mean(0)
        return mean, ((probs ** 2).mean(0) - mean ** 2) / n
    index, width = parent
    mean = probs.new_zeros(width, probs.shape[1]).index_add_(0, index, probs) / n
    square = probs.new_zeros(width, probs.shape[1]).index_add_(0, index, probs ** 2) / n
    return mean, (square - mean ** 2).clamp(min=0) / n


def calibrate(generator, objectives, class_weights, rng, max_parents=2, rounds=4, rows=50000,
              threshold=2.0, verbose=False, sparse=0.9):
    """Fit ``generator.calibration`` ({child head index: [(parent head index, or None for the
    child's marginal, offsets ([w_parent,] w_child))]}) to the released pair tables pooled over
    the classes by their released weights (a rare class's own tables are mostly noise; the
    offsets are shared by the classes); returns the (parent, child) names of the calibrated
    pairs."""
    heads = [b for b in generator.blocks if b.kind == 'categorical']
    index = {b.name: j for j, b in enumerate(heads)}
    weights = np.asarray(class_weights, dtype=float)
    generator.calibration = {}
    sources = _pair_sources(objectives)
    if not sources or max_parents < 1:
        return []
    w = torch.as_tensor(weights / weights.sum(), dtype=torch.float64)

    def pooled(table, noise):  # (C, ...) tables, (C,) noise -> one table, its cell noise
        table = torch.tensordot(w, table.double(), 1).float()[..., :-1]  # no out-of-domain:
        # the child's last bucket is never drawn, only noise is released there
        return table, float((w ** 2 * noise.double().reshape(len(w), -1)[:, 0] ** 2).sum()) ** 0.5

    drawable = {name for name, j in index.items() if len(heads[j].columns) > 1}
    plan = [(index[name], None, *pooled(table, noise))  # marginals first
            for name, (table, noise) in released_marginals(sources, drawable).items()]
    for child, ps in choose_parents(objectives, weights, sorted(drawable), max_parents).items():
        plan += [(index[child], index[p], *pooled(*released_table(sources, p, child)))
                 for p in ps]

    if not plan:  # no categorical pair released
        return []
    offsets = {}
    for j, i, table, _ in plan:
        offsets[j, i] = torch.zeros(*table.shape[:-1], table.shape[-1] + 1)
        generator.calibration.setdefault(j, []).append((i, offsets[j, i]))
    counts = np.round(weights / weights.sum() * rows).astype(int)
    labels = torch.as_tensor(np.repeat(np.arange(len(weights)), counts))
    by_head = {}  # each head's factors, its marginal first
    for entry in plan:
        by_head.setdefault(entry[0], []).append(entry)
    targets = {}  # fixed in the first round: the trained generator's tables, moved
    for _ in tqdm(range(rounds), desc='Calibrating categorical heads', disable=not verbose,
                  leave=False):
        probs = dict.fromkeys(by_head)  # only the calibrated heads: a wide one left out of
        # the pair tables would hold rows x its categories
        drawn = torch.from_numpy(generator.sample(labels, rng, probs))
        floor = 1.0 / len(drawn)
        for j in sorted(by_head):  # layout order: a parent's targets come before its child's
            p = probs[j].double()
            seen = {i: (drawn[:, list(heads[i].columns)].argmax(1), len(heads[i].columns))
                    for _, i, _, _ in by_head[j] if i is not None}
            for _, i, table, noise in by_head[j]:
                if (j, i) not in targets:
                    generated, variance = _frequencies(p, seen.get(i))
                    targets[j, i] = _moved(table, generated, noise, variance, threshold) \
                        if i is None else _target(table, generated, noise, variance, threshold,
                                                  sparse, targets.get((i, None)), targets[j, None])
            # iterative proportional fitting of this head's factors, exact for the rows drawn:
            # an offset multiplies each row's probabilities of its categories
            for _ in range(INNER_ITERATIONS):
                for _, i, _, _ in by_head[j]:
                    generated, _ = _frequencies(p, seen.get(i))
                    step = _log_step(targets[j, i], generated, floor).double()
                    held = offsets[j, i][..., :-1]
                    moved = (held + step).clamp(-MAX_OFFSET, MAX_OFFSET)
                    step = moved - held
                    offsets[j, i][..., :-1] = moved.float()
                    p = p * torch.exp(step if i is None else step[seen[i][0]])
                    p = p / p.sum(1, keepdim=True)
    return [(heads[i].name, heads[j].name) for j, i, _, _ in plan if i is not None]
