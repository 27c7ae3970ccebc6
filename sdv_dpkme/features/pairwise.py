"""Pairwise product kernels over every pair of columns (the within-class 2-way structure).

The sum kernels (Hermite sum kernel, DP-MERF's one-hot blocks, the marginal term) match each
column's class-conditional distribution on its own; how columns move together within a class is
left to DP-HP's few random product subsets or to DP-MERF's joint RFF, which covers the numeric
columns only. Classifiers trained on the synthetic table split on exactly these dependencies
(relationship x sex, education x occupation, age x hours, ...).

Per column c a feature vector psi_c with ||psi_c|| <= 1:
  - categorical: its one-hot vector (delta kernel);
  - numeric: the Fourier series of ``FourierSeries`` at length ``length_scale`` (a periodised
    Gaussian kernel without its constant term, so that a pair holds the interaction of the two
    columns and not again their marginals); nullable columns add their missingness as in the
    marginal map.
The map is phi(x) = [psi_i(x) (outer) psi_j(x)]_{(i, j) in S} / sqrt(P) over a set S of P pairs
(default every pair i < j, P = C (C - 1) / 2), the feature map of the kernel
(1/P) sum_{(i,j) in S} k_i(x_i, x'_i) k_j(x_j, x'_j). Since ||psi_i (outer) psi_j|| =
||psi_i|| ||psi_j|| <= 1, ||phi|| <= 1: the joint embedding has at most the 2/n sensitivity of
every other map, and less (``replace_bound``) as one-hot psi are kept non-negative. The private
pass projects each psi_i onto the unit ball (a no-op for valid rows), so the bound holds for any
row and for every subset of pairs: the sums of a map over fewer pairs
are a rescaled sub-block of the all-pairs sums (``restrict_sums``). The class sums are computed
as blocks of the second-moment matrix sum_i y_i psi(x_i) psi(x_i)^T of the concatenated psi,
without materialising phi.

``pair_layout`` chooses, from public widths only, the map that fits the per-class cap: every pair
with the numeric series narrowed (fewer frequencies: the same bound, a coarser kernel), else a
cyclic design of pairs in which every column keeps pairs, and only then fewer columns.
"""

import math
from dataclasses import dataclass

import torch

from sdv_dpkme.features.blocks import project_block
from sdv_dpkme.features.marginal import FourierSeries, default_frequencies


def _widths(blocks, series):
    """Width of each column's psi: its Fourier series, or its one-hot vector."""
    return [series.width(b) if b.kind == 'numeric' else b.width for b in blocks]


def pair_blocks_within(blocks, length_scale, max_features, max_width=None):
    """(kept, left_out): the blocks of a pairwise map with at most ``max_features`` features per
    class, leaving out the widest columns first (a high-cardinality category would otherwise
    make the map quadratic in its width), and any column wider than ``max_width`` features
    (a zip code column's pairs cost width x every other column, per row, at fit and in every
    training step). Widths come from the public domain only."""
    layout = pair_layout(blocks, length_scale, max_features, max_width, narrow=False)
    return list(layout.kept), [b for b, _ in layout.left_out]


@dataclass(frozen=True)
class PairLayout:
    """The public choice of a 'pairs' map: its columns, numeric width and pairs.

    ``n_frequencies`` of ``full_frequencies`` per numeric column (fewer: narrowed to fit),
    ``pairs`` None (every pair of ``kept``) or the chosen name pairs, and ``left_out``: (block,
    reason) for each column with no pair at all.
    """

    kept: tuple
    left_out: tuple
    n_frequencies: int
    full_frequencies: int
    pairs: tuple = None

    @property
    def n_pairs(self):
        c = len(self.kept)
        return c * (c - 1) // 2 if self.pairs is None else len(self.pairs)


#: narrowing stops at this many frequencies per numeric column (cos and sin of pi v, 2 pi v:
#: still a monotone and a U-shaped dependence); beyond, pairs rather than columns are dropped
MIN_PAIR_FREQUENCIES = 2


