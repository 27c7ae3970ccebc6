"""Hermite polynomial features of the Gaussian kernel (DP-HP, Vinaroz et al. 2022).

For k(x, y) = exp(-(x - y)^2 / (2 sigma2)), Mehler's formula gives k(x, y) = sum_k phi_k(x) phi_k(y)
with rho = 1 / (sigma2 + sqrt(sigma2^2 + 1)) (the stable root of rho / (1 - rho^2) = 1 / (2 sigma2)).
Hence ||phi_{0..K}(x)||^2 <= k(x, x) = 1 for every truncation order K: the norm bound that the
sensitivities rely on. Computed in float64 because phi_0 underflows in float32 for large rho x^2.
"""


import torch


def hermite_rho(sigma2):
    """Mehler parameter for the squared length scale ``sigma2`` (> 0)."""
    sigma2 = torch.as_tensor(sigma2, dtype=torch.float64)
    if torch.any(sigma2 <= 0):
        raise ValueError('kernel length sigma2 must be > 0')
    return 1.0 / (sigma2 + torch.sqrt(sigma2**2 + 1.0))


def _recursion(x, order, rho):
    """phi_0..phi_order by the three-term recursion (no autograd graph needed)."""
    phi0 = (1 - rho**2) ** 0.25 * torch.exp(-rho * x**2 / (1 + rho))
    feats = [phi0]
    if order >= 1:
        feats.append(torch.sqrt(2 * rho) * x * phi0)
    # phi_{k+1} = sqrt(2 rho / (k+1)) x phi_k - rho sqrt(k / (k+1)) phi_{k-1}
    k = torch.arange(1, max(order, 1), dtype=x.dtype, device=x.device).reshape(
        -1, *([1] * rho.dim()))
    up, down = torch.sqrt(2 * rho / (k + 1)), rho * torch.sqrt(k / (k + 1))
    for i in range(order - 1):
        nxt = x * feats[-1]
        nxt.mul_(up[i]).sub_(feats[-2] * down[i])
        feats.append(nxt)
    return torch.stack(feats, dim=-1)


class _HermiteFeatures(torch.autograd.Function):
    """The recursion builds ~5 tiny graph nodes per order; with phi_k = c_k H_k(x) exp(-b x^2),
    b = rho / (1 + rho) and H_k' = 2k H_{k-1}, the derivative has the closed form
    d phi_k / dx = sqrt(2 rho k) phi_{k-1} - 2 b x phi_k, so the backward pass is one expression."""

    @staticmethod
    def forward(ctx, x, rho, order):
        with torch.no_grad():
            feats = _recursion(x, order, rho)
        ctx.save_for_backward(x, rho, feats)
        return feats

    @staticmethod
    def backward(ctx, grad):
        x, rho, feats = ctx.saved_tensors
        rho = rho.unsqueeze(-1)
        k = torch.arange(1, feats.shape[-1], dtype=feats.dtype, device=feats.device)
        dphi = -2 * rho / (1 + rho) * x.unsqueeze(-1) * feats
        dphi[..., 1:] += torch.sqrt(2 * rho * k) * feats[..., :-1]
        return (grad * dphi).sum(-1), None, None


def hermite_features(x, order, rho):
    """phi_0..phi_order of every entry of ``x``: shape ``x.shape + (order + 1,)``, dtype of ``x``.

    ``rho`` broadcasts against ``x`` (e.g. one value per column). Differentiable in ``x``.
    """
    if order < 0:
        raise ValueError('order must be >= 0')
    rho = torch.as_tensor(rho, dtype=x.dtype, device=x.device)
    if not x.requires_grad:
        return _recursion(x, order, rho)
    return _HermiteFeatures.apply(x, rho, int(order))
