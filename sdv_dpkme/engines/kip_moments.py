"""KIP from released moments: for the LINEAR kernel on fixed features, the whole-data KIP loss
reads the private rows only through two sums, so one Gaussian release of them replaces the T
DP-SGD releases, and the support is then optimised with no further access to private data.

Algorithm box (linear kernel k(a, b) = a . b; features phi_i fixed, e.g. ScatterNet):
  input: private features phi_i scaled to norm <= 1 (``unit_rows``: phi_i / ||phi_i||, a per-row
         map that reads no other row), labels y_i centred one-hot (K classes); budget shares.
  1. C <- sum_i phi_i phi_i^T + noise,  replace-one L2 sensitivity sqrt(2):
            ||a a^T - b b^T||_F^2 = |a|^4 + |b|^4 - 2 (a . b)^2 <= 2;
         released as the upper triangle with off-diagonal entries times sqrt(2) (that vector's
         norm is C's Frobenius norm), so off-diagonal noise is sqrt(2) smaller than naive.
     B <- sum_i phi_i y_i^T + noise,  sensitivity 2 sqrt(1 - 1/K):
            ||a y^T - b y'^T||_F^2 = |a|^2|y|^2 + |b|^2|y'|^2 - 2 (a . b)(y . y') <= 4 |y|^2
         (worst case: same label, b = -a).
     Both are Gaussian releases of the fit's accountant (shares of one plan).
  2. C <- PSD part of C / n + rho I, B <- B / n   (post-processing; n is public under
     replace-one). Keeps the loss bounded below. Default rho = 0.2 x the edge of the noise's
     spectrum, 2 s sqrt(p) with s = sigma / n the off-diagonal noise std of C / n (public):
     below it C's eigenvalues are noise, so rho follows the noise, not a constant.
  3. for t = 1..T (post-processing: no private access):
       F <- features(X_s);  W <- F^T (F F^T + lambda tr(F F^T)/m I)^-1 Y_s
       L <- tr(W^T C W) - 2 tr(W^T B)    [= (1/n) sum_i ||y_i - W^T phi_i||^2 - const
                                           without noise: the KIP loss on ALL rows]
       X_s <- Adam(X_s, dL/dX_s)
Nothing here knows images or SDV: the caller supplies the features and the map from support
parameters to features.
"""

import math

import numpy as np
import torch

GRAM = 'kip_feature_gram'
CROSS = 'kip_feature_label_sums'


#: rows are scaled to this norm, a hair below 1, so float32 rounding cannot push one above 1
UNIT = 1 - 1e-6


def unit_rows(phi, eps=1e-12):
    """Every row scaled to norm ``UNIT`` (all-zero rows stay 0): a per-row map, so
    ||phi_i|| <= 1 holds for any input without clipping."""
    phi = torch.as_tensor(phi)
    norms = phi.norm(dim=-1, keepdim=True)
    return phi * (UNIT / torch.clamp(norms, min=eps))


def gram_sensitivity():
    """Replace-one L2 sensitivity of sum_i phi_i phi_i^T (Frobenius) for ||phi_i|| <= 1."""
    return math.sqrt(2.0)


def cross_sensitivity(n_classes):
    """Replace-one L2 sensitivity of sum_i phi_i y_i^T for ||phi_i|| <= 1, y centred one-hot."""
    return 2.0 * math.sqrt(1.0 - 1.0 / n_classes)


def pack_symmetric(matrix):
    """[diag, sqrt(2) * strict upper triangle]: a vector whose norm is the Frobenius norm."""
    p = matrix.shape[0]
    rows, cols = torch.triu_indices(p, p, offset=1)
    return torch.cat([torch.diagonal(matrix), math.sqrt(2.0) * matrix[rows, cols]])


def unpack_symmetric(vector, p):
    """Inverse of ``pack_symmetric``."""
    rows, cols = torch.triu_indices(p, p, offset=1)
    out = torch.zeros(p, p, dtype=vector.dtype)
    off = vector[p:] / math.sqrt(2.0)
    out[rows, cols] = off
    out[cols, rows] = off
    out[torch.arange(p), torch.arange(p)] = vector[:p]
    return out


def feature_moments(phi, y, chunk=4096):
    """(sum phi_i phi_i^T, sum phi_i y_i^T) in float64, ``chunk`` rows at a time."""
    n, p = phi.shape
    gram = torch.zeros(p, p, dtype=torch.float64)
    cross = torch.zeros(p, y.shape[1], dtype=torch.float64)
    for start in range(0, n, chunk):
        f = phi[start:start + chunk].to(torch.float64)
        gram += f.T @ f
        cross += f.T @ y[start:start + chunk].to(torch.float64)
    return gram, cross


