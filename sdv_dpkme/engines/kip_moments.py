"""KIP from released moments: for the LINEAR kernel on fixed features, the whole-data KIP loss
reads the private rows only through two sums, so one Gaussian release of them replaces the T
DP-SGD releases, and the support is then optimised with no further access to private data.

Algorithm box (linear kernel k(a, b) = a . b; features phi_i fixed, e.g. ScatterNet):
  input: private features phi_i scaled to norm <= 1 (``unit_rows``: phi_i / ||phi_i||, a per-row
         map that reads no other row), labels y_i centred one-hot (K classes); c in (0, 1).
  1. ONE Gaussian release of both sums. With c = gram_weight (public) and yhat_i = y_i / |y_i|
     (|y_i| = sqrt(1 - 1/K) for every label), psi_i = [sqrt(c) phi_i, sqrt(1 - c) yhat_i] has
     |psi_i| <= 1, and the release is the phi-phi and phi-y blocks of sum_i psi_i psi_i^T:
            v = [pack(c sum phi phi^T), sqrt(2) sqrt(c (1 - c)) / |y| sum phi y^T]
     (``pack``: upper triangle, off-diagonal entries times sqrt(2), so |v| is the Frobenius norm
     of those blocks of the symmetric matrix). Replace-one L2 sensitivity sqrt(2):
            |v(a) - v(b)| <= ||psi_a psi_a^T - psi_b psi_b^T||_F,
            ||a a^T - b b^T||_F^2 = |a|^4 + |b|^4 - 2 (a . b)^2 <= 2.
     Then C = the first block / c, B = the second / (sqrt(2 c (1 - c)) / |y|). The separate
     releases' worst cases (sensitivities sqrt(2) and 2|y|) come from different neighbours, and
     one sqrt(2) covers both: at c = 0.85, C's noise is 17% and B's 1% below two releases
     that split the same budget equally.
  2. C <- PSD part of C / n + rho I, B <- B / n   (post-processing; n is public under
     replace-one). Keeps the loss bounded below. Default rho = 0.1 x the edge of the noise's
     spectrum, 2 s sqrt(p) with s = sigma / (c n) the off-diagonal noise std of C / n (public):
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

MOMENTS = 'kip_feature_moments'
#: default c: the Gram's share of each row's squared norm in the joint release (measured on
#: a validation split of the MNIST and FashionMNIST training images, benchmarks/results/images.md)
GRAM_WEIGHT = 0.85


#: rows are scaled to this norm, a hair below 1, so float32 rounding cannot push one above 1
UNIT = 1 - 1e-6


def unit_rows(phi, eps=1e-12):
    """Every row scaled to norm ``UNIT`` (all-zero rows stay 0): a per-row map, so
    ||phi_i|| <= 1 holds for any input without clipping."""
    phi = torch.as_tensor(phi)
    norms = phi.norm(dim=-1, keepdim=True)
    return phi * (UNIT / torch.clamp(norms, min=eps))


def moments_sensitivity():
    """Replace-one L2 sensitivity of the joint release of step 1 (rows of norm <= 1)."""
    return math.sqrt(2.0)


def _label_norm(n_classes):
    return math.sqrt(1.0 - 1.0 / n_classes)  # |y| of every centred one-hot label


def cross_scale(gram_weight, n_classes):
    """The factor on sum phi y^T in the released vector (see step 1)."""
    c = float(gram_weight)
    return math.sqrt(2.0 * c * (1.0 - c)) / _label_norm(n_classes)


def joint_vector(gram, cross, gram_weight):
    """Step 1's released vector v from the two sums (any number of rows)."""
    c = float(gram_weight)
    return torch.cat([pack_symmetric(c * gram),
                      cross_scale(c, cross.shape[1]) * cross.reshape(-1)])


