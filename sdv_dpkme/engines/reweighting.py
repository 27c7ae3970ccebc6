"""Reweighting engine (Balog, Tolstikhin & Schölkopf, ICML 2018): a DP mean embedding released in
a small subspace, then expressed as weights on points that never came from the private rows.

Algorithm 1 (public rows z_1..z_M; the paper's §4, perturbation in the synthetic-data subspace):
  1. basis: K_LL = U diag(lambda) U^T on landmarks L (the public rows, or a public random subset
     of them when M is large); keep the F directions with lambda_f > tolerance, A = diag(lambda_F
     ^-1/2) U_F^T, so b_f = sum_l A_fl k(l, .) is orthonormal in the RKHS. Public points only.
  2. one pass over the private rows: alpha = A kbar, kbar_l = (1/N) sum_n k(l, x_n), i.e. the
     mean of phi(x) = A k(L, x), the coordinates of x's kernel function projected on the basis;
     ||phi(x)|| <= sqrt(k(x, x)) <= 1, so replacing one row moves alpha by at most 2/N.
  3. beta = alpha + N(0, (sigma 2/N)^2 I_F), one Gaussian release through the accountant.
  4. weights on the public rows (post-processing): w = argmin ||Phi_Z^T w - beta||, the
     minimum-norm solution (= A^T beta when Z = L), optionally inside the L1 ball ||w||_1 <= C of
     the paper's appendix; and the closest probability vector on the rows, for resampling.
Algorithm 2 (no public rows; the paper's §5): phi = random Fourier features in the [cos, sin] form
(||phi|| = 1), beta = mean phi + N(0, (sigma 2/N)^2 I_J), then a reduced set of weighted points
found from beta alone (Frank-Wolfe over public-noise rows, then joint refinement of points and
simplex weights; post-processing).

Nothing here knows SDV: rows are encoded in the unit box with a public column layout.
"""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from sdv_dpkme.engines.accumulate import class_sums
from sdv_dpkme.engines.adam import Adam
from sdv_dpkme.engines.errors import EngineInputError
from sdv_dpkme.engines.simplex_weights import embedding_weights, features_of, min_norm_weights
from sdv_dpkme.features.blocks import project_unit_ball

EIGEN_FLOOR = 1e-10  # relative: directions below it are numerically zero whatever the noise
FAR = 1e150  # |scaled value| cap: squares and their sums stay finite in float64


class GaussianProductKernel:
    """k(x, y) = exp(-||s * (x - y)||^2 / 2) = prod over encoded columns of 1-D Gaussian kernels.

    k(x, x) = 1 for every x, the bound Algorithm 1's 2/N sensitivity needs.
    """

    def __init__(self, scales):
        self.scales = torch.as_tensor(np.asarray(scales, dtype=float), dtype=torch.float64)
        if self.scales.ndim != 1 or not torch.isfinite(self.scales).all() \
                or (self.scales < 0).any():
            raise EngineInputError('kernel scales must be a vector of finite numbers >= 0')

    @classmethod
    def for_blocks(cls, blocks, n_columns, length_scale):
        """Per column kernel on the [0, 1] encoding, with length ``length_scale * sqrt(B)`` for
        B columns, so the exponent is the mean (not the sum) of the per-column distances: a
        one-hot mismatch counts like a numeric value across its whole public range."""
        if not (isinstance(length_scale, (int, float)) and math.isfinite(length_scale)
                and length_scale > 0):
            raise EngineInputError(f'length_scale must be a number > 0, got {length_scale!r}')
        scales = np.zeros(n_columns)
        unit = 1.0 / (length_scale * math.sqrt(len(blocks)))
        for block in blocks:
            cols = list(block.columns)
            scales[cols] = unit / math.sqrt(2) if block.kind == 'categorical' else unit
        return cls(scales)

    def __call__(self, a, b):
        # clamped so that squares stay finite: a row of +-1e308 or inf is just far from everything
        a = (torch.as_tensor(a, dtype=torch.float64) * self.scales).clamp(-FAR, FAR)
        b = (torch.as_tensor(b, dtype=torch.float64) * self.scales).clamp(-FAR, FAR)
        sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
        return torch.exp(-0.5 * sq.clamp(min=0.0))

    def row_sums(self, a, b, chunk_rows=1024):
        """sum_j k(a_i, b_j) for every row of ``a``, in place chunk by chunk (evaluation of
        large sums: a few times faster than summing ``self(a, b)``)."""
        a = (torch.as_tensor(np.asarray(a, dtype=float)) * self.scales).clamp(-FAR, FAR)
        b = (torch.as_tensor(np.asarray(b, dtype=float)) * self.scales).clamp(-FAR, FAR)
        sq_b = (b * b).sum(1)
        out = torch.empty(len(a), dtype=torch.float64)
        for s in range(0, len(a), chunk_rows):
            part = a[s:s + chunk_rows]
            gram = part @ b.T
            gram.mul_(2).sub_((part * part).sum(1)[:, None]).sub_(sq_b[None, :])
            out[s:s + chunk_rows] = gram.clamp_(max=0.0).mul_(0.5).exp_().sum(1)
        return out

    def describe(self):
        return f'product of per-column Gaussian kernels ({len(self.scales)} encoded columns)'


