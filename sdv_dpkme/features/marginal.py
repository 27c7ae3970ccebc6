"""Fine-scale kernels on the 1-D marginals of the numeric columns (deterministic Fourier series).

The joint kernels (RFF at length 0.3, Hermite at sigma^2 = 0.05) cannot see structure finer than
about a fifth of a column's public range. A column whose values sit in a narrow part of its public
box (fnlwgt, capital-gain) is then unconstrained at the scale where its real shape lives, and the
generator is free to put class-specific spikes there, which trained classifiers exploit.

Per numeric column v in [0, 1] this map uses the stationary kernel

    k(v, v') = sum_{k=1..K} a_k cos(pi k (v - v')),   a_k = exp(-(pi k l)^2 / 2) / sum_j a_j,

with deterministic features psi(v) = [sqrt(a_k) cos(pi k v), sqrt(a_k) sin(pi k v)]_k, so
||psi(v)||^2 = sum_k a_k = 1 exactly. By Poisson summation, with the k = 0 term put back,
1 + 2 sum_k exp(-(pi k l)^2 / 2) cos(pi k d) = G(d) = sqrt(2/pi) / l * sum_m exp(-(d - 2m)^2 / (2 l^2)),
a Gaussian of length l periodised with period 2 (no wrap-around for |d| <= 1); hence
k(d) = (G(d) - 1) / (G(0) - 1). The dropped constant adds the same to every mean embedding of a
distribution, so it carries no information and would only waste norm (= privacy) budget. K stops
where a_k falls below 1e-4 of its peak.

A nullable column contributes [(1 - z) psi(v), z, 1 - z] / sqrt(2) (norm <= 1 for z in [0, 1]):
values of present rows, and missingness. The map is phi = [psi_1; ...; psi_p] / sqrt(p) over the p
numeric columns (categorical columns are matched exactly by the other kernels): ||phi|| <= 1, so
the embedding has the same 2/n sensitivity as the other maps.
"""

import math

import torch

from sdv_dpkme.features.columns import column_gather, column_slice, step_memo

def default_frequencies(length):
    """Number K of frequencies: the spectrum is below 1e-4 of its peak past K."""
    return max(1, math.ceil(math.sqrt(2 * math.log(1e4)) / (math.pi * length)))


class FourierSeries:
    """Per-column features psi(v) = [sqrt(a_k) cos(pi k v), sqrt(a_k) sin(pi k v)]_k, ||psi|| = 1."""

    def __init__(self, length, n_frequencies):
        k = torch.arange(1, n_frequencies + 1, dtype=torch.float64)
        a = torch.exp(-0.5 * (math.pi * k * length) ** 2)
        self.n_frequencies = int(n_frequencies)
        self._omega = math.pi * k
        self._amp = (a / a.sum()).sqrt()
        self._cast = {}

    def width(self, block):
        return 2 * self.n_frequencies + 2 * block.nullable

    def _consts(self, x):
        key = (x.dtype, x.device)
        if key not in self._cast:
            self._cast[key] = (self._omega.to(dtype=x.dtype, device=x.device),
                               self._amp.to(dtype=x.dtype, device=x.device))
        return self._cast[key]

    def column_features(self, x, blocks):
        """One (n, width) tensor per numeric block, each of norm <= 1."""
        omega, amp = self._consts(x)
        parts = []
        for b in blocks:
            # per column, not one (n, p, K) tensor split afterwards: the backward pass of each
            # split would fill a zero tensor of the whole (n, p, 2K) size
            proj = column_slice(x, b.columns[0], b.columns[0] + 1) * omega  # (n, K)
            psi = torch.cat([torch.cos(proj) * amp, torch.sin(proj) * amp], dim=1)
            if b.nullable:
                z = column_slice(x, b.columns[1], b.columns[1] + 1)
                # squared norm (1 - z)^2 + z^2 + (1 - z)^2 <= 2 for z in [0, 1]
                psi = torch.cat([(1 - z) * psi, z, 1 - z], dim=1) / math.sqrt(2)
            parts.append(psi)
        return parts