def pair_layout(blocks, length_scale, max_features, max_width=None, rng=None, narrow=True):
    """The 'pairs' map within ``max_features`` features per class, from public widths only.

    In order: columns wider than ``max_width`` are left out; then (``narrow``) the numeric
    columns' Fourier series is cut to the most frequencies (at least ``MIN_PAIR_FREQUENCIES``)
    at which every pair fits; then a public subset of pairs in which every column keeps pairs
    (a cyclic design over a permutation drawn with ``rng``, the model RNG: pairs (p_i, p_i+s)
    for the shifts s = 1, 2, ... that fit); only if not even one shift fits are the widest
    columns left out (ties in a random order drawn with ``rng``)."""
    full = default_frequencies(length_scale)
    widths = _width_fn(blocks)
    left_out = [(b, f'wider than max_pair_width={max_width:,} features')
                for b in blocks if max_width is not None and widths(b, full) > max_width]
    kept = [b for b in blocks if all(b is not o for o, _ in left_out)]

    def dim(bs, k):
        w = [widths(b, k) for b in bs]
        return (sum(w) ** 2 - sum(v * v for v in w)) // 2

    k = full
    if narrow and any(b.kind == 'numeric' for b in kept):
        floor = min(full, MIN_PAIR_FREQUENCIES)
        while k > floor and dim(kept, k) > max_features:
            k -= 1
    if not narrow or len(kept) < 3 or dim(kept, k) <= max_features:
        return _drop_widest(kept, left_out, k, full, max_features, dim, widths, rng)
    order = list(kept)
    if rng is not None:
        order = [order[i] for i in torch.randperm(len(order), generator=rng).tolist()]
    pairs, used = [], 0
    for shift in range(1, len(order) // 2 + 1):
        step = [(order[i], order[(i + shift) % len(order)]) for i in range(len(order))]
        if 2 * shift == len(order):  # the opposite pairs, each once
            step = step[:shift]
        cost = sum(widths(a, k) * widths(b, k) for a, b in step)
        if used + cost > max_features:
            break
        pairs.extend(step)
        used += cost
    if not pairs:
        return _drop_widest(kept, left_out, k, full, max_features, dim, widths, rng)
    return PairLayout(tuple(kept), tuple(left_out), k, full,
                      tuple((a.name, b.name) for a, b in pairs))


def _width_fn(blocks):
    series = {}

    def width(block, k):
        if block.kind != 'numeric':
            return block.width
        if k not in series:
            series[k] = FourierSeries(1.0, k)
        return series[k].width(block)
    return width


def _drop_widest(kept, left_out, k, full, max_features, dim, widths, rng):
    kept, left_out = list(kept), list(left_out)
    ties = {}
    if rng is not None and len(kept) > 1 and dim(kept, k) > max_features:  # draw only if used
        ties = {b.name: r for b, r in zip(kept, torch.randperm(len(kept), generator=rng).tolist())}
    while len(kept) > 1 and dim(kept, k) > max_features:
        widest = max(kept, key=lambda b: (widths(b, k), ties.get(b.name, 0)))
        kept.remove(widest)
        left_out.append((widest, f'among the widest ({widths(widest, k)} features) while the map '
                                 f'exceeded max_pair_features={max_features:,}'))
    return PairLayout(tuple(kept), tuple(left_out), k, full)


def narrowed_pair_map(fmap, max_dim):
    """The widest narrowing of the map ``fmap`` with at most ``max_dim`` features per class, or
    None when not even its narrowest pair fits (public widths only; the noise-aware plan's).

    First fewer Fourier frequencies per numeric column (the same pairs), down to one (a cos and
    sin of pi v: a monotone, correlation-like dependence); then fewer pairs, those with the most
    cells first (ties: the later pair in layout order), so that the many narrow pairs stay.
    Every narrowing is itself a ``PairwiseKernelMap``: the same bound ||phi|| <= 1 and its own
    ``replace_bound``."""
    blocks, length = fmap.blocks, fmap.length_scale
    pairs = list(fmap.pairs)

    def cells(k):
        widths = _widths(blocks, FourierSeries(length, k))
        return [widths[i] * widths[j] for i, j in pairs]

    k = fmap.n_frequencies
    while k > 1 and fmap._numeric and sum(cells(k)) > max_dim:
        k -= 1
    sizes = cells(k)
    if sum(sizes) > max_dim:
        order = sorted(range(len(pairs)), key=lambda p: (-sizes[p], -p))
        total = sum(sizes)
        gone = set()
        for p in order:
            if total <= max_dim:
                break
            gone.add(p)
            total -= sizes[p]
        pairs = [pair for p, pair in enumerate(pairs) if p not in gone]
    if not pairs:
        return None
    named = [(blocks[i].name, blocks[j].name) for i, j in pairs]
    used = {name for pair in named for name in pair}
    kept = [b for b in blocks if b.name in used]
    every = len(pairs) == len(kept) * (len(kept) - 1) // 2
    return PairwiseKernelMap(kept, length, k, None if every else named)


class PairwiseKernelMap:
    """Mean over column pairs (all, or the names in ``pairs``) of the product of per-column
    kernels; ||phi|| <= 1."""

    norm_bound = 1.0

    def __init__(self, blocks, length_scale=0.1, n_frequencies=None, pairs=None):
        blocks = tuple(blocks)
        if len(blocks) < 2:
            raise ValueError('a pairwise map needs at least two column blocks')
        for b in blocks:
            if b.kind not in ('numeric', 'categorical'):
                raise ValueError(f'unknown block kind {b.kind!r} for column {b.name!r}')
        length = float(length_scale)
        if not (math.isfinite(length) and length > 0):
            raise ValueError(f'length_scale must be a finite number > 0, got {length_scale!r}')
        self.blocks = blocks
        self.length_scale = length
        self.n_frequencies = int(n_frequencies or default_frequencies(length))
        self._series = FourierSeries(length, self.n_frequencies)
        self._numeric = [b for b in blocks if b.kind == 'numeric']
        widths = _widths(blocks, self._series)
        offsets = [0]
        for w in widths[:-1]:
            offsets.append(offsets[-1] + w)
        self._total = sum(widths)
        self._spans = {b.name: (o, w) for b, o, w in zip(blocks, offsets, widths)}
        self.pairs = _pair_indices(blocks, pairs)
        self.n_pairs = len(self.pairs)
        self._every_pair = self.n_pairs == len(blocks) * (len(blocks) - 1) // 2
        # flat positions, in the second-moment matrix, of the i < j blocks (row-major per pair)
        rows, cols = [], []
        for i, j in self.pairs:
            r = torch.arange(offsets[i], offsets[i] + widths[i])
            c = torch.arange(offsets[j], offsets[j] + widths[j])
            rows.append(r.repeat_interleave(widths[j]))
            cols.append(c.repeat(widths[i]))
        self._flat = torch.cat(rows) * self._total + torch.cat(cols)
        self._cast = {}

    @property
    def row_floats(self):
        """Floats per row of the class sums: the concatenated psi (the (W, W) second-moment
        matrix is per chunk, not per row); sets the one pass's chunk size."""
        return self._total

    def pair_names(self):
        """The map's pairs as (first, second) column names, in layout order."""
        return [(self.blocks[i].name, self.blocks[j].name) for i, j in self.pairs]

    def restricted(self, pairs):
        """The map with the same kernels over only the name pairs ``pairs`` (and only the
        columns they involve, in layout order)."""
        named = {name for pair in pairs for name in pair}
        blocks = [b for b in self.blocks if b.name in named]
        if len(blocks) != len(named):
            raise ValueError(f'{sorted(named - {b.name for b in blocks})} are not columns of the map')
        sub = PairwiseKernelMap(blocks, self.length_scale, self.n_frequencies, pairs)
        sub.within = self  # training derives its moments from this map's (``moments_within``)
        return sub

    def restrict_sums(self, sums, sub):
        """``sub``'s class sums or means (C, sub.dim) from this map's (C, dim): the same
        products, each pair's block rescaled from 1/sqrt(P) to 1/sqrt(P_sub). Exact: both
        project each row's psi_i alike, so ``sub``'s bound ||phi|| <= 1 holds for them."""
        index = self._sub_index(sub, sums.device)
        return sums[:, index] * math.sqrt(self.n_pairs) / math.sqrt(sub.n_pairs)

    def _sub_index(self, sub, device):
        """Positions in this map's features of ``sub``'s, in ``sub``'s order (the blocks of
        ``joint_tables``): one gather, whose backward is one scatter, instead of laying the
        sums out as (C, W, W) and slicing a block per pair (a zero (C, W, W) per pair)."""
        key = (tuple(sub.pair_names()), device)
        if key not in self._cast:
            self._check_subset(sub)
            position = torch.full((self._total * self._total,), -1, dtype=torch.long)
            position[self._flat] = torch.arange(self.dim)
            order = {b.name: i for i, b in enumerate(self.blocks)}
            parts = []
            for first, second in sub.pair_names():
                (oa, wa), (ob, wb) = self._spans[first], self._spans[second]
                r = torch.arange(oa, oa + wa).repeat_interleave(wb)  # first's psi, row-major
                c = torch.arange(ob, ob + wb).repeat(wa)
                swap = order[first] > order[second]  # stored as the (second, first) block
                parts.append(c * self._total + r if swap else r * self._total + c)
            self._cast[key] = position[torch.cat(parts)].to(device)
        return self._cast[key]

    def replace_pairs(self, target, sub, values):
        """``target`` (C, dim) with the blocks of ``sub``'s pairs replaced by ``values``
        (C, sub.dim, in ``sub``'s units)."""
        self._check_subset(sub)
        m = self._layout(target)
        at = 0
        for first, second in sub.pair_names():
            (oa, wa), (ob, wb) = self._spans[first], self._spans[second]
            block = values[:, at:at + wa * wb] * math.sqrt(sub.n_pairs)
            m[:, oa:oa + wa, ob:ob + wb] = block.reshape(len(values), wa, wb)
            at += wa * wb
        return m.reshape(len(target), -1)[:, self._index(target.device)] / math.sqrt(self.n_pairs)

    def _check_subset(self, sub):
        same_kernels = (sub.length_scale, sub.n_frequencies) == (self.length_scale,
                                                                  self.n_frequencies)
        if not (same_kernels and all(b in self.blocks for b in sub.blocks)
                and set(sub.pair_names()) <= set(self.pair_names())):
            raise ValueError("the restricted map must hold a subset of this map's pairs")

    def _layout(self, target):
        """(C, W, W): the pair blocks of ``target`` (C, dim) in the second-moment matrix, in
        the units of psi_first (outer) psi_second."""
        m = target.new_zeros(len(target), self._total * self._total)
        m[:, self._index(target.device)] = target * math.sqrt(self.n_pairs)
        return m.reshape(len(target), self._total, self._total)

    @property
    def dim(self):
        return int(self._flat.numel())

    @property
    def coordinate_bound(self):
        """|phi_j| <= 1 / sqrt(P) on valid rows: one entry of a unit-norm outer product over
        sqrt(P)."""
        return 1.0 / math.sqrt(self.n_pairs)

    @property
    def replace_bound(self):
        """sup ||y (x) phi(x) - y' (x) phi(x')|| over two projected rows and classes: the
        replace-one sensitivity of the class sums. Another class: <= sqrt(2). The same class:
        the mean over pairs of ||psi_i psi_j^T - psi_i' psi_j'^T||^2 = |psi_i|^2 |psi_j|^2 +
        |psi_i'|^2 |psi_j'|^2 - 2 (psi_i . psi_i')(psi_j . psi_j'), at most 2 for two categorical
        columns (both inner products >= 0 after ``project_block``) and 4 for a pair with a
        numeric one, hence between sqrt(2) and 2."""
        squares = [2.0 if self.blocks[i].kind == self.blocks[j].kind == 'categorical' else 4.0
                   for i, j in self.pairs]
        return math.sqrt(sum(squares) / len(squares))

    def _parts(self, x):
        """psi of every column, in block order."""
        numeric = iter(self._series.column_features(x, self._numeric) if self._numeric else [])
        return [next(numeric) if b.kind == 'numeric' else b.of(x)
                for b in self.blocks]

    def _column_features(self, x, project=False):
        """Concatenated psi (n, W) and per-column squared norms (n, C); ``project``: each psi
        onto the unit ball (the private pass)."""
        parts = self._parts(x)
        if project:  # (a value beyond the bounds, e.g. 1e308 * pi, can give cos(inf) = nan)
            parts = [project_block(p, b) for p, b in zip(parts, self.blocks)]
        sq = torch.stack([(p * p).sum(1) for p in parts], dim=1)
        return torch.cat(parts, dim=1), sq

    def gram(self, a, b, cache=None):
        """phi(a) phi(b)^T = (1/P) sum_{(i,j)} K_i * K_j (over every pair: ((sum K_i)^2 -
        sum K_i^2) / (2P)) elementwise, from the per-column kernels K_i: O(len(a) len(b) W),
        never O(.. dim) (``cache`` unused)."""
        kernels = [pa @ pb.T for pa, pb in zip(self._parts(a), self._parts(b))]
        if not self._every_pair:
            return sum(kernels[i] * kernels[j] for i, j in self.pairs) / self.n_pairs
        total = squares = 0
        for k in kernels:
            total = total + k
            squares = squares + k * k
        return (total * total - squares) / (2 * self.n_pairs)

    def dot(self, x, target):
        """phi(x) @ target for target (dim,) or (dim, k), without materialising phi: the
        target's pair blocks as one (W, W) matrix M, then psi(x)^T M psi(x) / sqrt(P)."""
        feats, _ = self._column_features(x)
        flat = target.reshape(self.dim, -1).to(feats.dtype)
        m = feats.new_zeros(self._total * self._total, flat.shape[1])
        m[self._index(feats.device)] = flat
        m = m.reshape(self._total, self._total, -1)
        out = torch.einsum('nw,wvk,nv->nk', feats, m, feats) / math.sqrt(self.n_pairs)
        return out.reshape(len(x)) if target.dim() == 1 else out

    def joint_tables(self, target, pairs):
        """{(first, second): the (C, w_first, w_second) block of ``target`` (C, dim)} for the
        column-name pairs ``pairs``, in the units of psi_first (outer) psi_second: for two
        categorical columns, their joint frequencies per class (noisy as released). The
        second-moment matrix is laid out once for all pairs."""
        m = self._layout(target)
        order = {b.name: i for i, b in enumerate(self.blocks)}
        out = {}
        for first, second in pairs:
            swap = order[first] > order[second]
            (oa, wa), (ob, wb) = (self._spans[second], self._spans[first]) if swap else \
                (self._spans[first], self._spans[second])
            block = m[:, oa:oa + wa, ob:ob + wb]
            out[first, second] = block.transpose(1, 2) if swap else block
        return out

    def _pair_sq_norms(self, sq):
        """||phi||^2 = sum_{(i,j)} |psi_i|^2 |psi_j|^2 / P."""
        if not self._every_pair:
            i, j = (torch.as_tensor(k, device=sq.device) for k in zip(*self.pairs))
            return (sq[:, i] * sq[:, j]).sum(1) / self.n_pairs
        return (sq.sum(1) ** 2 - (sq * sq).sum(1)) / (2 * self.n_pairs)

    def _index(self, device):
        if device not in self._cast:
            self._cast[device] = self._flat.to(device)
        return self._cast[device]

    def _pair_sums(self, feats, y):
        """sum_i y_ic phi(x_i) for every class c: blocks of the class second-moment matrices.
        Each class's matrix from its own rows only: with one-hot y (training batches, the
        private pass) that is one (W, n) x (n, W) product in all, not one per class."""
        out = feats.new_zeros(y.shape[1], self.dim)
        index = self._index(feats.device)
        scale = math.sqrt(self.n_pairs)
        weights = y.detach()
        # classes absent from y (e.g. the never-generated out-of-domain bucket) have zero sums
        present = torch.nonzero(weights.abs().sum(0)).flatten().tolist()
        chosen = {c: torch.nonzero(weights[:, c]).flatten() for c in present}
        blocks = _row_blocks(feats, chosen) if feats.requires_grad else None
        for c in present:
            rows = chosen[c]
            f = feats[rows] if blocks is None else blocks[c]
            if y.requires_grad or not f.requires_grad:
                moment = (f * y[rows, c:c + 1]).T @ f
            else:  # training: one product in the backward instead of two
                moment = _WeightedMoment.apply(f, y[rows, c:c + 1])
            out[c] = moment.reshape(-1)[index] / scale
        return out

    def __call__(self, x):
        """Dense phi(x) (n, dim), for tests and small inputs."""
        feats, _ = self._column_features(x)
        outer = (feats.unsqueeze(2) * feats.unsqueeze(1)).reshape(len(x), -1)
        return outer[:, self._index(x.device)] / math.sqrt(self.n_pairs)

    def class_sums(self, x, y, project=True):
        # the private pass: every psi_i, hence phi and every subset of its pairs, in the unit ball
        feats, _ = self._column_features(x, project=project)
        return self._pair_sums(feats, y)

    def class_moments(self, x, y):
        feats, sq = self._column_features(x)
        return self._pair_sums(feats, y), y.T @ self._pair_sq_norms(sq)

    def moments_within(self, sums, x, y):
        """``class_moments(x, y)`` of this restricted map from its parent's class sums ``sums``
        of the same rows: no second (n, W) x (W, W) pass, so a selected-pairs term costs
        training little more than the 'pairs' term it refines."""
        _, sq = self._column_features(x)
        return self.within.restrict_sums(sums, self), y.T @ self._pair_sq_norms(sq)

    def describe(self):
        which = 'all' if self._every_pair else 'the selected'
        return (f'Pairwise product kernels over {which} {self.n_pairs} pairs of '
                f'{len(self.blocks)} columns (numeric: Fourier series, length '
                f'{self.length_scale:g})')


def _row_blocks(feats, chosen):
    """{class: its rows of ``feats``} as pieces of one split when each class's rows are one run
    of consecutive rows and the runs do not overlap (a training batch, sorted by class): the
    backward is one concatenation, where each row gather scatters into a zero (n, W). None
    otherwise."""
    spans = {}
    for c, rows in chosen.items():
        first, last = int(rows[0]), int(rows[-1])
        if last - first + 1 != len(rows):
            return None
        spans[c] = (first, last + 1)
    cuts = sorted({0, len(feats), *(e for span in spans.values() for e in span)})
    pieces = dict(zip(cuts, torch.split(feats, [b - a for a, b in zip(cuts, cuts[1:])])))
    out = {c: pieces[a] for c, (a, b) in spans.items()}
    if any(len(out[c]) != b - a for c, (a, b) in spans.items()):  # overlapping runs
        return None
    return out


class _WeightedMoment(torch.autograd.Function):
    """(f w)^T f for rows f (n, W) with constant row weights w (n, 1). Autograd would take the
    gradient of each factor apart, two (n, W) x (W, W) products; both are one:
    d/df <G, (f w)^T f> = (f w) (G + G^T)."""

    @staticmethod
    def forward(ctx, f, w):
        weighted = f * w
        ctx.save_for_backward(weighted)
        return weighted.T @ f

    @staticmethod
    def backward(ctx, grad):
        (weighted,) = ctx.saved_tensors
        return weighted @ (grad + grad.T), None


def _pair_indices(blocks, pairs):
    """Block-index pairs (i < j) in layout order: every pair, or those named in ``pairs``."""
    n = len(blocks)
    if pairs is None:
        return tuple((i, j) for i in range(n) for j in range(i + 1, n))
    index = {b.name: k for k, b in enumerate(blocks)}
    chosen = set()
    for pair in pairs:
        a, b = pair
        if a not in index or b not in index or a == b:
            raise ValueError(f'{pair!r} is not a pair of two distinct columns of the map')
        chosen.add(tuple(sorted((index[a], index[b]))))
    if not chosen:
        raise ValueError('a pairwise map needs at least one pair')
    return tuple(sorted(chosen))