class _SummedFeatures:
    """The feature-map interface of the one pass (``engines.accumulate``): class-wise sums of
    the rows' features, each projected onto the unit ball."""

    def class_sums(self, x, y, project=True):
        phi = self(x).double()
        return y.T @ (project_unit_ball(phi) if project else phi)


class RandomFeatureMap(_SummedFeatures):
    """phi(x) = [cos(W s x); sin(W s x)] / sqrt(J/2), W ~ N(0, I): E phi(x).phi(y) = k(x, y) for the
    Gaussian product kernel, and ||phi(x)|| = 1 exactly (never cos(wx + b), whose norm reaches
    sqrt(2)). W is drawn from a public generator."""

    def __init__(self, kernel, n_features, generator):
        if n_features < 2 or n_features % 2:
            raise EngineInputError(f'n_features must be an even integer >= 2, got {n_features}')
        self.n_features = int(n_features)
        self.frequencies = torch.randn(n_features // 2, len(kernel.scales), generator=generator,
                                       dtype=torch.float64) * kernel.scales
        self.dim = self.n_features

    def __call__(self, x):
        x = torch.as_tensor(x, dtype=self.frequencies.dtype).clamp(-FAR, FAR)
        proj = x @ self.frequencies.T.to(x.dtype)
        return torch.cat([proj.cos(), proj.sin()], 1) / math.sqrt(self.n_features / 2)

    def describe(self):
        return (f'{self.n_features} random Fourier features [cos, sin] of the product Gaussian '
                'kernel')


@dataclass
class Basis(_SummedFeatures):
    """Orthonormal basis b_f = sum_l A_fl k(l, .) of the span of the landmarks' kernel functions."""

    kernel: GaussianProductKernel
    landmarks: torch.Tensor  # (L, d), public rows
    transform: torch.Tensor  # A, (F, L)
    eigenvalues: torch.Tensor  # kept eigenvalues of K_LL, descending

    @property
    def dim(self):
        return self.transform.shape[0]

    def __call__(self, x):
        """phi(x) = A k(L, x), the basis coordinates of k(x, .) projected on the span."""
        return self.kernel(x, self.landmarks) @ self.transform.T

    def describe(self):
        return (f'{self.kernel.describe()}, projected on {self.dim} orthonormal directions of the '
                f'span of {len(self.landmarks)} public rows')


