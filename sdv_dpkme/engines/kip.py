"""DP-KIP engine (Vinaroz & Park, TMLR 2024): DP-SGD on a small labelled support set.

Algorithm box (the DP-KIP paper, arXiv 2301.13389, §3-4):
  input: private rows x_1..x_n (encoded, unit box) with labels; kernel k (FC-NTK); ridge lambda;
         support size m_c per class; sampling rate q; clip norm C; steps T; learning rate;
         class-balance exponent b (0: off).
  0. if b > 0: n_c <- class counts + N(0, (sigma_0 sqrt 2)^2) (one Gaussian release);
     w_c <- (min_c' n_c' / n_c)^b, at most 1 (minority classes keep their full weight)
  1. X_s <- public noise (model RNG): 'centre', uniform in 0.5 +- 0.05 (every numeric value and
     one-hot bucket starts undecided, so the noisy gradients only have to tip it), or
     'uniform' on the unit box (the paper's); Y_s <- centred one-hot labels, fixed (y - 1/K for
     K label buckets). Never a private row.
  2. for t = 1..T:
       J   <- Poisson sample: each row independently with probability q (secret noise source)
       g_i <- d/dX_s l(X_s; x_i, y_i) for i in J, per example (torch.func vmap/grad), where
              l = 1/(2K) ||k(x_i, X_s) (K_ss + lambda tr(K_ss)/m I)^-1 Y_s - y_i||^2
       g_i <- w_{y_i} g_i / max(1, ||g_i|| / C)     [norm <= C still: w <= 1]
       g   <- (sum_i g_i + N(0, (sigma C)^2 I)) / (q n)     [the expected batch size, public]
       X_s <- Adam(X_s, g)
  3. release (X_s, Y_s): post-processing of the T noisy gradients.
The T releases are one Poisson-subsampled Gaussian group of the fit's accountant (replace-one
sensitivity 2C of the clipped sum; see privacy/subsampled.py). Nothing here knows SDV.
"""

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch.func import grad, vmap
from tqdm.auto import tqdm

from sdv_dpkme.privacy import GaussianMechanism, PoissonSubsampledGaussianMechanism


@dataclass
class KIPSettings:
    """DP-SGD and kernel settings (all public)."""

    steps: int
    sampling_rate: float
    clip_norm: float
    learning_rate: float
    regularization: float
    device: object
    class_balance: float = 0.0  # b of step 0
    support_init: str = 'uniform'  # step 1: 'centre' or 'uniform'
    count_share: float = 0.02  # share of the budget's precision for the class counts
    max_chunk: int = 1024  # rows per vmap call: bounds the memory of per-example gradients


#: steps='auto': quality is flat over a wide range of steps once q follows epsilon
#: (benchmarks/results/dpkip.md); more steps cost time and, at a fixed epsilon, noise per step
AUTO_STEPS = 100
#: sampling_rate='auto' is q = AUTO_RATE_PER_EPSILON * epsilon: at 100 steps that keeps the
#: noise multiplier near 1 at every epsilon, where amplification by sampling pays best (a much
#: smaller one wastes budget, a larger q at a fixed multiplier only costs time) ...
AUTO_RATE_PER_EPSILON = 0.02
#: ... held between these expected batch sizes (rows): a batch of a few rows is mostly sampling
#: noise (small tables), and a larger one bounds the fit time (large tables)
AUTO_MIN_BATCH = 64
AUTO_MAX_BATCH = 4000
AUTO_MAX_RATE = 0.5
SUPPORT_INITS = ('centre', 'uniform')
CENTRE_JITTER = 0.1  # width of the public noise around 0.5 that tells the support rows apart
#: support_init='auto' starts at the centre below this expected batch (q n rows): a small batch's
#: noisy gradient only has to tip undecided values, while a large one (thousands of rows) moves
#: the support well from anywhere and the uniform start keeps its rows apart
#: (benchmarks/results/dpkip.md)
AUTO_CENTRE_BELOW_BATCH = 2000