def split_joint(vector, p, n_classes, gram_weight):
    """Inverse of ``joint_vector``: (sum phi phi^T, sum phi y^T)."""
    c = float(gram_weight)
    n_gram = p * (p + 1) // 2
    gram = unpack_symmetric(vector[:n_gram], p) / c
    cross = vector[n_gram:].reshape(p, n_classes) / cross_scale(c, n_classes)
    return gram, cross


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


#: default ridge in units of the noise spectrum's edge (measured on a validation split of the
#: MNIST and FashionMNIST training images, eps 1 and 10)
RIDGE_PER_EDGE = 0.1


def noise_edge(gram_noise_std, p, n):
    """Edge 2 s sqrt(p) of the spectrum of the noise in the released C / n (Wigner
    semicircle), s = gram_noise_std / n, the off-diagonal noise std of C / n. Public: it
    follows from sigma, c, p and n."""
    return 2.0 * float(gram_noise_std) / n * math.sqrt(p)


def auto_ridge(gram_noise_std, p, n):
    """The default rho of step 2."""
    return RIDGE_PER_EDGE * noise_edge(gram_noise_std, p, n)


def release_moments(phi, y, ledger, gram_weight=GRAM_WEIGHT, description=''):
    """Step 1: the joint release, recorded in the ledger. ``phi`` rows must have norm <= 1
    (checked: the sensitivity rests on it); ``y`` centred one-hot. Returns (C, B) in float64
    and the off-diagonal noise std of C (for the default ridge)."""
    n_classes = y.shape[1]
    norms = phi.to(torch.float64).norm(dim=1)
    if len(norms) and not (torch.isfinite(norms).all() and float(norms.max()) <= 1):
        raise ValueError('release_moments needs finite feature rows of norm <= 1 (use unit_rows '
                         'on finite features; the caller validates the inputs)')
    if not 0 < gram_weight < 1:
        raise ValueError(f'gram_weight must be in (0, 1), got {gram_weight!r}')
    label_norms = y.to(torch.float64).norm(dim=1)
    if len(label_norms) and float(label_norms.max()) > _label_norm(n_classes) * (1 + 1e-9):
        raise ValueError('release_moments needs centred one-hot labels (norm sqrt(1 - 1/K))')
    gram, cross = feature_moments(phi, y)
    p = gram.shape[0]
    sigma = ledger.accountant.calibrate({MOMENTS: (1.0, 1)})[MOMENTS]
    noisy = ledger.mechanism.release(  # the fit's Gaussian mechanism: its accountant and noise
        joint_vector(gram, cross, gram_weight), name=MOMENTS,
        sensitivity=moments_sensitivity(), noise_multiplier=sigma,
        description=(f'sums of phi phi^T ({p} x {p} symmetric, upper triangle) and phi y^T '
                     f'({p} x {n_classes}, centred one-hot labels) in one release, rows '
                     f'[sqrt(c) phi, sqrt(1 - c) y / |y|] with c = {gram_weight:g}{description}'),
        details={'feature_norm': '<= 1 (rows scaled to unit norm)',
                 'gram_weight': float(gram_weight)},
    )
    gram, cross = split_joint(noisy, p, n_classes, gram_weight)
    # packed off-diagonal entries carry sigma sqrt(2) / sqrt(2), then / c
    return gram, cross, float(sigma) / float(gram_weight)


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
           project=None, progress=None, penalty=None):
    """Step 3: Adam on the support parameters ``support`` (a leaf tensor); ``features_of`` maps
    them to (m, p) float64 features of norm <= 1; ``project`` (optional) runs after each step;
    ``penalty`` (optional) maps the support to a term added to the loss (it must read no
    private data). Returns the loss history."""
    optimizer = torch.optim.Adam([support], lr=float(learning_rate))
    history = []
    for _ in (progress or (lambda r: r))(range(int(steps))):
        loss = moment_loss(features_of(support), support_y, gram, cross, regularization)
        if penalty is not None:
            loss = loss + penalty(support)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if project is not None:
            with torch.no_grad():
                project(support)
        history.append(loss.item())
    return np.asarray(history)
