"""ScatterNet features of DP-KIP-ScatterNet: kymatio's 2-D scattering
(J = 2, L = 8, second order: 81 channels per image channel at H/4 x W/4), then the paper's
per-location group normalisation.

The filters, padding and the order of the output channels are kymatio's torch frontend
(``ScatteringTorch2D``; imported from its module because ``import kymatio.torch`` fails with
scipy >= 1.17). Its reference implementation loops over the 16 first-order and 64 second-order
paths one small FFT at a time; here the same computation runs on all filters of a scale at once
(one batched FFT per scale), several times faster on CPU and the same numbers
(tests/images/test_images_scattering.py compares the two). The DP-SGD steps differentiate through
it, so it is written in plain differentiable torch ops.
"""

import torch
from kymatio.scattering2d.frontend.torch_frontend import ScatteringTorch2D


_BROADCAST = False  # tests flip it to compare both paths


def _filter_subsample(x, filters, k):
    """kymatio's ``subsample_fourier(cdgmm(x, filter), k)`` for every filter at once:
    x (..., M, N) complex spectra, filters (F, M, N) real -> (..., F, M/k, N/k).

    Subsampling by k in space periodises the spectrum: the mean of the k x k aliased blocks of
    x * filter. Written as one einsum over the aliases, so the (..., F, M, N) product is never
    materialised (6x faster on CPU than multiply-then-average)."""
    if k == 1:
        return x.unsqueeze(-3) * filters
    *lead, m, n = x.shape
    if _BROADCAST:
        prod = x.unsqueeze(-3) * filters
        return prod.reshape(*prod.shape[:-2], k, m // k, k, n // k).mean(dim=(-4, -2))
    fr = filters.reshape(filters.shape[0], k, m // k, k, n // k).to(x.dtype) / (k * k)
    return _AliasedProduct.apply(x.reshape(*lead, k, m // k, k, n // k), fr)


class _AliasedProduct(torch.autograd.Function):
    """y[..., s] = sum over aliases of x * f_s, with a hand-written backward: autograd's backward
    of the complex einsum is ~10x slower than this one einsum. f is real (stored as complex), so
    dL/dx = sum_s dL/dy_s * f_s tiled over the aliases (PyTorch's conjugate-gradient
    convention: conj(f) = f)."""

    @staticmethod
    def forward(ctx, xr, fr):
        ctx.save_for_backward(fr)
        return torch.einsum('...axcy,saxcy->...sxy', xr, fr)

    @staticmethod
    def backward(ctx, grad):
        (fr,) = ctx.saved_tensors
        return torch.einsum('...sxy,saxcy->...axcy', grad, fr), None


#: the paper's variance floor of the group normalisation (jax's default)
PAPER_NORM_EPS = 1e-5


def group_normalise(features, group_size=3, eps=PAPER_NORM_EPS):
    """Per spatial location, standardise each group of ``group_size`` consecutive channels.

    ``features``: (..., channels, h, w). This is ``jax.nn.standardize(axis=1)`` on the
    (groups, group_size, h, w) view as in the paper's code: mean and (biased) variance over the
    group's channels at one location, eps 1e-5, no affine part. NOT ``torch.nn.GroupNorm``, which
    pools the group over all locations.
    """
    *batch, c, h, w = features.shape
    if c % group_size:
        raise ValueError(f'{c} channels do not split into groups of {group_size}')
    g = features.reshape(*batch, c // group_size, group_size, h, w)
    mean = g.mean(dim=-3, keepdim=True)
    var = (g * g).mean(dim=-3, keepdim=True) - mean * mean
    return ((g - mean) * torch.rsqrt(var.clamp(min=0) + eps)).reshape(*batch, c, h, w)


class ScatterNet:
    """phi(x) for images x of shape (..., H, W) (any leading dims, e.g. (n, C, H, W)).

    ``scatter`` gives kymatio's (..., 81, H/4, W/4) coefficients (J = 2, L = 8); ``__call__`` the
    group-normalised features (variance floor ``norm_eps``; the paper's is 1e-5) flattened to
    (n, dim). Filters are public (no data involved).
    """

    def __init__(self, shape, J=2, L=8, normalise=True, dtype=torch.float32,
                 norm_eps=PAPER_NORM_EPS):
        self.shape = tuple(int(s) for s in shape)
        self.J, self.L, self.normalise = int(J), int(L), bool(normalise)
        self.norm_eps = float(norm_eps)
        frontend = ScatteringTorch2D(J=self.J, shape=self.shape, L=self.L, max_order=2)
        self._pad = frontend.pad
        phi, psi = frontend.load_filters()
        self.dtype = dtype
        # filters are real in the Fourier domain: (M', N', 1) -> (M', N')
        self.phi = [p[..., 0].to(dtype) for p in phi['levels']]
        self.psi = {}  # scale j -> list over resolutions r of (L, M'/2^r, N'/2^r)
        for j in range(self.J):
            same = [f for f in psi if f['j'] == j]
            if [f['theta'] for f in same] != list(range(self.L)):
                raise RuntimeError('unexpected kymatio filter order')
            # kymatio builds only the resolutions a path uses (r < min(j + 1, max(J - 1, 1)))
            self.psi[j] = [torch.stack([f['levels'][r][..., 0] for f in same]).to(dtype)
                           for r in range(len(same[0]['levels']))]
        self.channels = 1 + self.J * self.L + self.L ** 2 * self.J * (self.J - 1) // 2
        self.out_shape = (self.shape[0] // 2 ** self.J, self.shape[1] // 2 ** self.J)

    def to(self, device):
        self.phi = [p.to(device) for p in self.phi]
        self.psi = {j: [f.to(device) for f in fs] for j, fs in self.psi.items()}
        return self

    def dim(self, channels=1):
        return channels * self.channels * self.out_shape[0] * self.out_shape[1]

    def scatter(self, x):
        """kymatio's scattering coefficients, same channel order: S0, S1 over (j1, theta1),
        S2 over (j1, theta1) then (j2 > j1, theta2)."""
        batch = x.shape[:-2]
        x = x.reshape(-1, *self.shape).to(self.dtype)
        big = 2 ** self.J
        spec = torch.fft.fft2(self._pad(x)[..., 0])  # (B, M', N') complex
        out0 = [self._low(spec, 0, big)[:, None]]
        out1, out2 = [], []
        for j1 in range(self.J):
            u1 = torch.fft.ifft2(_filter_subsample(spec, self.psi[j1][0], 2 ** j1)).abs()
            u1 = torch.fft.fft2(u1)  # (B, L, M'/2^j1, N'/2^j1)
            out1.append(self._low(u1, j1, 2 ** (self.J - j1)))
            second = []
            for j2 in range(j1 + 1, self.J):
                u2 = _filter_subsample(u1, self.psi[j2][j1], 2 ** (j2 - j1))
                u2 = torch.fft.fft2(torch.fft.ifft2(u2).abs())  # (B, L, L, ...)
                second.append(self._low(u2, j2, 2 ** (self.J - j2)))
            if second:
                s2 = torch.cat(second, dim=2)  # (B, L(theta1), paths per theta1, h, w)
                out2.append(s2.reshape(s2.shape[0], -1, *s2.shape[-2:]))
        coeffs = torch.cat(out0 + out1 + out2, dim=1)
        return coeffs.reshape(*batch, self.channels, *coeffs.shape[-2:])

    def _low(self, spec, j, k):
        """Low-pass at resolution j, subsample by k, back to space, drop the padded border."""
        s = torch.fft.ifft2(_filter_subsample(spec, self.phi[j][None], k)[..., 0, :, :]).real
        return s[..., 1:-1, 1:-1]

    def __call__(self, x):
        """(n, [C,] H, W) -> (n, dim) features (group-normalised unless ``normalise=False``)."""
        n = x.shape[0]
        s = self.scatter(x)
        if self.normalise:
            s = group_normalise(s, eps=self.norm_eps)
        return s.reshape(n, -1)

    def batched(self, x, chunk=500):
        """``self(x)`` without autograd, ``chunk`` images at a time (float32 CPU output)."""
        out = []
        with torch.no_grad():
            for start in range(0, len(x), chunk):
                out.append(self(x[start:start + chunk]).float().cpu())
        return torch.cat(out) if out else torch.zeros(0, self.dim())