def auto_sampling_rate(n, epsilon):
    """q for sampling_rate='auto' from the public row count n and epsilon (never the rows)."""
    if n < 1 or not epsilon > 0:
        raise ValueError(f'need n >= 1 and epsilon > 0, got n={n!r}, epsilon={epsilon!r}')
    rate = min(AUTO_RATE_PER_EPSILON * epsilon, AUTO_MAX_BATCH / n)
    return float(min(max(rate, AUTO_MIN_BATCH / n), AUTO_MAX_RATE))


def auto_support_init(n, sampling_rate):
    """'centre' or 'uniform' for support_init='auto', from the public expected batch q n."""
    return 'centre' if sampling_rate * n < AUTO_CENTRE_BELOW_BATCH else 'uniform'


def auto_steps(n, epsilon):
    """DP-SGD steps for steps='auto' (public facts only; see AUTO_STEPS)."""
    if n < 1 or not epsilon > 0:
        raise ValueError(f'need n >= 1 and epsilon > 0, got n={n!r}, epsilon={epsilon!r}')
    return AUTO_STEPS


def centred_one_hot(labels, n_classes):
    """Labels as one-hot vectors minus 1/K (the paper's label encoding)."""
    labels = torch.as_tensor(labels, dtype=torch.long)
    return torch.nn.functional.one_hot(labels, n_classes).double() - 1.0 / n_classes


def krr_predict(kernel, support, support_y, x, regularization):
    """K_xs (K_ss + lambda tr(K_ss)/m I)^-1 Y_s: kernel ridge regression on the support."""
    k_ss = kernel(support, support)
    m = support.shape[0]
    ridge = abs(regularization) * torch.trace(k_ss) / m
    eye = torch.eye(m, dtype=k_ss.dtype, device=k_ss.device)
    alpha = torch.linalg.solve(k_ss + ridge * eye, support_y)
    return kernel(x, support) @ alpha


def krr_loss(kernel, support, support_y, x, y, regularization):
    """Mean over rows and label buckets of (prediction - y)^2 / 2."""
    pred = krr_predict(kernel, support, support_y, x, regularization)
    return 0.5 * ((pred - y) ** 2).mean()


def per_example_gradients(kernel, support, support_y, x, y, regularization):
    """d l_i / d X_s for every row, (B, m, d), by the chain rule through k(x_i, X_s) and K_ss.

    With R = K_ss + lambda tr(K_ss)/m I, alpha = R^-1 Y_s, e_i = (k_i alpha - y_i) / K:
    a_i = alpha e_i is dl_i/dk_i and H_i = -a_i (R^-1 k_i)^T + lambda/m tr(.) I is dl_i/dK_ss.
    Entry (j, k) of a kernel matrix depends on rows j and k only, so both vector-Jacobian
    products need just the first-argument gradients of k: one (m, m, d) tensor for K_ss, one
    (B, m, d) for the rows. The same numbers as autograd through ``krr_loss`` per row
    (tests/engines/test_kip.py), without rebuilding K_ss for every row.
    """
    m, n_classes = support.shape[0], y.shape[1]
    k_ss = kernel(support, support)
    lam = abs(regularization) / m
    eye = torch.eye(m, dtype=k_ss.dtype, device=k_ss.device)
    r = k_ss + lam * torch.trace(k_ss) * eye
    alpha = torch.linalg.solve(r, support_y)
    k_xs = kernel(x, support)
    a = ((k_xs @ alpha - y) / n_classes) @ alpha.T
    u = torch.linalg.solve(r, k_xs.T).T
    h = -a[:, :, None] * u[:, None, :]
    h = h + lam * torch.diagonal(h, dim1=1, dim2=2).sum(1)[:, None, None] * eye
    fixed = support.detach()
    # d k(s_j, s_k) / d s_j, from grad of column k's sum (entry j depends on s_j only)
    first = vmap(grad(lambda s, t: kernel(s, t[None]).sum()), in_dims=(None, 0))(support, fixed)
    through_k_ss = torch.einsum('bjk,kjd->bjd', h + h.transpose(1, 2), first)
    # d k(x_i, s_j) / d s_j, from grad of row i's sum
    rows = vmap(grad(lambda s, xi: kernel(xi[None], s).sum()), in_dims=(None, 0))(support, x)
    return through_k_ss + a[:, :, None] * rows


