"""Calibrate a trained generator's categorical heads to the released tables (post-processing).

Matching kernel mean embeddings in L2 fits a wide joint table (detailed x major industry: 1,325
cells, one of hundreds of pairs in one term) only loosely, even against exact releases. After
training, each categorical head (child) takes logit offsets for its own categories, for the
category drawn in up to ``max_parents`` earlier categorical heads (parents), and for the group
of consecutive values drawn in one earlier ``ordered`` head (a discrete number's one-hot column
seen through ``groups`` bins of its values: its cells are too small to stand out of the noise one
by one, its bins are not). The parents are chosen on the releases: the largest debiased total
variation from independence among pairs whose association energy is at least their noise energy
(``link_structure.pair_scores``), each pair scored on its least noisy release ('Selected pairs'
before 'Pairs'); the grouped parent by its association energy over its noise energy. Tables are
pooled over the classes with the released class weights (a rare class's own tables are mostly
noise), so the offsets are shared by the classes.

Targets, fixed from the first round of generated rows G (expected frequencies, from the
probabilities each category is drawn from) and the release T with cell noise s:

  marginal:  G + soft(T - G, t sd),  sd^2 = s^2 + Var(G), normalised; T is the inverse-variance
             mean of the column's sum-kernel release and of the row sums of its pair tables;
  pair:      the same, or, where the cells of soft(T, t s) hold at least ``sparse`` of the mass
             (the release resolves the table: a hierarchy), those cells with the generator's
             rows and columns where none stands out; then raked to the parent's and the child's
             marginal targets, so that the cells' noise does not move the margins.

Each round draws rows and, head by head in layout order, runs iterative proportional fitting of
the head's factors on those rows (an offset multiplies each row's probabilities of its
categories), the marginal last. A last pass draws rows in layout order and, before each head is
drawn, fits its marginal offsets by Newton steps to the rows as drawn: fitted on a round's rows,
a marginal drifts as its parents' offsets move after it. ``calibrate_values`` maps each
numeric column's generated values to its Fourier-marginal release (a monotone quantile map).
Only the releases, their public noise, the public layout and the generator are read: no private
row, no extra epsilon.
"""

import math

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from sdv_dpkme.engines.generator import CategoryGroups
from sdv_dpkme.engines.link_structure import choose_parents as link_parents
from sdv_dpkme.engines.link_structure import pair_scores
from sdv_dpkme.features import OneWayMap, PairwiseKernelMap, SumKernelMap
from sdv_dpkme.features.marginal import FourierMarginalMap

#: most one pass of iterative proportional fitting may add to one cell's offset (nats): a cell
#: generated a handful of times against a large released one is moved over several passes
MAX_STEP = 3.0
#: passes of iterative proportional fitting over a head's factors per round of generated rows
INNER_ITERATIONS = 5
#: bound of the fitted offsets (nats), well past what any released table can ask for
MAX_OFFSET = 15.0
#: bins of an ordered head's values when it is a grouped parent (SDMetrics, for one, bins a
#: numerical column into 10 for its pair trends)
GROUPS = 10
#: generated rows per round: as many as the table has, within these bounds (``generated_rows``);
#: their frequencies are expected values (from the draw probabilities), yet the parents' draws
#: are sampled, so fewer rows make the fitted offsets noisier. The floor keeps the cells of a
#: rare parent category in a rare class resolved; the cap bounds the cost of large tables
ROWS = (5000, 50000)
#: a marginal within this total variation of its target takes no Newton step
NEWTON_TOLERANCE = 1e-4
#: rows the Newton step's curvature is estimated from (k x k from k x rows: the cost)
HESSIAN_ROWS = 5000
#: knots of a numeric column's value map on [0, 1]
VALUE_GRID = 2001


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


def _sum_kernel_marginals(objectives, names):
    """[(name, (C, w) frequencies, (C, 1) noise variance)] of the categorical blocks ``names`` in
    the sum-kernel releases: a block is its one-hot mean divided by sqrt(number of blocks)."""
    out = []
    for o in objectives:
        fmap = o.feature_map
        if not (isinstance(fmap, SumKernelMap) and isinstance(o.target, torch.Tensor)
                and o.noise_std is not None):
            continue
        scale, start = len(fmap.blocks) ** 0.5, 0
        for block in fmap.blocks:
            width = fmap._block_dim(block)
            if block.kind == 'categorical' and block.name in names:
                out.append((block.name, o.target[:, start:start + width].double() * scale,
                            (o.noise_std.double() * scale) ** 2))
            start += width
    return out


