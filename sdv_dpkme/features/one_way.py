"""The one-way map: every column's own distribution, one block per column.

Per column b: a categorical column's one-hot vector (the delta kernel: its mean embedding is the
column's table of shares), a numeric column's Fourier-series features of ``FourierMarginalMap``
(its fine-scale marginal kernel). phi = [psi_1; ...; psi_m] / sqrt(m), so ||phi|| <= 1.

Released pooled over the classes, (1/n) sum_i phi(x_i) is the table's one-way marginals with
the noise of one release instead of that of C class-conditional ones summed.

Replace-one sensitivity of sum_i phi(x_i) (pooled: a row's class does not enter): ||phi(x) -
phi(x')||^2 = (1/m) sum_b ||psi_b(x) - psi_b(x')||^2. A categorical block projected onto the
non-negative part of the unit ball has ||psi - psi'||^2 <= 2 (``blocks.project_block``); the
numeric blocks, projected together onto the ball of radius sqrt(p) (``FourierMarginalMap``'s
projection of phi_num / sqrt(p)), differ by at most 2 sqrt(p) in norm, i.e. by 4 p in squared
norm. Hence sqrt((2 m_categorical + 4 p) / m), between sqrt(2) and 2 (``replace_bound``).
"""

import math

import torch

from sdv_dpkme.features.blocks import project_block
from sdv_dpkme.features.marginal import FourierMarginalMap


class OneWayMap:
    """Mean of per-column kernels: one-hot for categorical columns, Fourier series (length
    ``length_scale``) for numeric ones; ||phi|| <= 1."""

    norm_bound = 1.0
    additive = True  # a sum over single columns (see ``TabularGenerator.training_rows``)

    def __init__(self, blocks, length_scale=0.01, n_frequencies=None):
        if not blocks:
            raise ValueError('a one-way map needs at least one column block')
        self.categorical = tuple(b for b in blocks if b.kind == 'categorical')
        numeric = [b for b in blocks if b.kind == 'numeric']
        self.numeric = None if not numeric else FourierMarginalMap(
            numeric, length_scale, n_frequencies)
        self.length_scale = float(length_scale)
        self.n_columns = len(self.categorical) + len(numeric)
        # a numeric part's class sums are of phi_num / sqrt(p): scale them to the mean over m
        self._numeric_scale = math.sqrt(len(numeric) / self.n_columns)

    @property
    def blocks(self):
        return self.categorical + (self.numeric.blocks if self.numeric else ())

    @property
    def replace_bound(self):
        """sup ||phi(x) - phi(x')|| over two projected rows (module docstring): the pooled
        release's replace-one sensitivity (of the means: this / n)."""
        p = 0 if self.numeric is None else len(self.numeric.blocks)
        return math.sqrt((2.0 * len(self.categorical) + 4.0 * p) / self.n_columns)

    @property
    def dim(self):
        return sum(b.width for b in self.categorical) + (self.numeric.dim if self.numeric else 0)

    @property
    def coordinate_bound(self):
        """|phi_j| <= 1 / sqrt(m) on valid rows: unit-norm columns over sqrt(m)."""
        return 1.0 / math.sqrt(self.n_columns)

    def __call__(self, x):
        parts = [b.of(x) / math.sqrt(self.n_columns) for b in self.categorical]
        if self.numeric is not None:
            parts.append(self.numeric(x) * self._numeric_scale)
        return torch.cat(parts, dim=1)

    def gram(self, a, b, cache=None):
        """phi(a) phi(b)^T (``cache`` unused)."""
        return self(a) @ self(b).T

    def class_sums(self, x, y, project=True):
        """sum_i y_i (outer) phi(x_i) (C, dim); ``project``: each block as the sensitivity
        bound assumes (the private pass)."""
        y = y.to(x.dtype)
        if project:  # any row: finite values keep cos / sin finite (a no-op on valid rows)
            x = torch.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0).clamp(-1e6, 1e6)
        parts = []
        for b in self.categorical:
            psi = b.of(x)
            parts.append(y.T @ (project_block(psi, b) if project else psi))
        parts = [p / math.sqrt(self.n_columns) for p in parts]
        if self.numeric is not None:
            parts.append(self.numeric.class_sums(x, y, project) * self._numeric_scale)
        return torch.cat(parts, dim=1)

    def class_moments(self, x, y):
        """(class sums, class sums of ||phi||^2), without projection (generated rows)."""
        y = y.to(x.dtype)
        sums, sq = [], x.new_zeros(len(x))
        for b in self.categorical:
            psi = b.of(x)
            sums.append(y.T @ psi / math.sqrt(self.n_columns))
            sq = sq + (psi * psi).sum(1) / self.n_columns
        sq = y.T @ sq
        if self.numeric is not None:
            num_sums, num_sq = self.numeric.class_moments(x, y)
            sums.append(num_sums * self._numeric_scale)
            sq = sq + num_sq * self._numeric_scale ** 2
        return torch.cat(sums, dim=1), sq

    def describe(self):
        numeric = 0 if self.numeric is None else len(self.numeric.blocks)
        return (f'one-way kernels (one-hot on {len(self.categorical)} categorical columns, '
                f'Fourier series of length {self.length_scale:g} on {numeric} numeric columns), '
                'pooled over the classes')
