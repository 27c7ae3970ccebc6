"""A tighter RDP bound for T Poisson-subsampled Gaussian steps under replace-one adjacency.

Setting (DP-SGD, see ``subsampled``): every row is selected with probability q, selected rows'
terms are clipped to norm C and summed, N(0, s^2 I) is added; s_C = s / C.

Bound (proof in docs/privacy.md, "DP-SGD with Poisson subsampling"). Let P, Q be the transcripts
of the T steps on the neighbouring tables D, D' (row i replaced) and R the transcript on D with
row i's term set to 0 (an auxiliary run: no such table is needed, only the distribution).
Mironov's weak triangle inequality for Renyi divergences (2017, Prop. 11) gives, for alpha > 1,

    D_a(P || Q) <= (a - 1/2) / (a - 1) * D_2a(P || R) + D_(2a-1)(R || Q).

Against R, one step of P (or Q) is the sampled Gaussian mechanism with add/remove sensitivity C:
the other rows' sum is independent noise common to both (post-processing), and what is left is
(1-q) N(0, s^2) + q N(g_i, s^2) against N(0, s^2), ||g_i|| <= C. Its RDP in the "add"
direction is log A(order) / (order - 1) with, for integer orders m,

    A(m) = sum_k binom(m, k) (1-q)^(m-k) q^k exp((k^2 - k) / (2 s_C^2))

(exact; Mironov, Talwar & Zhang 2019), and the "remove" direction D(N(0) || mixture) is at most
the same value (ibid.; tests/privacy/test_poisson_triangle.py also checks it by quadrature). Both
compose over the T adaptive steps (the per-step bounds hold for every history), so

    eps_T(a) <= (a - 1/2)/(a - 1) * T * eps_C(2a) + T * eps_C(2a - 1).

log A(order) = (order - 1) * eps is convex in the order (van Erven & Harremoes 2014), so between
integer orders the chord is an upper bound: that is how fractional orders are evaluated.
"""

import math

import numpy as np
from scipy.special import gammaln, logsumexp

#: orders above this get no triangle bound (inf): the sum has one term per order up to 2 alpha
MAX_ORDER = 4096


def _log_moment_int(q, s_c, m):
    """log A(m), integer m >= 1 (log E_{N(0)}[(mixture / N(0))^m] at shift 1, std s_c)."""
    if q == 1:
        return (m * m - m) / (2 * s_c * s_c)
    k = np.arange(m + 1, dtype=np.float64)
    log_q = np.where(k > 0, k * math.log(q), 0.0)  # 0 * log q = 0, also for tiny q
    terms = (gammaln(m + 1) - gammaln(k + 1) - gammaln(m - k + 1) + (m - k) * math.log1p(-q)
             + log_q + (k * k - k) / (2 * s_c * s_c))
    return max(float(logsumexp(terms)), 0.0)  # A(m) >= 1; rounding can dip below


def sampled_gaussian_log_moment(q, s_c, order):
    """Upper bound on log A(order) for real order >= 1: exact at integers, the chord between
    them (log A is convex in the order and log A(1) = 0)."""
    if order < 1:
        raise ValueError(f'order must be >= 1, got {order!r}')
    low = math.floor(order)
    frac = order - low
    value = _log_moment_int(q, s_c, low)
    if frac == 0:
        return value
    return (1 - frac) * value + frac * _log_moment_int(q, s_c, low + 1)


def sampled_gaussian_rdp(q, s_c, order):
    """RDP at ``order`` > 1 of one Poisson-subsampled Gaussian step with add/remove sensitivity
    1 and noise multiplier ``s_c``, valid in both directions."""
    return sampled_gaussian_log_moment(q, s_c, order) / (order - 1)


def replace_one_rdp(q, s_c, count, alpha):
    """Upper bound on the RDP at ``alpha`` of ``count`` adaptive Poisson-subsampled Gaussian steps
    under replace-one adjacency; ``s_c`` = noise std / clip norm C (so the sensitivity is 2C)."""
    if not (alpha > 1 and 2 * alpha <= MAX_ORDER):
        return math.inf
    if not (0 < q <= 1 and s_c > 0 and count >= 1):
        raise ValueError(f'need 0 < q <= 1, s_c > 0, count >= 1; got {q!r}, {s_c!r}, {count!r}')
    forward = sampled_gaussian_rdp(q, s_c, 2 * alpha)
    backward = sampled_gaussian_rdp(q, s_c, 2 * alpha - 1)
    return count * ((alpha - 0.5) / (alpha - 1) * forward + backward)