def public_basis(kernel, landmarks, noise_std=0.0, tolerance='auto'):
    """Basis from K_LL alone (eigendecomposition). ``tolerance='auto'`` keeps direction f when
    lambda_f / L > noise_std^2: a mean of landmark kernel functions has a coordinate of about
    sqrt(lambda_f / L) there, so a weaker direction would carry more noise than signal. A float
    keeps lambda_f > tolerance * lambda_max. Directions below EIGEN_FLOOR * lambda_max always go."""
    landmarks = torch.as_tensor(landmarks, dtype=torch.float64)
    gram = kernel(landmarks, landmarks)
    eigenvalues, vectors = torch.linalg.eigh(gram)
    eigenvalues, vectors = eigenvalues.flip(0), vectors.flip(1)
    top = float(eigenvalues[0])
    floor = EIGEN_FLOOR * top
    if tolerance == 'auto':
        floor = max(floor, len(landmarks) * float(noise_std) ** 2)
    else:
        floor = max(floor, float(tolerance) * top)
    keep = eigenvalues > floor
    if not keep.any():  # the strongest direction always stays
        keep[0] = True
    kept = eigenvalues[keep]
    transform = vectors[:, keep].T / kept.sqrt()[:, None]
    return Basis(kernel, landmarks, transform, kept)


def mean_features(feature_map, x, verbose=False):
    """(1/N) sum_n phi(x_n): the one chunked pass of ``engines.accumulate``, each row's features
    projected onto the unit ball, so the 2/N bound holds in floating point too."""
    if len(x) == 0:
        raise EngineInputError('cannot embed an empty table')
    sums = class_sums(np.asarray(x, dtype=float), None, 1, [feature_map], verbose=verbose)
    return sums.means()[0][0]


def release_embedding(x, feature_map, ledger, name, verbose=False):
    """One Gaussian release of the mean features, sensitivity 2/N (replace-one, ||phi|| <= 1),
    with the whole remaining budget. Returns (beta, noise std)."""
    n = len(x)
    sigma = ledger.accountant.calibrate({name: (1.0, 1)})[name]
    mean = mean_features(feature_map, x, verbose=verbose)
    beta = ledger.mechanism.release(mean, name=name, description=feature_map.describe(),
                                    sensitivity=2.0 / n, noise_multiplier=sigma)
    return beta, sigma * 2.0 / n


def noise_std(ledger, n):
    """The std the single release will have (public: the budget and n)."""
    return ledger.accountant.calibrate({'_': (1.0, 1)})['_'] * 2.0 / n


# ---------------------------------------------------------------------------- algorithm 1
@dataclass
class Algorithm1Settings:
    """Public settings of Algorithm 1."""

    max_basis_rows: int = 3000
    tolerance: object = 'auto'
    l1_bound: float = None


def fit_public(x, z, kernel, ledger, settings, rng, verbose=False):
    """Algorithm 1: (signed weights, sampling probabilities, basis, notes) for the public rows z."""
    x = np.asarray(x, dtype=float)
    z = np.asarray(z, dtype=float)
    if len(z) == 0:
        raise EngineInputError('public_data has no rows')
    if len(z) > settings.max_basis_rows:  # a public choice: the model RNG, public rows only
        pick = torch.randperm(len(z), generator=rng)[:settings.max_basis_rows]
        landmarks = z[np.sort(pick.numpy())]
    else:
        landmarks = z
    std = noise_std(ledger, len(x)) if ledger.accountant.private else 0.0
    basis = public_basis(kernel, landmarks, std, settings.tolerance)
    beta, _ = release_embedding(x, basis, ledger, 'public_basis_embedding', verbose)
    phi_z = features_of(basis, z)
    signed, probabilities = embedding_weights(phi_z, beta, settings.l1_bound)
    notes = [f'Algorithm 1 basis: {basis.dim} orthonormal directions of the span of '
             f'{len(landmarks)} public rows' + (f' (a random subset of the {len(z)} given)'
                                                if len(landmarks) < len(z) else '')
             + f', kept by eigenvalue (tolerance {settings.tolerance!r}); built from public rows '
             'only.']
    return signed, probabilities, basis, notes


# ---------------------------------------------------------------------------- algorithm 2
@dataclass
class Algorithm2Settings:
    """Public settings of Algorithm 2 (random features, then a reduced set)."""

    n_features: int = 4000
    n_points: int = 1000
    steps: int = 300
    learning_rate: float = 0.05


