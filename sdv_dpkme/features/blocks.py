"""Feature maps over the encoded table, built per column block.

The encoded table has one block per modelled column: a numerical/datetime column is
``[value in [0, 1]]`` or, if nullable, ``[value, null indicator]``; a categorical column is a one-hot
vector. Per block:

- numerical: psi(v) = h(v - 1/2) with h the Hermite features, or for a nullable column
  psi(v, z) = [z, (1 - z) * h(v - 1/2)], so ||psi|| <= 1 (z in {0, 1} on real rows; a Gaussian
  kernel on values, a match on missingness);
- categorical: the one-hot vector itself (norm 1; the delta kernel on the column).

Sum kernel: phi = [psi_1; ...; psi_m] / sqrt(m), the mean of the per-column kernels.
Product kernel over a column subset S: phi = outer product of psi_b, b in S (norm <= product of norms).
Both therefore satisfy ||phi(x)|| <= 1 = ``norm_bound`` on every row whose null indicators are in
[0, 1] and whose one-hot blocks have unit norm. The embedding pass also projects each private row's
features onto the unit ball, so the bound holds exactly in floating point too.
"""

import math
from dataclasses import dataclass

import torch

from sdv_dpkme.features.columns import column_block, column_gather, column_slice
from sdv_dpkme.features.hermite import hermite_features, hermite_rho


@dataclass(frozen=True)
class Block:
    """Columns of the encoded table that belong to one original column."""

    name: str
    kind: str  # 'numeric' (columns = [value] or [value, null]) or 'categorical' (one-hot)
    columns: tuple

    @property
    def width(self):
        return len(self.columns)

    @property
    def nullable(self):
        return self.kind == 'numeric' and len(self.columns) == 2

    def of(self, x):
        """The block's columns of ``x`` (n, width): a slice where they are consecutive (a view,
        whose backward is cheap; a list index costs a scatter per training step)."""
        return column_block(x, self.columns)


def _block_dim(block, order):
    if block.kind == 'numeric':
        return order + 1 + block.nullable
    return block.width


def _outer(first, others):
    """Row-wise outer product, flattened in order."""
    out = first
    for f in others:
        out = (out.unsqueeze(2) * f.unsqueeze(1)).reshape(out.shape[0], -1)
    return out


def project_unit_ball(features):
    norms = features.norm(dim=-1, keepdim=True)
    return features / norms.clamp(min=1.0)


def replace_sensitivity(feature_map):
    """sup ||phi-sums change|| when one row (and its class) is replaced: 2 ||phi||'s bound, or
    the tighter ``replace_bound`` a map proves for its own projected rows."""
    return float(getattr(feature_map, 'replace_bound', 2 * feature_map.norm_bound))


def dense_class_sums(feature_map, x, y, project=True):
    """sum_i y_i (outer) phi(x_i): (C, dim), for maps that materialise phi(x). ``project`` maps
    each phi(x_i) into the unit ball (the private pass relies on it for the 2/n bound)."""
    feats = feature_map(x)
    if project:
        feats = project_unit_ball(feats)
    return y.T @ feats


def dense_class_moments(feature_map, x, y):
    """(sum_i y_i phi(x_i), sum_i y_i ||phi(x_i)||^2): class sums and summed squared norms, for the
    unbiased training loss (no projection: generated rows)."""
    feats = feature_map(x)
    return y.T @ feats, y.T @ (feats * feats).sum(1)


class BlockFeatureMap:
    """Shared part of the sum and product maps: per-block features psi_b."""

    norm_bound = 1.0
    # every coordinate of a valid row's phi is at most this in size (a product of unit-norm
    # blocks: 1); it scales the noise weights of training (``objective_noise_weights``)
    coordinate_bound = 1.0

    def __init__(self, blocks, order, sigma2):
        if not blocks:
            raise ValueError('a feature map needs at least one column block')
        self.blocks = tuple(blocks)
        self.order = int(order)
        self.sigma2 = float(sigma2)
        self.rho = float(hermite_rho(self.sigma2))

    def block_features(self, x):
        numeric = [b for b in self.blocks if b.kind == 'numeric']
        out = {}
        if numeric:
            values = column_gather(x, [b.columns[0] for b in numeric])
            # unbind, not hp[:, j, :]: the backward of one unbind is one stack, while each slice
            # backward writes a zero tensor of hp's full size (DP-HP on images: 784 of them per step)
            hp = hermite_features(values - 0.5, self.order, self.rho).unbind(1)
            for j, b in enumerate(numeric):
                if b.nullable:
                    z = column_slice(x, b.columns[1], b.columns[1] + 1)
                    out[b.name] = torch.cat([z, (1 - z) * hp[j]], dim=1)
                else:
                    out[b.name] = hp[j]
        for b in self.blocks:
            if b.kind == 'categorical':
                out[b.name] = b.of(x)
        return [out[b.name] for b in self.blocks]

    def _block_dim(self, block):
        return _block_dim(block, self.order)

    def block_grams(self, a, b, cache=None):
        """Per block, the (len(a), len(b)) matrix psi_b(a) psi_b(b)^T. ``cache`` (a dict, for one
        pair (a, b)) keeps them in float32 across maps of the same order and length, e.g. the
        product kernel's redrawn subsets, which share most of their blocks."""
        if cache is None:
            return [fa @ fb.T for fa, fb in zip(self.block_features(a), self.block_features(b))]
        keys = [(block, self.order, self.rho) for block in self.blocks]
        if any(key not in cache for key in keys):
            for key, fa, fb in zip(keys, self.block_features(a), self.block_features(b)):
                cache.setdefault(key, (fa @ fb.T).float())
        return [cache[key] for key in keys]

    class_sums = dense_class_sums
    class_moments = dense_class_moments


