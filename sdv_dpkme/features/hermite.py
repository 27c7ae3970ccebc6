"""Hermite polynomial features of the Gaussian kernel (DP-HP, Vinaroz et al. 2022).

For k(x, y) = exp(-(x - y)^2 / (2 sigma2)), Mehler's formula gives k(x, y) = sum_k phi_k(x) phi_k(y)
with rho = 1 / (sigma2 + sqrt(sigma2^2 + 1)) (the stable root of rho / (1 - rho^2) = 1 / (2 sigma2)).
Hence ||phi_{0..K}(x)||^2 <= k(x, x) = 1 for every truncation order K: the norm bound that the
sensitivities rely on. Computed in float64 because phi_0 underflows in float32 for large rho x^2.
"""

import math

import torch


def hermite_rho(sigma2):
    """Mehler parameter for the squared length scale ``sigma2`` (> 0)."""
    sigma2 = torch.as_tensor(sigma2, dtype=torch.float64)
    if torch.any(sigma2 <= 0):
        raise ValueError('kernel length sigma2 must be > 0')
    return 1.0 / (sigma2 + torch.sqrt(sigma2**2 + 1.0))


def hermite_features(x, order, rho):
    """phi_0..phi_order of every entry of ``x``: shape ``x.shape + (order + 1,)``, dtype of ``x``.

    ``rho`` broadcasts against ``x`` (e.g. one value per column). Differentiable in ``x``.
    """
    if order < 0:
        raise ValueError('order must be >= 0')
    rho = torch.as_tensor(rho, dtype=x.dtype, device=x.device)
    phi0 = (1 - rho**2) ** 0.25 * torch.exp(-rho * x**2 / (1 + rho))
    feats = [phi0]
    if order >= 1:
        feats.append(torch.sqrt(2 * rho) * x * phi0)
    for k in range(1, order):
        # phi_{k+1} = sqrt(2 rho / (k+1)) x phi_k - rho sqrt(k / (k+1)) phi_{k-1}
        feats.append(
            torch.sqrt(2 * rho / (k + 1)) * x * feats[k] - rho * math.sqrt(k / (k + 1)) * feats[k - 1]
        )
    return torch.stack(feats, dim=-1)