def random_rows(blocks, n_columns, n, rng):
    """Public noise in the encoded layout: uniform numeric values, 0/1 null indicators, and a
    uniform in-domain bucket per one-hot block (never the last, out-of-domain, one)."""
    rows = torch.zeros(n, n_columns, dtype=torch.float64)
    for block in blocks:
        cols = list(block.columns)
        if block.kind == 'categorical':
            buckets = max(1, len(cols) - 1)
            pick = torch.randint(buckets, (n,), generator=rng)
            rows[torch.arange(n), torch.as_tensor(cols)[pick]] = 1.0
        else:
            rows[:, cols[0]] = torch.rand(n, generator=rng, dtype=torch.float64)
            if len(cols) > 1:
                rows[:, cols[1]] = (torch.rand(n, generator=rng) < 0.5).double()
    return rows


def frank_wolfe(phi_pool, beta, n_points, verbose=False):
    """Simplex weights on at most ``n_points`` pool rows whose embedding approaches beta:
    Frank-Wolfe with exact line search (each step adds the pool row best aligned with the
    residual), i.e. kernel herding towards the noisy embedding."""
    weights = torch.zeros(len(phi_pool), dtype=torch.float64)
    weights[int((phi_pool @ beta).argmax())] = 1.0
    current = phi_pool[int(weights.argmax())].clone()
    for _ in tqdm(range(4 * n_points), desc='Reduced set (choice)', disable=not verbose,
                  leave=False):
        if int((weights > 0).sum()) >= n_points:
            break
        i = int((phi_pool @ (current - beta)).argmin())
        step = phi_pool[i] - current
        size = float(-(current - beta) @ step / (step @ step).clamp(min=1e-300))
        size = min(max(size, 0.0), 1.0)
        if size == 0.0:
            break
        weights *= 1 - size
        weights[i] += size
        current = current + size * step
    return weights


def reduced_set(fmap, beta, blocks, n_columns, settings, rng, verbose=False):
    """Points (encoded rows) and simplex weights whose embedding is close to beta.

    1. a pool of public-noise rows; Frank-Wolfe on the simplex over it picks at most
       ``n_points`` of them with weights (valid rows, categories included);
    2. ``steps`` of Adam on the picked points (numeric values through a sigmoid, so they stay
       in [0, 1]; one-hot blocks as the argmax of a softmax, with the softmax's gradient) and on
       the weights (softmax);
    3. the weights are refitted on the final points (FISTA on the simplex).
    Only beta is used: post-processing of the release.
    """
    pool = random_rows(blocks, n_columns, max(4 * settings.n_points, 2000), rng)
    chosen = frank_wolfe(features_of(fmap, pool), beta, settings.n_points, verbose)
    keep = chosen > 0
    points, start = pool[keep], chosen[keep]
    numeric = [c for b in blocks if b.kind == 'numeric' for c in b.columns[:1]]
    # the last bucket of a one-hot block is the out-of-domain one: never a point's value
    categorical = [list(b.columns)[:-1] for b in blocks if b.kind == 'categorical'
                   and b.width > 1]
    values = points[:, numeric].clamp(1e-4, 1 - 1e-4)
    logits = torch.log(values / (1 - values)).requires_grad_()
    buckets = [(2.0 * points[:, cols]).requires_grad_() for cols in categorical]
    scores = torch.log(start).requires_grad_()
    optimizer = Adam([logits, scores, *buckets], lr=settings.learning_rate)  # see engines/adam.py

    def moved(hard=False):
        out = points.clone()
        out[:, numeric] = torch.sigmoid(logits)
        for cols, part in zip(categorical, buckets):
            soft = torch.softmax(part, 1)
            one_hot = torch.nn.functional.one_hot(soft.argmax(1), len(cols)).double()
            # straight-through: the loss sees valid one-hot rows, the gradient the softmax's
            out[:, cols] = one_hot if hard else one_hot + soft - soft.detach()
        return out

    history = []
    for _ in tqdm(range(settings.steps), desc='Reduced set (refine)', disable=not verbose,
                  leave=False):
        optimizer.zero_grad()
        loss = ((torch.softmax(scores, 0) @ fmap(moved()) - beta) ** 2).sum()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    with torch.no_grad():
        points = moved(hard=True)
        _, probabilities = embedding_weights(features_of(fmap, points), beta)
    return points.numpy(), probabilities, history