def project_block(features, block):
    """A private row's psi_b into the unit ball (non-finite entries as 0); a categorical block
    into its non-negative part too. Both are no-ops on valid rows. Within the non-negative part
    two vectors have an inner product >= 0, so ||psi - psi'||^2 <= 2; within the ball, <= 4."""
    features = torch.nan_to_num(features, nan=0.0, posinf=0.0, neginf=0.0)
    if block.kind == 'categorical':
        features = features.clamp(min=0.0)
    return project_unit_ball(features)


class SumKernelMap(BlockFeatureMap):
    """Sum (mean) of per-column kernels."""

    additive = True  # a sum over single columns (see ``TabularGenerator.training_rows``)

    @property
    def coordinate_bound(self):
        """|phi_j| <= 1 / sqrt(m) on valid rows: unit-norm blocks over sqrt(m)."""
        return 1.0 / math.sqrt(len(self.blocks))

    @property
    def replace_bound(self):
        """sup ||y (x) phi(x) - y' (x) phi(x')|| over two projected rows and classes y, y': the
        replace-one sensitivity of the class sums (of the means: this / n). Another class:
        ||phi(x)||^2 + ||phi(x')||^2 <= 2. The same class: the mean over blocks of
        ||psi_b - psi_b'||^2, at most 2 for a categorical block (``project_block``) and 4 for
        any other, hence sqrt((2 m_categorical + 4 m_other) / m), between sqrt(2) and 2."""
        squares = [2.0 if b.kind == 'categorical' else 4.0 for b in self.blocks]
        return math.sqrt(sum(squares) / len(squares))

    def class_sums(self, x, y, project=True):
        feats = self.block_features(x)
        if project:  # per block: the bound of ``replace_bound`` holds for any row
            feats = [project_block(f, b) for f, b in zip(feats, self.blocks)]
        return y.T @ (torch.cat(feats, dim=1) / math.sqrt(len(self.blocks)))

    @property
    def dim(self):
        return sum(self._block_dim(b) for b in self.blocks)

    def __call__(self, x):
        return torch.cat(self.block_features(x), dim=1) / math.sqrt(len(self.blocks))

    def gram(self, a, b, cache=None):
        """phi(a) phi(b)^T = the mean of the per-block kernels, without materialising phi."""
        return sum(self.block_grams(a, b, cache)) / len(self.blocks)

    def describe(self):
        return f'Hermite sum kernel over {len(self.blocks)} columns, order {self.order}'


class ProductKernelMap(BlockFeatureMap):
    """Product of per-column kernels over a column subset.

    Blocks are kept in ascending feature dimension so that ``class_sums`` only materialises the
    outer product of all but the widest block and contracts the widest one with a matrix product.
    """

    def __init__(self, blocks, order, sigma2):
        blocks = sorted(blocks, key=lambda b: _block_dim(b, order))
        super().__init__(blocks, order, sigma2)

    @property
    def dim(self):
        return math.prod(self._block_dim(b) for b in self.blocks)

    def __call__(self, x):
        feats = self.block_features(x)
        return _outer(feats[0], feats[1:])

    def gram(self, a, b, cache=None):
        """phi(a) phi(b)^T = the elementwise product of the per-block kernels (the inner product
        of outer products), without materialising the prod-of-widths features."""
        grams = self.block_grams(a, b, cache)
        out = grams[0]
        for g in grams[1:]:
            out = out * g
        return out

    def class_sums(self, x, y, project=True):
        feats = self.block_features(x)
        if project:  # ||outer product|| = product of the block norms
            norm = torch.stack([f.norm(dim=1) for f in feats]).prod(0)
            y = y / norm.clamp(min=1.0)[:, None]
        left = _outer(y, feats[:-1])  # (n, C * prod of all but the last block)
        return (left.T @ feats[-1]).reshape(y.shape[1], -1)

    def class_moments(self, x, y):
        feats = self.block_features(x)
        sq = torch.stack([(f * f).sum(1) for f in feats]).prod(0)  # ||outer||^2 = prod ||f_b||^2
        left = _outer(y, feats[:-1])
        return (left.T @ feats[-1]).reshape(y.shape[1], -1), y.T @ sq

    def describe(self):
        names = ', '.join(b.name for b in self.blocks)
        return f'Hermite product kernel, order {self.order}, over ({names})'


def draw_product_subsets(blocks, count, max_columns, max_features, order, generator):
    """``count`` random column subsets whose product feature dimension stays <= max_features.

    Only public facts (the layout) and the model RNG are used, so the subsets are data-independent.
    """
    dims = [_block_dim(b, order) for b in blocks]
    subsets = []
    for _ in range(count):
        perm = torch.randperm(len(blocks), generator=generator).tolist()
        chosen, size = [], 1
        for i in perm:
            if len(chosen) == max_columns:
                break
            if size * dims[i] <= max_features:
                chosen.append(blocks[i])
                size *= dims[i]
        subsets.append(chosen)
    return subsets