def clipped_gradient_sum(kernel, support, support_y, x, y, regularization, clip_norm, max_chunk,
                         row_weights=None):
    """sum_i w_i clip_C(d l(x_i, y_i) / d X_s) over the rows of ``x``, per example.

    ``row_weights`` (one per row, in [0, 1]; default 1) scale each clipped gradient, so every
    term's norm stays <= C and the sum's replace-one sensitivity stays 2C.
    """
    if row_weights is not None and not bool(((row_weights >= 0) & (row_weights <= 1)).all()):
        raise ValueError('row weights must lie in [0, 1]: a larger one breaks the 2C sensitivity')
    total = torch.zeros_like(support)
    for start in range(0, len(x), max_chunk):
        g = per_example_gradients(kernel, support, support_y, x[start:start + max_chunk],
                                  y[start:start + max_chunk], regularization)
        norms = g.flatten(1).norm(dim=1)
        scale = torch.clamp(clip_norm / torch.clamp(norms, min=1e-300), max=1.0)
        if row_weights is not None:
            scale = scale * row_weights[start:start + max_chunk].to(scale)
        total = total + (g * scale[:, None, None]).sum(0)
    return total


def release_class_counts(labels, n_classes, ledger, share):
    """Noisy per-bucket row counts: one Gaussian release with ``share`` of the unspent budget.

    Replace-one moves one row between two buckets: L2 sensitivity sqrt(2).
    """
    name = 'kip_class_counts'
    counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=n_classes)
    sigma = ledger.accountant.calibrate({name: (1.0, 1)}, fraction=share)[name]
    noisy = GaussianMechanism(ledger.accountant, ledger.noise).release(
        counts.astype(float), name=name, sensitivity=math.sqrt(2), noise_multiplier=sigma,
        description=f'rows per label bucket ({n_classes} buckets), for the class-balance weights',
    )
    return noisy.numpy()


def balance_weights(noisy_counts, supported, exponent):
    """w_c = (n_ref / n_c)^b, capped at 1, where n_ref is the smallest noisy count among the
    buckets that have support rows (a bucket without support rows, e.g. the out-of-domain one,
    must not set the scale). Counts are floored at 1: noise can make them negative."""
    counts = np.maximum(np.asarray(noisy_counts, dtype=float), 1.0)
    supported = np.asarray(supported, dtype=bool)
    reference = counts[supported].min()
    return np.minimum(1.0, (reference / counts) ** float(exponent))


def linear_feature_gradients(support_features, support_y, phi, y, regularization):
    """Per-example gradients of the KIP loss w.r.t. the support's FEATURE matrix F (m, p) for the
    linear kernel k(a, b) = a . b, in factored form: g_i = -u_i v_i^T + a_i (phi_i - w_i)^T
    - 2 (lambda/m) s_i F, returned as the pieces ``(u, v, a, r, s)`` with r_i = phi_i - w_i.

    From ``per_example_gradients`` with K_ss = F F^T and k_i = F phi_i: R = K_ss + lambda/m
    tr(K_ss) I, alpha = R^-1 Y_s, a_i = alpha (k_i alpha - y_i) / K, u_i = R^-1 k_i, v_i = F^T a_i,
    w_i = F^T u_i, s_i = u_i . a_i; dl_i/dK_ss = -u_i a_i^T - lambda/m s_i I, and K_ss = F F^T
    turns a symmetric G into (G + G^T) F. The (B, m, p) tensor of gradients is never built: the
    norms and the clipped sum need only these pieces (``clip_linear_feature_gradients``).
    """
    m, n_classes = support_features.shape[0], y.shape[1]
    f = support_features
    k_ss = f @ f.T
    lam = abs(regularization) / m
    eye = torch.eye(m, dtype=f.dtype, device=f.device)
    r_mat = k_ss + lam * torch.trace(k_ss) * eye
    alpha = torch.linalg.solve(r_mat, support_y)
    k_xs = phi @ f.T  # (B, m)
    a = ((k_xs @ alpha - y) / n_classes) @ alpha.T  # (B, m)
    u = torch.linalg.solve(r_mat, k_xs.T).T  # (B, m), R symmetric
    v, w = a @ f, u @ f  # (B, p)
    return u, v, a, phi - w, (u * a).sum(1), lam