def fit_synthetic(x, blocks, n_columns, kernel, ledger, settings, rng, verbose=False):
    """Algorithm 2: (points, signed weights, probabilities, loss history, notes)."""
    fmap = RandomFeatureMap(kernel, settings.n_features, rng)
    beta, _ = release_embedding(np.asarray(x, dtype=float), fmap, ledger,
                                'random_feature_embedding', verbose)
    z, probabilities, history = reduced_set(fmap, beta, blocks, n_columns, settings, rng, verbose)
    signed = min_norm_weights(features_of(fmap, z), beta)
    notes = [f'Algorithm 2: {settings.n_features} random features (frequencies from the model '
             f'RNG); at most {settings.n_points} weighted points found from the noisy embedding '
             'alone, chosen from public-noise rows (post-processing).']
    return z, signed, probabilities, history, notes


# --------------------------------------------------------------------------------- model
class ReweightedModel:
    """Weighted points in the encoded layout (public rows or Algorithm 2 points) and their
    weights (DP outputs). Sampling draws rows with the simplex probabilities, with replacement."""

    def __init__(self, rows, columns, signed, probabilities, target=None, loss_values=None,
                 kernel=None):
        self.rows = np.asarray(rows, dtype=np.float64)  # public rows decode back to themselves
        self.kernel = kernel  # public: the scales of the encoded columns
        self.columns = list(columns)
        self.weights = np.asarray(signed, dtype=float)
        self.probabilities = np.clip(np.asarray(probabilities, dtype=float), 0, None)
        self.probabilities /= self.probabilities.sum()
        self.target = target
        self.labels = None
        if target is not None:
            self.labels = self.rows[:, list(target.columns)].argmax(1)
        self.loss_values = loss_values if loss_values is not None else pd.DataFrame()
        self._rng = None

    def set_random_state(self, random_state):
        self._rng = np.random.default_rng(random_state)

    def _class_probabilities(self, label):
        p = np.where(self.labels == label, self.probabilities, 0.0)
        return p / p.sum() if p.sum() > 0 else None

    def can_sample(self, label):
        return self.labels is not None and self._class_probabilities(label) is not None

    def sample(self, num_rows, label=None):
        if self._rng is None:
            self.set_random_state(None)
        p = self.probabilities if label is None else self._class_probabilities(label)
        order = self._rng.choice(len(self.rows), size=num_rows, replace=True, p=p)
        return pd.DataFrame(self.rows[order], columns=self.columns, copy=False)

    def __getstate__(self):
        state = dict(self.__dict__)
        state['_rng'] = None
        return state


def rkhs_distance(kernel, points, weights, x, mean_kxx=None, chunk_rows=2048):
    """|| sum_m w_m k(z_m, .) - (1/N) sum_n k(x_n, .) ||_H with the exact kernel (evaluation only:
    reads the private rows, so it is never part of a release)."""
    z = torch.as_tensor(np.asarray(points, dtype=float))
    w = torch.as_tensor(np.asarray(weights, dtype=float))
    x = np.asarray(x, dtype=float)
    kbar = kernel.row_sums(z, x, chunk_rows) / len(x)
    if mean_kxx is None:
        mean_kxx = mean_kernel(kernel, x, chunk_rows)
    sq = float(w @ kernel(z, z) @ w - 2 * w @ kbar + mean_kxx)
    return math.sqrt(max(sq, 0.0))


def mean_kernel(kernel, x, chunk_rows=2048):
    """(1/N^2) sum_{n, n'} k(x_n, x_n'), chunked."""
    x = np.asarray(x, dtype=float)
    return float(kernel.row_sums(x, x, chunk_rows).sum()) / len(x) ** 2
