"""Weights on points whose embeddings approach released ones (post-processing of the releases).

Least squares (minimum norm, or inside an L1 ball) and the probability simplex, solved exactly or
by FISTA with exact projections; shared by the reweighting engine (``engines.reweighting``) and
the KME engine's reweighted pools (``engines.kme_training``). Points are public rows or
generated ones, never private rows.
"""

import math

import numpy as np
import torch

from sdv_dpkme.features.blocks import ProductKernelMap


def features_of(feature_map, rows, chunk_rows=4096):
    """phi of every row (public rows only), (M, dim)."""
    rows = torch.as_tensor(np.asarray(rows, dtype=float))
    return torch.cat([feature_map(rows[s:s + chunk_rows]).double()
                      for s in range(0, len(rows), chunk_rows)])


def min_norm_weights(phi_z, beta):
    """argmin ||w|| among the minimisers of ||Phi_Z^T w - beta|| (least squares)."""
    return torch.linalg.lstsq(phi_z.T, beta[:, None], driver='gelsd').solution[:, 0]


def project_simplex(v, radius=1.0):
    """Euclidean projection onto {u >= 0, sum u = radius} (sort-based, exact)."""
    u, _ = torch.sort(v, descending=True)
    cumulative = u.cumsum(0) - radius
    index = torch.arange(1, len(v) + 1, dtype=v.dtype)
    rho = int((u - cumulative / index > 0).nonzero().max())
    theta = cumulative[rho] / (rho + 1)
    return (v - theta).clamp(min=0.0)


def project_l1_ball(v, radius):
    """Euclidean projection onto {||u||_1 <= radius}."""
    if v.abs().sum() <= radius:
        return v.clone()
    return v.sign() * project_simplex(v.abs(), radius)


def constrained_weights(phi_z, beta, project, iterations=500):
    """argmin_{w in C} ||Phi_Z^T w - beta||^2 by FISTA with the exact projection ``project``."""
    m = phi_z.shape[0]
    # Lipschitz constant of the gradient 2 Phi_Z (Phi_Z^T w - beta): 2 ||Phi_Z||_2^2
    lipschitz = 2.0 * float(torch.linalg.matrix_norm(phi_z, ord=2)) ** 2
    if lipschitz == 0:
        return project(torch.zeros(m, dtype=phi_z.dtype))
    w = project(torch.full((m,), 1.0 / m, dtype=phi_z.dtype))
    y, t = w.clone(), 1.0
    for _ in range(iterations):
        gradient = 2.0 * phi_z @ (phi_z.T @ y - beta)
        w_next = project(y - gradient / lipschitz)
        t_next = (1 + math.sqrt(1 + 4 * t * t)) / 2
        y = w_next + ((t - 1) / t_next) * (w_next - w)
        w, t = w_next, t_next
    return w


def quadratic_simplex(gram, linear, iterations=500):
    """argmin over the simplex of w^T G w - 2 w^T b (FISTA), for G positive semi-definite."""
    m = len(linear)
    # ||G||_F >= the top eigenvalue, in O(m^2) instead of an O(m^3) eigendecomposition; kernel
    # matrices of similar rows have one dominant eigenvalue, so it is nearly tight
    lipschitz = 2.0 * float(torch.linalg.matrix_norm(gram))
    w = torch.full((m,), 1.0 / m, dtype=gram.dtype)
    if lipschitz == 0:
        return w
    y, t = w.clone(), 1.0
    for _ in range(iterations):
        w_next = project_simplex(y - 2.0 * (gram @ y - linear) / lipschitz)
        t_next = (1 + math.sqrt(1 + 4 * t * t)) / 2
        y = w_next + ((t - 1) / t_next) * (w_next - w)
        w, t = w_next, t_next
    return w


def simplex_weights_for_terms(points, terms):
    """Probability weights on ``points`` whose embeddings approach several released ones:
    minimise sum_t weight_t ||sum_g w_g phi_t(p_g) - target_t||^2 over the simplex, for
    ``terms`` = [(feature_map, target, weight)]. Post-processing of the targets."""
    gram = torch.zeros(len(points), len(points), dtype=torch.float64)
    linear = torch.zeros(len(points), dtype=torch.float64)
    rows = torch.as_tensor(np.asarray(points, dtype=float))
    product_blocks = {}  # per-block kernels the product maps share
    for feature_map, target, weight in terms:
        if hasattr(feature_map, 'gram'):  # per-column kernels: no (M, dim) feature matrix
            cache = product_blocks if isinstance(feature_map, ProductKernelMap) else None
            gram += weight * feature_map.gram(rows, rows, cache=cache).double()
            if hasattr(feature_map, 'dot'):
                linear += weight * feature_map.dot(rows, target).double()
            else:
                linear += weight * features_of(feature_map, points) @ target
        else:
            phi = features_of(feature_map, points)
            gram += weight * phi @ phi.T
            linear += weight * phi @ target
    return quadratic_simplex(gram, linear)


def embedding_weights(phi_z, beta, l1_bound=None):
    """(signed weights, sampling probabilities) on the points with features ``phi_z``.

    Signed: the minimum-norm least-squares weights (Algorithm 1's w = A^T beta), or the closest
    point of the L1 ball of radius ``l1_bound``. Sampling: the probability vector whose
    embedding is closest to beta (FISTA on the simplex). Both are post-processing of beta.
    """
    if l1_bound is None:
        signed = min_norm_weights(phi_z, beta)
    else:
        signed = constrained_weights(phi_z, beta, lambda v: project_l1_ball(v, l1_bound))
    probabilities = constrained_weights(phi_z, beta, project_simplex)
    return signed, probabilities