def clip_linear_feature_gradients(support_features, support_y, phi, y, regularization,
                                  clip_norm):
    """(sum_i clip_C(g_i), ||g_i|| for every i) for the gradients of
    ``linear_feature_gradients``, with the Frobenius norms from the factored pieces:
    ||g||^2 = |u|^2|v|^2 + |a|^2|r|^2 + 4 lam^2 s^2 |F|^2 - 2 (u.a)(v.r) + 4 lam s (v.w)
    - 4 lam s (v.r)  [cross terms <-uv^T, ar^T>, <-uv^T, -2 lam s F>, <ar^T, -2 lam s F>]."""
    f = support_features
    u, v, a, r, s, lam = linear_feature_gradients(f, support_y, phi, y, regularization)
    w = phi - r
    sq = ((u * u).sum(1) * (v * v).sum(1) + (a * a).sum(1) * (r * r).sum(1)
          + 4 * lam ** 2 * s ** 2 * (f * f).sum()
          - 2 * s * (v * r).sum(1) + 4 * lam * s * (v * w).sum(1) - 4 * lam * s * (v * r).sum(1))
    norms = sq.clamp(min=0).sqrt()
    scale = torch.clamp(clip_norm / torch.clamp(norms, min=1e-300), max=1.0)
    total = -(u * scale[:, None]).T @ v + (a * scale[:, None]).T @ r \
        - 2 * lam * (scale * s).sum() * f
    return total, norms


def noisy_gradient(mechanism, clipped_sum, like):
    """One DP-SGD release (steps 2's last three lines): a secret Poisson batch from the
    mechanism's noise source, ``clipped_sum(batch)`` = the sum of the batch's per-example
    gradients each clipped to the mechanism's clip norm (the caller's job), Gaussian noise, then
    division by the public expected batch size q n. An empty batch still spends its release."""
    batch = mechanism.sample_batch()
    total = clipped_sum(batch) if len(batch) else torch.zeros_like(like)
    return mechanism.release(total.detach().cpu()) / mechanism.expected_batch_size


def initial_support(counts, n_features, rng, how='uniform'):
    """Public noise for the support and its label indices: ``'uniform'`` on the unit box, or
    ``'centre'``, uniform within CENTRE_JITTER / 2 of 0.5 (model RNG, never a private row)."""
    if how not in SUPPORT_INITS:
        raise ValueError(f'support_init must be one of {SUPPORT_INITS}, got {how!r}')
    labels = np.repeat(np.arange(len(counts)), counts)
    support = torch.rand(len(labels), n_features, generator=rng, dtype=torch.float64)
    if how == 'centre':
        support = 0.5 + CENTRE_JITTER * (support - 0.5)
    return support, labels


def fit(x, labels, n_classes, counts, kernel, settings, ledger, rng, verbose=False,
        details=None):
    """Steps 1-3 of the algorithm box; ``counts[c]`` support rows for label bucket c.

    Returns ``(support (m, d) float64 CPU tensor, support label indices, history DataFrame)``.
    The history holds only DP outputs (norms of the noisy gradients), never a loss on private
    rows. ``details`` (public) go to the gradient release's entry of the privacy report.
    """
    device = settings.device
    n = len(x)
    x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
    y = centred_one_hot(labels, n_classes)
    support, support_labels = initial_support(counts, x.shape[1], rng, settings.support_init)
    support_y = centred_one_hot(support_labels, n_classes).to(device)
    class_weights = None
    if settings.class_balance > 0:
        noisy = release_class_counts(labels, n_classes, ledger, settings.count_share)
        class_weights = torch.as_tensor(
            balance_weights(noisy, np.asarray(counts) > 0, settings.class_balance))
    label_index = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    support = support.to(device).requires_grad_(True)
    mechanism = PoissonSubsampledGaussianMechanism(
        ledger.accountant, ledger.noise, name='kip_gradients',
        description=(f'DP-SGD gradients of the KIP loss w.r.t. {len(support_labels)} support rows '
                     f'x {x.shape[1]} features ({kernel.describe()}, ridge '
                     f'{settings.regularization:g}), per-example clip {settings.clip_norm:g}'),
        clip_norm=settings.clip_norm, sampling_probability=settings.sampling_rate,
        population=n, count=settings.steps, dimension=support.numel(), details=details,
    )
    optimizer = torch.optim.Adam([support], lr=settings.learning_rate)
    history = []
    bar = tqdm(range(settings.steps), desc='DP-SGD on the support', disable=not verbose)
    for step in bar:
        s = support.detach()

        def clipped_sum(batch):
            xb, yb = x[batch].to(device), y[batch].to(device)
            weights = None if class_weights is None else class_weights[label_index[batch]]
            return clipped_gradient_sum(kernel, s, support_y, xb, yb, settings.regularization,
                                        settings.clip_norm, settings.max_chunk, weights)

        noisy = noisy_gradient(mechanism, clipped_sum, s)
        optimizer.zero_grad()
        support.grad = noisy.to(device=device, dtype=support.dtype)
        optimizer.step()
        history.append({'Step': step, 'Noisy gradient norm': float(noisy.norm())})
    if not torch.isfinite(support).all():
        warnings.warn('The support set holds non-finite values; lower learning_rate.')
    history = pd.DataFrame(history)
    if class_weights is not None:  # DP outputs: from the noisy counts
        history.attrs['class_weights'] = class_weights.tolist()
    return support.detach().cpu(), support_labels, history