#: default ridge in units of the noise spectrum's edge (measured on MNIST, eps 1 and 10)
RIDGE_PER_EDGE = 0.2


def noise_edge(noise_multiplier, p, n):
    """Edge 2 s sqrt(p) of the spectrum of the noise in the released C / n (Wigner
    semicircle): off-diagonal entries carry N(0, s^2), s = noise_multiplier * sensitivity
    / sqrt(2) / n (the packing's 1/sqrt(2)). Public: sigma, p and n are."""
    s = float(noise_multiplier) * gram_sensitivity() / math.sqrt(2.0) / n
    return 2.0 * s * math.sqrt(p)


def auto_ridge(noise_multiplier, p, n):
    """The default rho of step 2."""
    return RIDGE_PER_EDGE * noise_edge(noise_multiplier, p, n)


def release_moments(phi, y, ledger, gram_share=0.5, description=''):
    """Step 1: the two noisy sums, recorded in the ledger. ``phi`` rows must have norm <= 1
    (checked: the sensitivities rest on it); ``y`` centred one-hot. Returns (C, B), float64,
    and the Gram release's noise multiplier."""
    n_classes = y.shape[1]
    norms = phi.to(torch.float64).norm(dim=1)
    if len(norms) and not (torch.isfinite(norms).all() and float(norms.max()) <= 1):
        raise ValueError('release_moments needs finite feature rows of norm <= 1 (use unit_rows '
                         'on finite features; the caller validates the inputs)')
    if not 0 < gram_share < 1:
        raise ValueError(f'gram_share must be in (0, 1), got {gram_share!r}')
    gram, cross = feature_moments(phi, y)
    p = gram.shape[0]
    sigmas = ledger.accountant.calibrate({GRAM: (gram_share, 1), CROSS: (1 - gram_share, 1)})
    mech = ledger.mechanism  # the fit's Gaussian mechanism: its accountant, its secure noise
    packed = mech.release(
        pack_symmetric(gram), name=GRAM, sensitivity=gram_sensitivity(),
        noise_multiplier=sigmas[GRAM],
        description=f'sum of phi phi^T over the rows ({p} x {p} symmetric, upper triangle){description}',
        details={'feature_norm': '<= 1 (rows scaled to unit norm)'},
    )
    noisy_cross = mech.release(
        cross, name=CROSS, sensitivity=cross_sensitivity(n_classes),
        noise_multiplier=sigmas[CROSS],
        description=f'sum of phi y^T over the rows ({p} x {n_classes}, centred one-hot labels){description}',
        details={'feature_norm': '<= 1 (rows scaled to unit norm)'},
    )
    return unpack_symmetric(packed, p), noisy_cross, float(sigmas[GRAM])


def loss_matrices(gram, cross, n, ridge):
    """Step 2 (post-processing): (PSD part of gram / n + ridge I, cross / n)."""
    evals, evecs = torch.linalg.eigh(gram / n)
    psd = (evecs * evals.clamp(min=0)) @ evecs.T
    psd = (psd + psd.T) / 2 + float(ridge) * torch.eye(len(psd), dtype=psd.dtype)
    return psd, cross / n


def support_weights(support_features, support_y, regularization):
    """W = F^T (F F^T + lambda tr(F F^T)/m I)^-1 Y_s: the linear KRR predictor of the support."""
    m = support_features.shape[0]
    k_ss = support_features @ support_features.T
    ridge = abs(regularization) * torch.trace(k_ss) / m
    eye = torch.eye(m, dtype=k_ss.dtype, device=k_ss.device)
    return support_features.T @ torch.linalg.solve(k_ss + ridge * eye, support_y)


def moment_loss(support_features, support_y, gram, cross, regularization):
    """Step 3's loss tr(W^T C W) - 2 tr(W^T B)."""
    w = support_weights(support_features, support_y, regularization)
    return (w * (gram @ w)).sum() - 2 * (w * cross).sum()


def distil(support, features_of, support_y, gram, cross, regularization, steps, learning_rate,
           project=None, progress=None):
    """Step 3: Adam on the support parameters ``support`` (a leaf tensor); ``features_of`` maps
    them to (m, p) float64 features of norm <= 1; ``project`` (optional) runs after each step.
    Returns the loss history."""
    optimizer = torch.optim.Adam([support], lr=float(learning_rate))
    history = []
    for _ in (progress or (lambda r: r))(range(int(steps))):
        loss = moment_loss(features_of(support), support_y, gram, cross, regularization)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if project is not None:
            with torch.no_grad():
                project(support)
        history.append(loss.item())
    return np.asarray(history)