class FourierMarginalMap:
    """Mean of per-numeric-column Fourier-series kernels of length ``length_scale``; ||phi|| <= 1."""

    norm_bound = 1.0
    additive = True  # a sum over single columns (see ``TabularGenerator.training_rows``)

    def __init__(self, blocks, length_scale=0.02, n_frequencies=None):
        numeric = [b for b in blocks if b.kind == 'numeric']
        if not numeric:
            raise ValueError('a marginal map needs at least one numeric column')
        length = float(length_scale)
        if not (math.isfinite(length) and length > 0):
            raise ValueError(f'length_scale must be a finite number > 0, got {length_scale!r}')
        if n_frequencies is None:
            n_frequencies = default_frequencies(length)
        self.blocks = tuple(numeric)
        self.length_scale = length
        self.n_frequencies = int(n_frequencies)
        self._series = FourierSeries(length, self.n_frequencies)

    @property
    def dim(self):
        return sum(self._series.width(b) for b in self.blocks)

    @property
    def coordinate_bound(self):
        """|phi_j| <= 1 / sqrt(p) on valid rows: unit-norm columns over sqrt(p)."""
        return 1.0 / math.sqrt(len(self.blocks))

    def __call__(self, x):
        parts = self._series.column_features(x, self.blocks)
        return torch.cat(parts, dim=1) / math.sqrt(len(self.blocks))

    def gram(self, a, b, cache=None):
        """phi(a) phi(b)^T: the mean of the per-column kernels (``cache`` unused)."""
        pa = self._series.column_features(a, self.blocks)
        pb = self._series.column_features(b, self.blocks)
        return sum(fa @ fb.T for fa, fb in zip(pa, pb)) / len(self.blocks)

    def _class_parts(self, x, y, project):
        """(per-block class sums (C, width) in block order, per-row ||phi||^2), without the
        (n, dim) phi: the non-nullable columns' cos/sin as one (n, p, K) tensor contracted with
        y, the nullable ones column by column. ``project``: each row weighted by
        1 / max(1, ||phi||), i.e. y^T of phi projected onto the unit ball."""
        omega, amp = self._series._consts(x)
        plain = [b for b in self.blocks if not b.nullable]
        sums, sq = {}, x.new_zeros(len(x))
        values = column_gather(x, [b.columns[0] for b in plain])
        if plain and not project and not y.requires_grad:  # training: ||psi|| = 1 exactly
            sq = sq + len(plain)
            cos_sums, sin_sums = _FourierSums.apply(values, y, omega)
        elif plain:
            proj = values.unsqueeze(2) * omega  # (n, p', K)
            cos, sin = torch.cos(proj), torch.sin(proj)  # amp is applied to the (C, .) sums
            if project:  # ||psi||^2 = sum_k a_k (cos^2 + sin^2) = 1 up to rounding
                sq = sq + ((cos * cos + sin * sin) * amp * amp).sum((1, 2))
        nullable = [b for b in self.blocks if b.nullable]
        parts = self._series.column_features(x, nullable) if nullable else []
        for part in parts:
            sq = sq + (part * part).sum(1)
        sq = sq / len(self.blocks)
        if project:
            y = y / sq.sqrt().clamp(min=1.0).unsqueeze(1)
        if plain:
            if project or y.requires_grad:
                cos_sums, sin_sums = _label_sums(y, cos), _label_sums(y, sin)
            both = torch.stack([cos_sums * amp, sin_sums * amp], dim=2)  # (C, p', 2, K)
            sums.update(zip((b.name for b in plain), both.reshape(y.shape[1], len(plain), -1)
                            .unbind(1)))
        sums.update(zip((b.name for b in nullable), (y.T @ part for part in parts)))
        scale = 1 / math.sqrt(len(self.blocks))
        return torch.cat([sums[b.name] for b in self.blocks], 1) * scale, sq

    def class_sums(self, x, y, project=True):
        """sum_i y_i (outer) phi(x_i) (C, dim); ``project``: of phi in the unit ball (the
        private pass), as ``dense_class_sums`` but without materialising phi."""
        return self._class_parts(x, y.to(x.dtype), project)[0]

    def class_moments(self, x, y):
        """(class sums, class sums of ||phi||^2), as ``dense_class_moments`` (no projection).
        Within a training step (``features.columns.step_memo``) a map of the same columns and
        kernel reuses them on the same rows (the 'one_way' map's numeric part)."""
        memo = step_memo(x)
        key = ('marginal', self.blocks, self.length_scale, self.n_frequencies)
        if memo is not None and key in memo and memo[key][0] is y:
            return memo[key][1]
        sums, sq = self._class_parts(x, y.to(x.dtype), False)
        out = sums, y.to(x.dtype).T @ sq
        if memo is not None:
            memo[key] = (y, out)
        return out

    def describe(self):
        return (f'Fourier-series marginal kernels (length {self.length_scale:g}, '
                f'{self.n_frequencies} frequencies) on {len(self.blocks)} numeric columns')


class _FourierSums(torch.autograd.Function):
    """(sum_n y_nc cos(v_np w_k), the same with sin), each (C, p, K), for training rows: the
    backward reuses the forward's cos and sin rather than recomputing both (no grad for y)."""

    @staticmethod
    def forward(ctx, values, y, omega):
        proj = values.unsqueeze(2) * omega
        cos, sin = torch.cos(proj), torch.sin(proj)
        ctx.save_for_backward(cos, sin, y, omega)
        return _label_sums(y, cos), _label_sums(y, sin)

    @staticmethod
    def backward(ctx, grad_cos, grad_sin):
        cos, sin, y, omega = ctx.saved_tensors
        if grad_cos is None and grad_sin is None:
            return torch.zeros_like(cos[..., 0]), None, None
        d = 0
        if grad_sin is not None:  # d sin(v w) / dv = w cos(v w)
            d = cos * (y @ grad_sin.reshape(len(grad_sin), -1)).reshape(cos.shape)
        if grad_cos is not None:  # d cos(v w) / dv = -w sin(v w)
            d = d - sin * (y @ grad_cos.reshape(len(grad_cos), -1)).reshape(cos.shape)
        return d @ omega, None, None


def _label_sums(y, values):
    """sum_n y_nc values_npk -> (C, p, K), as one (C, n) x (n, p K) product (no permute)."""
    return (y.T @ values.reshape(len(values), -1)).reshape(y.shape[1], *values.shape[1:])