class KIPModel:
    """The distilled support set in the encoded layout (a DP output) and its labels."""

    def __init__(self, rows, columns, labels, loss_values):
        self.rows = np.asarray(rows, dtype=float)
        self.columns = list(columns)
        self.labels = np.asarray(labels)
        self.loss_values = loss_values
        self._rng = None

    def set_random_state(self, random_state):
        self._rng = np.random.default_rng(random_state)
        self._pending = None

    def support(self):
        """Every distilled row once, in class order."""
        return pd.DataFrame(self.rows, columns=self.columns)

    def can_sample(self, label):
        return bool((self.labels == label).any())

    def sample(self, num_rows, label=None):
        """Whole shuffled copies of the support, then a random part of one more: no row
        appears twice before every row has appeared once. The rest of the last copy is kept
        for the next call, so rows sampled in chunks are the rows of one call. With ``label``:
        the same over the support rows of that class."""
        if self._rng is None:
            self.set_random_state(None)
        if label is not None:
            rows = np.flatnonzero(self.labels == label)
            copies = [self._rng.permutation(rows) for _ in range(-(-num_rows // len(rows)))]
            order = np.concatenate(copies)[:num_rows]
            return pd.DataFrame(self.rows[order], columns=self.columns)
        m = len(self.rows)
        pending = getattr(self, '_pending', None)
        parts = [] if pending is None else [pending]
        have = sum(len(p) for p in parts)
        parts += [self._rng.permutation(m) for _ in range(-(-(num_rows - have) // m))]
        order = np.concatenate(parts) if parts else np.zeros(0, dtype=int)
        self._pending = order[num_rows:]
        return pd.DataFrame(self.rows[order[:num_rows]], columns=self.columns)

    def __getstate__(self):
        state = dict(self.__dict__)
        state['_rng'] = None  # sampling restarts from SDV's fixed seed after loading
        state['_pending'] = None
        return state


def encoded_rows(support, support_labels, blocks, target, n_columns):
    """The support as rows of the encoded table: numeric values clamped to [0, 1], one-hot
    blocks set to their largest in-domain bucket (never the last, out-of-domain, one), and the
    target block to the row's label. Post-processing of the DP support."""
    support = np.asarray(support, dtype=float)
    rows = np.zeros((len(support), n_columns))
    at = 0
    for block in blocks:
        values = support[:, at:at + block.width]
        at += block.width
        cols = list(block.columns)
        if block.kind == 'categorical':
            codes = values[:, :-1].argmax(axis=1) if block.width > 1 else np.zeros(len(values), int)
            rows[:, cols] = np.eye(block.width)[codes]
        else:
            rows[:, cols] = np.clip(values, 0.0, 1.0)
    rows[:, list(target.columns)] = np.eye(target.width)[np.asarray(support_labels)]
    return rows