def released_marginals(sources, names, objectives=()):
    """{name: ((C, w) frequencies, (C, 1) noise std)} of the categorical columns ``names``: the
    inverse-variance mean of the column's sum-kernel release (in ``objectives``) and of the row
    sums of every released pair table holding it (each pair from its least noisy release; a row
    sum of w_partner cells has w_partner x their noise variance)."""
    names, done, parts = set(names), set(), {}
    for name, frequencies, var in _sum_kernel_marginals(objectives, names):
        parts.setdefault(name, []).append((frequencies, var.clamp(min=1e-30)[:, None]))
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


def one_way_marginals(objectives, names):
    """{name: ((w - 1,) frequencies without the out-of-domain bucket, cell noise std)} of the
    categorical columns ``names`` in a pooled 'one_way' release: already pooled over the
    classes, with the noise of one release."""
    out = {}
    for o in objectives:
        fmap = o.feature_map
        if not (isinstance(fmap, OneWayMap) and o.pooled and isinstance(o.target, torch.Tensor)
                and o.noise_std is not None):
            continue
        scale, start = fmap.n_columns ** 0.5, 0
        for block in fmap.categorical:
            if block.name in names:
                table = o.target[0, start:start + block.width].double() * scale
                out[block.name] = (table[:-1].float(), float(o.noise_std[0]) * scale)
            start += block.width
    return out


def with_one_way(marginals, one_way):
    """The pooled marginals (table, cell noise) combined with the 'one_way' ones by inverse
    variance; a column only in one of them keeps that one."""
    out = dict(marginals)
    for name, (table, noise) in one_way.items():
        if name not in out:
            out[name] = (table, noise)
            continue
        other, other_noise = out[name]
        a, b = 1 / max(other_noise, 1e-30) ** 2, 1 / max(noise, 1e-30) ** 2
        a, b = a / (a + b), b / (a + b)  # weights, not precisions: no overflow at noise 0
        out[name] = ((a * other.double() + b * table.double()).float(),
                     1 / (1 / max(other_noise, 1e-30) ** 2 + 1 / max(noise, 1e-30) ** 2) ** 0.5)
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


