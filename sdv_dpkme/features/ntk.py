"""Closed-form NTK and NNGP kernels of an infinitely wide fully-connected ReLU network (DP-KIP).

NTK parameterization (as in neural-tangents): a Dense layer maps
h -> (s_w / sqrt(fan_in)) W h + s_b b with W, b ~ N(0, 1). Each kernel is carried as the cross
term S(x, y) plus the two diagonals S(x, x), S(y, y); the NTK T is carried next to the NNGP S:

    input:  S = x . y / d
    Dense:  S <- s_w^2 S + s_b^2,                 T <- S + s_w^2 T   (T = S after the first Dense)
    ReLU:   with theta the angle between x and y under S (arc-cosine kernels, Cho & Saul 2009),
            S <- (sqrt(S_xx S_yy) sin(theta) + (pi - theta) S_xy) / (2 pi),   S_xx <- S_xx / 2,
            T <- T (pi - theta) / (2 pi).

``depth`` hidden layers means Dense, (ReLU, Dense) * depth; the last Dense is the scalar output.

theta comes from atan2(sqrt(S_xx S_yy - S_xy^2), S_xy), never arccos(c): arccos and the sqrt both
have an infinite derivative at x == y (c = 1), where a KIP support point meets a data point or
itself. Where the sqrt argument is <= 0 the sqrt and its gradient are replaced by 0 through
double ``torch.where`` (the forward value there is exactly the unguarded one); the angle's
dependence then drops out, which is the true gradient of the diagonal (theta stays 0) and the
symmetric subgradient at the kink x == y. Everything is tensor ops without in-place writes or
value-dependent Python branches, so ``torch.func.vmap`` / ``torch.func.grad`` work through it.
"""

import math
import numbers

import torch

_TWO_PI = 2.0 * math.pi


def _check_hyper(depth, weight_variance, bias_variance):
    if not (isinstance(depth, numbers.Integral) and not isinstance(depth, bool) and depth >= 1):
        raise ValueError(f'depth must be an integer >= 1 (number of hidden layers), got {depth!r}')
    out = []
    for name, value, allow_zero in (('weight_variance', weight_variance, False),
                                    ('bias_variance', bias_variance, True)):
        try:
            v = float(value)
        except (TypeError, ValueError):
            v = math.nan
        if isinstance(value, bool) or not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
            bound = '>= 0' if allow_zero else '> 0'
            raise ValueError(f'{name} must be a finite number {bound}, got {value!r}')
        out.append(v)
    return int(depth), out[0], out[1]


def _check_inputs(x, y):
    x = x if isinstance(x, torch.Tensor) else torch.as_tensor(x)
    y = y if isinstance(y, torch.Tensor) else torch.as_tensor(y)
    if x.dim() != 2 or y.dim() != 2:
        raise ValueError(f'x and y must be 2-D (rows x features), got shapes '
                         f'{tuple(x.shape)} and {tuple(y.shape)}')
    if x.shape[1] != y.shape[1]:
        raise ValueError(f'x and y must have the same number of features, got {x.shape[1]} '
                         f'and {y.shape[1]}')
    if x.shape[1] == 0:
        raise ValueError('x and y need at least one feature')
    return x.to(torch.float64), y.to(torch.float64)


def _relu_step(sxy, sxx, syy):
    """Arc-cosine kernels: (E[relu relu], E[relu' relu']) for the pre-activation kernel S."""
    norm2 = sxx[:, None] * syy[None, :]
    det = norm2 - sxy * sxy
    # double where: the unused branch sees a harmless argument, so no inf * 0 = nan in backward
    pos = det > 0
    sin_part = torch.where(pos, torch.sqrt(torch.where(pos, det, torch.ones_like(det))),
                           torch.zeros_like(det))  # = sqrt(S_xx S_yy) sin(theta)
    # atan2's gradient is 0/0 at (0, 0) (zero input row with s_b^2 = 0); don't rely on torch
    # masking it
    ok = (sin_part > 0) | (sxy != 0)
    theta = torch.where(ok, torch.atan2(torch.where(ok, sin_part, torch.zeros_like(det)),
                                        torch.where(ok, sxy, torch.ones_like(det))),
                        torch.zeros_like(det))
    j0 = (math.pi - theta) / _TWO_PI
    j1 = (sin_part + (math.pi - theta) * sxy) / _TWO_PI
    return j1, j0


def _kernels(x, y, depth, weight_variance, bias_variance):
    depth, sw2, sb2 = _check_hyper(depth, weight_variance, bias_variance)
    x, y = _check_inputs(x, y)
    d = x.shape[1]
    # first Dense on the input kernel x . y / d
    sxy = sw2 * (x @ y.T) / d + sb2
    sxx = sw2 * (x * x).sum(dim=1) / d + sb2
    syy = sw2 * (y * y).sum(dim=1) / d + sb2
    ntk = sxy
    for _ in range(depth):
        j1, j0 = _relu_step(sxy, sxx, syy)
        sxy = sw2 * j1 + sb2
        ntk = sxy + sw2 * ntk * j0
        # E[relu(h)^2] = S_xx / 2 on the diagonal
        sxx = sw2 * sxx / 2 + sb2
        syy = sw2 * syy / 2 + sb2
    return ntk, sxy


def fc_ntk(x, y, depth=1, weight_variance=2.0, bias_variance=0.01):
    """NTK matrix (len(x), len(y)) of an infinitely wide fully-connected ReLU net with `depth`
    hidden layers (DP-KIP uses depth=1). float64, on the inputs' device."""
    return _kernels(x, y, depth, weight_variance, bias_variance)[0]


def fc_nngp(x, y, depth=1, weight_variance=2.0, bias_variance=0.01):
    """The NNGP kernel (output covariance at initialization) of the same network."""
    return _kernels(x, y, depth, weight_variance, bias_variance)[1]


class FCNTK:
    """Callable FC-NTK kernel with fixed (depth, weight_variance, bias_variance)."""

    def __init__(self, depth=1, weight_variance=2.0, bias_variance=0.01):
        self.depth, self.weight_variance, self.bias_variance = _check_hyper(
            depth, weight_variance, bias_variance)

    def __call__(self, x, y):
        return fc_ntk(x, y, self.depth, self.weight_variance, self.bias_variance)

    def nngp(self, x, y):
        return fc_nngp(x, y, self.depth, self.weight_variance, self.bias_variance)

    def describe(self):
        layers = 'layer' if self.depth == 1 else 'layers'
        return (f'infinite-width FC-NTK, {self.depth} hidden ReLU {layers}, '
                f's_w^2={self.weight_variance:g}, s_b^2={self.bias_variance:g}')

    def __repr__(self):
        return (f'FCNTK(depth={self.depth}, weight_variance={self.weight_variance!r}, '
                f'bias_variance={self.bias_variance!r})')
