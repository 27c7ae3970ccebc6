"""Random Fourier features (DP-MERF, Harder et al. 2021) over the encoded table.

Joint Gaussian kernel k(u, u') = exp(-||u - u'||^2 / (2 l^2)) on the vector u of all numeric value
columns (Rahimi & Recht): with D/2 frequencies w_j ~ N(0, I / l^2),

    phi_num(u) = sqrt(2 / D) [cos(W u); sin(W u)],   ||phi_num(u)||^2 = (2/D) sum_j (cos^2 + sin^2) = 1,

and E[phi_num(u) . phi_num(u')] = E[cos(w . (u - u'))] = k(u, u'). Only this [cos, sin] form is used:
sqrt(2/D) cos(Wu + b) has norm up to sqrt(2) and would break the 2/n sensitivity.

The other blocks get delta kernels: each categorical column its one-hot vector, each nullable numeric
column its missingness as [z, 1 - z] (the value itself, as encoded, stays in u).

Weighting rule. Let p = number of numeric columns, c = number of categorical columns, r = number of
nullable numeric columns and m = p + c + r. Then

    phi = [sqrt(p/m) phi_num(u); onehot_1 / sqrt(m); ...; [z_1, 1 - z_1] / sqrt(m); ...]

is the feature map of the sum kernel (p k(u, u') + sum_cat delta + sum_null delta) / m: the numeric
group weighs as many columns as it holds, so every column counts 1/m as in ``SumKernelMap``.
Norm: ||phi||^2 = p/m + c/m + sum (z^2 + (1 - z)^2)/m <= (p + c + r)/m = 1, with equality when every
z is 0 or 1. ``class_sums`` also projects each row onto the unit ball, so garbage rows are bounded too.

The frequencies are drawn once at construction from a public generator; the length scale is a public
hyperparameter (default 0.3 on the [0, 1] encoded box), never a median heuristic on private data.
"""

import math
import numbers

import torch

from sdv_dpkme.features.blocks import dense_class_moments, dense_class_sums
from sdv_dpkme.features.columns import column_block, column_gather, column_slice


class FourierKernelMap:
    """Sum of a joint-numeric RFF Gaussian kernel and per-column delta kernels; ||phi|| <= 1."""

    norm_bound = 1.0

    def __init__(self, blocks, n_features=1000, length_scale=0.3, generator=None):
        """``n_features`` = D (even, >= 2) RFF dimensions; ``generator`` is a torch.Generator
        (None: torch's global RNG). Both must be public: W depends on nothing but them."""
        if not blocks:
            raise ValueError('a feature map needs at least one column block')
        for b in blocks:
            if b.kind not in ('numeric', 'categorical'):
                raise ValueError(f'unknown block kind {b.kind!r} for column {b.name!r}')
        if not (isinstance(n_features, numbers.Integral) and not isinstance(n_features, bool)
                and n_features >= 2 and n_features % 2 == 0):
            raise ValueError(f'n_features must be an even integer >= 2 ([cos, sin] pairs), '
                             f'got {n_features!r}')
        try:
            length = float(length_scale)
        except (TypeError, ValueError):
            length = math.nan
        if not (math.isfinite(length) and length > 0):
            raise ValueError(f'length_scale must be a finite number > 0, got {length_scale!r}')
        length_scale = length

        self.blocks = tuple(blocks)
        self.n_features = int(n_features)
        self.length_scale = length_scale
        numeric = [b for b in self.blocks if b.kind == 'numeric']
        self._value_columns = [b.columns[0] for b in numeric]
        # delta-kernel parts in block order: ('cat', columns) or ('null', z column)
        self._delta = []
        for b in self.blocks:
            if b.kind == 'categorical':
                self._delta.append(('cat', list(b.columns)))
            elif b.nullable:
                self._delta.append(('null', b.columns[1]))
        p = len(numeric)
        self._m = p + len(self._delta)
        self._rff_dim = n_features if p else 0
        # float64 master copy; cast per call so float32 training and the float64 pass share W
        if p:
            self.frequencies = torch.randn(
                n_features // 2, p, generator=generator, dtype=torch.float64
            ) / length_scale
        else:
            self.frequencies = torch.zeros(0, 0, dtype=torch.float64)
        self._cast = {}

    @property
    def dim(self):
        delta = sum(len(c) if kind == 'cat' else 2 for kind, c in self._delta)
        return self._rff_dim + delta

    @property
    def coordinate_bound(self):
        """The largest |phi_j| on valid rows: sqrt(2 p / (m D)) in the RFF part, 1 / sqrt(m) in
        a delta block."""
        p = len(self._value_columns)
        rff = math.sqrt(2.0 * p / (self._m * self.n_features)) if self._rff_dim else 0.0
        return max(rff, 1.0 / math.sqrt(self._m) if self._delta else 0.0)

    def _weights(self, x):
        key = (x.dtype, x.device)
        if key not in self._cast:
            self._cast[key] = self.frequencies.to(dtype=x.dtype, device=x.device)
        return self._cast[key]

    def __call__(self, x):
        scale = 1.0 / math.sqrt(self._m)
        parts = []
        if self._rff_dim:
            proj = column_gather(x, self._value_columns) @ self._weights(x).T  # (n, D/2)
            # sqrt(p/m) * sqrt(2/D): the numeric group's share times the RFF normaliser
            w = math.sqrt(len(self._value_columns) / self._m * 2.0 / self.n_features)
            parts += [torch.cos(proj) * w, torch.sin(proj) * w]
        for kind, cols in self._delta:
            if kind == 'cat':
                parts.append(column_block(x, cols) * scale)
            else:
                z = column_slice(x, cols, cols + 1)
                parts.append(torch.cat([z, 1 - z], dim=1) * scale)
        return torch.cat(parts, dim=1)

    class_sums = dense_class_sums
    class_moments = dense_class_moments

    def describe(self):
        p = len(self._value_columns)
        if not p:
            return f'Delta (one-hot) sum kernel over {len(self._delta)} blocks, no numeric columns'
        return (f'Random Fourier features (D={self.n_features}, length {self.length_scale:g}) '
                f'over {p} numeric columns + {len(self._delta)} delta-kernel blocks')