def _newton_step(probs, target):
    """Logit step toward the marginal ``target`` for rows' probabilities ``probs`` (categories,
    rows): a Newton step on the convex dual D(s) = mean_r log sum_k p_rk e^s_k - target . s,
    whose gradient is the generated marginal minus the target, halved until D decreases. Where
    earlier heads' offsets made rows nearly certain, a multiplicative step moves them little."""
    probs = np.asarray(probs, dtype=np.float64)
    generated = probs.mean(1)
    if np.abs(target - generated).sum() < NEWTON_TOLERANCE:
        return np.zeros_like(generated)
    some = probs[:, ::max(1, probs.shape[1] // HESSIAN_ROWS)]  # the curvature from fewer rows:
    # the step is only a direction, the line search below uses them all
    hessian = np.diag(some.mean(1)) - some @ some.T / some.shape[1]
    ridge = 1e-9 + 1e-6 * np.trace(hessian) / len(hessian)
    step = np.linalg.solve(hessian + ridge * np.eye(len(hessian)), target - generated)
    step = (step - step.mean()).clip(-MAX_STEP, MAX_STEP)

    def dual(s):  # D(s) - D(0)
        top = s.max()
        return float(np.mean(np.log(np.exp(s - top) @ probs)) + top - target @ s)

    for _ in range(30):
        if dual(step) < 0:
            return step
        step = step / 2
    return np.zeros_like(step)


def _log_step(moved, generated, floor):
    step = torch.log((moved + floor) / (generated + floor))
    return step.clamp(-MAX_STEP, MAX_STEP)


def generated_rows(n):
    """Rows generated per calibration round for a table of ``n`` rows (public): n within
    ``ROWS``, so a small table's fit stays fast and a large one's offsets less noisy. The
    Monte Carlo error of a generated frequency falls as 1 / sqrt(rows), the noise of a released
    cell as 1 / n: with as many rows as the table, the first stays a smaller share of the second
    the smaller the table (more rows than that would resolve what the release cannot)."""
    return int(min(max(n, ROWS[0]), ROWS[1]))


def _frequencies(probs, parent=None, variance=True):
    """Expected frequencies of a head's public categories in generated rows, from the
    probabilities each row's category is drawn from (less sampling error than the draws),
    overall or by the category drawn in an earlier head (``parent``: (index per row, number of
    buckets)); and the variance of that mean over rows (None unless ``variance``)."""
    n = len(probs)
    if parent is None:
        mean = probs.mean(0)
        return mean, ((probs ** 2).mean(0) - mean ** 2) / n if variance else None
    index, width = parent
    mean = probs.new_zeros(width, probs.shape[1]).index_add_(0, index, probs) / n
    if not variance:
        return mean, None
    square = probs.new_zeros(width, probs.shape[1]).index_add_(0, index, probs ** 2) / n
    return mean, (square - mean ** 2).clamp(min=0) / n


def value_groups(width, groups):
    """Group of each of a head's ``width`` buckets: its public categories (all but the last)
    cut into ``groups`` runs of consecutive categories of near-equal length; the out-of-domain
    bucket joins the last group (it is never drawn)."""
    inside = width - 1
    return tuple(int(min(k * groups // inside, groups - 1)) for k in range(inside)) + (groups - 1,)


def grouped_parents(sources, heads, children, w, ordered, groups):
    """{child: (CategoryGroups, pooled (groups, w_child) table, cell noise)}: per categorical
    child, the earlier ``ordered`` head (more than ``groups`` categories) whose grouped table's
    association energy beyond independence is the largest multiple of its noise energy, if at
    least 1. A grouped cell sums its categories' cells: its noise grows as the square root of
    their number, its signal as the number."""
    index = {b.name: j for j, b in enumerate(heads)}
    wide = {b.name for b in heads if b.name in ordered and len(b.columns) - 1 > groups}
    best, done = {}, set()
    for fmap, target, noise in sources:
        pairs = [tuple(sorted(p, key=index.get)) for p in fmap.pair_names()
                 if set(p) <= set(index) and frozenset(p) not in done]
        pairs = [(a, b) for a, b in pairs if a in wide and b in children]
        done |= {frozenset(p) for p in pairs}
        cell2 = float((w ** 2 * noise.double() ** 2).sum())
        for (parent, child), table in (fmap.joint_tables(target, pairs) if pairs else {}).items():
            assign = value_groups(len(heads[index[parent]].columns), groups)
            member = torch.zeros(len(assign) - 1, groups, dtype=torch.float64)
            member[torch.arange(len(assign) - 1), torch.as_tensor(assign[:-1])] = 1.0
            grouped = member.T @ torch.tensordot(w, table.double(), 1)[:-1, :-1]  # public cells
            r, q = grouped.sum(1).clamp(min=0), grouped.sum(0).clamp(min=0)
            noise_energy = len(member) * grouped.shape[1] * cell2
            energy = float(((grouped - r[:, None] * q[None, :]) ** 2).sum())
            ratio = (energy - noise_energy) / max(noise_energy, 1e-300)  # exact releases: energy
            if energy > 0 and ratio >= 1 and ratio > best.get(child, (0,))[0]:
                size = float(member.sum(0).max())
                best[child] = (ratio, CategoryGroups(index[parent], assign), grouped.float(),
                               (size * cell2) ** 0.5)
    return {child: entry[1:] for child, entry in best.items()}


def calibrate(generator, objectives, class_weights, rng, max_parents=2, rounds=4, rows=ROWS[1],
              threshold=1.0, verbose=False, sparse=0.9, ordered=(), groups=GROUPS):
    """Fit ``generator.calibration`` ({child head index: [(parent, offsets ([w_parent,]
    w_child))]}, parent: a head index, a ``CategoryGroups`` of an ``ordered`` head, or None for
    the child's marginal) to the released tables pooled over the classes by their released
    weights (a rare class's own tables are mostly noise; the offsets are shared by the classes);
    returns the (parent, child) names of the calibrated pairs."""
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
    marginals = {name: pooled(*m) for name, m in
                 released_marginals(sources, drawable, objectives).items()}
    marginals = with_one_way(marginals, one_way_marginals(objectives, drawable))
    plan = [(index[name], None, *m) for name, m in marginals.items()]  # marginals first
    chosen = choose_parents(objectives, weights, sorted(drawable), max_parents)
    for child, ps in chosen.items():
        plan += [(index[child], index[p], *pooled(*released_table(sources, p, child)))
                 for p in ps]
    for child, (parent, table, cell) in grouped_parents(sources, heads, set(marginals), w,
                                                         set(ordered), groups).items():
        if heads[parent.head].name not in chosen.get(child, ()):
            plan.append((index[child], parent, table, cell))

    if not plan:  # no categorical pair released
        return []
    offsets = {}
    for j, i, table, _ in plan:
        offsets[j, i] = torch.zeros(*table.shape[:-1], table.shape[-1] + 1)
        generator.calibration.setdefault(j, []).append((i, offsets[j, i]))
    counts = np.round(weights / weights.sum() * rows).astype(int)
    labels = torch.as_tensor(np.repeat(np.arange(len(weights)), counts))
    by_head = {}  # each head's factors: its marginal first (the pairs' targets are raked to it)
    for entry in plan:
        by_head.setdefault(entry[0], []).append(entry)
    targets = {}  # fixed in the first round: the trained generator's tables, moved
    floor = 1.0 / len(labels)
    for _ in tqdm(range(rounds), desc='Calibrating categorical heads', disable=not verbose,
                  leave=False):
        probs = dict.fromkeys(by_head)  # only the calibrated heads: a wide one left out of
        # the pair tables would hold rows x its categories
        drawn = torch.from_numpy(generator.sample(labels, rng, probs))
        for j in sorted(by_head):  # layout order: a parent's targets come before its child's
            p = probs[j].double()
            seen = {i: _parent_index(i, drawn, heads) for _, i, _, _ in by_head[j]
                    if i is not None}
            for _, i, table, noise in by_head[j]:
                if (j, i) in targets:
                    continue
                generated, variance = _frequencies(p, seen.get(i))
                if i is None:
                    targets[j, i] = _normalised(_moved(table, generated, noise, variance,
                                                       threshold))
                    continue
                parent = targets.get((i, None))
                if isinstance(i, CategoryGroups):  # the grouped parent's marginal target
                    parent = targets.get((i.head, None))
                    if parent is not None:
                        parent = torch.zeros(i.groups[-1] + 1, dtype=parent.dtype).index_add_(
                            0, torch.as_tensor(i.groups[:-1]), parent)
                targets[j, i] = _target(table, generated, noise, variance, threshold, sparse,
                                        parent, targets[j, None])
            # iterative proportional fitting of this head's factors on the rows drawn, the
            # marginal last: an offset multiplies each row's probabilities of its categories
            for _ in range(INNER_ITERATIONS):
                for _, i, _, _ in by_head[j][1:] + by_head[j][:1]:
                    generated, _ = _frequencies(p, seen.get(i), variance=False)
                    step = _log_step(targets[j, i], generated, floor).double()
                    step = _add(offsets[j, i], step)
                    p = p * torch.exp(step if i is None else step[seen[i][0]])
                    p = p / p.sum(1, keepdim=True)

    def marginal_fit(j):  # the last pass: called before head j is drawn, on its probabilities
        target = targets[j, None].double().numpy()
        return lambda probs: _add(offsets[j, None], torch.from_numpy(
            _newton_step(probs, target))).numpy()

    generator.sample(labels, rng, adjust={j: marginal_fit(j) for j in by_head})
    return [(heads[i.head if isinstance(i, CategoryGroups) else i].name, heads[j].name)
            for j, i, _, _ in plan if i is not None]


def _add(offsets, step):
    """Add ``step`` to ``offsets``' public categories (in place, within +-MAX_OFFSET); returns
    the step taken."""
    held = offsets[..., :-1].double()
    moved = (held + step).clamp(-MAX_OFFSET, MAX_OFFSET)
    offsets[..., :-1] = moved.float()
    return moved - held


def _parent_index(parent, drawn, heads):
    """(bucket of each drawn row in the parent, number of buckets): the category drawn in a
    parent head, or its group for a ``CategoryGroups``."""
    if isinstance(parent, CategoryGroups):
        category = drawn[:, list(heads[parent.head].columns)].argmax(1)
        return torch.as_tensor(parent.groups)[category], parent.groups[-1] + 1
    return drawn[:, list(heads[parent].columns)].argmax(1), len(heads[parent].columns)


def calibrate_values(generator, objectives, class_weights, rng, rows=ROWS[1], threshold=3.0):
    """Fit ``generator.value_maps`` ({encoded column: (grid, mapped)}, monotone maps of [0, 1]
    applied to a numeric column's generated values) so that each numeric column's distribution
    (of its present values, where it is nullable) moves to its Fourier-marginal release where
    that differs from the generated one beyond the noise; returns the names of the mapped
    columns.

    On [0, 1] a distribution's CDF is F(x) = x + 2 sum_k E[cos(pi k V)] sin(pi k x) / (pi k), and
    the release holds sqrt(a_k) E[cos(pi k V)] per frequency (``FourierSeries``); a nullable
    column's holds sqrt(a_k) E[(1 - Z) cos(pi k V)] / sqrt(2), i.e. its present values' mean
    scaled by P(present) / sqrt(2), with P(present) read from the release's missingness
    coordinates: the generated present values are compared at that share (the map only moves
    values; which rows are missing stays the generator's). The
    generated rows' own coefficients are exact, so F_target = F_generated + 2 sum_k d_k
    sin(pi k x) / (pi k), with d_k the coefficient gap soft-thresholded at ``threshold`` noise
    stds, over that scale (at 3 stds, noise passes in 0.3% of the frequencies: divided by the
    small sqrt(a_k) of high frequencies, more of it would ripple the CDF) and Lanczos factors (a
    truncated series of a spike, such as a money column's zeros, overshoots otherwise); the map
    is the quantile map F_target^-1(F_generated(v)), which keeps every row's rank."""
    generator.value_maps = {}
    sources = [o for o in objectives if isinstance(o.feature_map, FourierMarginalMap)
               and isinstance(o.target, torch.Tensor) and o.noise_std is not None]
    if not sources:
        return []
    weights = np.asarray(class_weights, dtype=float)
    w = weights / weights.sum()
    labels = torch.as_tensor(np.repeat(np.arange(len(w)), np.round(w * rows).astype(int)))
    drawn = generator.sample(labels, rng)
    grid = np.linspace(0.0, 1.0, VALUE_GRID)
    maps, names = {}, []
    for o in sources:
        fmap = o.feature_map
        series, scale = fmap._series, len(fmap.blocks) ** 0.5
        k = np.arange(1, series.n_frequencies + 1)
        amp = series._amp.numpy()
        trained = w > 0  # a class without rows has no release to pool
        released = w[trained] @ o.target.double().numpy()[trained] * scale
        noise = float(np.sqrt((w[trained] ** 2
                               * o.noise_std.double().numpy()[trained] ** 2).sum())) * scale
        lanczos = np.sinc(k / (len(k) + 1))[:, None]  # damps the truncated series' ringing
        sines = lanczos * np.sin(np.pi * np.outer(k, grid)) / (np.pi * k[:, None])
        start = 0
        for block in fmap.blocks:
            width = series.width(block)
            mapped = _value_map(drawn, block, released[start:start + width], noise, k, amp,
                                sines, grid, threshold)
            if mapped is not None:
                maps[block.columns[0]] = (grid, mapped)
                names.append(block.name)
            start += width
    generator.value_maps = maps
    return names


def _value_map(drawn, block, released, noise, k, amp, sines, grid, threshold):
    """The quantile map of one numeric block's generated values to its release (the block's
    slice ``released``), or None where no gap passes the threshold."""
    values = drawn[:, block.columns[0]].astype(np.float64)
    scale, present, share = amp, np.ones(len(values), dtype=bool), 1.0
    if block.nullable:  # features [(1 - z) psi(v), z, 1 - z] / sqrt(2); z is drawn 0 / 1
        scale = amp / math.sqrt(2)
        present = drawn[:, block.columns[1]] < 0.5
        if not present.any():
            return None
        # the release's present share, from its z and 1 - z coordinates (the null share is
        # the generator's to match; the map compares present values at the release's share)
        nulls, kept = released[2 * len(k):2 * len(k) + 2] * math.sqrt(2)
        share = float(np.clip((1.0 + kept - nulls) / 2, 0.01, 1.0))
    features = np.cos(np.pi * np.outer(values[present], k)) * scale * share
    sd = np.sqrt(noise ** 2 + features.var(0) / present.sum())
    gap = released[:len(k)] - features.mean(0)
    move = np.sign(gap) * np.clip(np.abs(gap) - threshold * sd, 0, None)
    if not np.any(move != 0):
        return None
    have = np.searchsorted(np.sort(values[present]), grid, side='right') / present.sum()
    want = np.maximum.accumulate(np.clip(have + 2 * (move / (scale * share)) @ sines, 0, 1))
    want = want + grid * 1e-9  # strictly increasing for the inverse
    return np.interp(have, want, grid)
