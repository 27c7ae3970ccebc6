"""Test oracles for the accountant of Poisson-subsampled Gaussian steps under replace-one.

Not part of the package: the accountant uses dp-accounting's PLD (``sdv_dpkme.privacy.subsampled``);
these hand-written bounds check it from outside.

1. The weak-triangle RDP bound of T steps (the package's accountant before the PLD one), below.
2. ``worst_pair_epsilon``: the privacy curve of the worst pair we know,
   P = (1-q) N(0, s^2) + q N(+C, s^2) against Q = (1-q) N(0, s^2) + q N(-C, s^2) (one
   coordinate; a selected row's clipped term flips sign), composed over T steps by FFT of its
   privacy-loss distribution. Rounded down (and tails dropped) it is a lower bound on the
   epsilon of any valid accountant; rounded up, an upper bound for that pair.

The triangle bound:

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
the same value (ibid.; tests/privacy/test_poisson.py also checks it by quadrature). Both
compose over the T adaptive steps (the per-step bounds hold for every history), so

    eps_T(a) <= (a - 1/2)/(a - 1) * T * eps_C(2a) + T * eps_C(2a - 1).

log A(order) = (order - 1) * eps is convex in the order (van Erven & Harremoes 2014), so between
integer orders the chord is an upper bound: that is how fractional orders are evaluated.
"""

import math

import numpy as np
from scipy import optimize, stats
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


def poisson_group_rdp(wbk_rdp, q, sigma, count):
    """The old accountant's RDP curve of a Poisson group at replace-one multiplier ``sigma``
    (= s / 2C): at each order the min of ``count`` x Theorem 9 (``wbk_rdp``: the per-step curve)
    and the triangle bound (multiplier relative to C: 2 sigma)."""
    def rdp(alpha):
        alpha = float(alpha)
        return min(count * float(wbk_rdp(alpha)), replace_one_rdp(q, 2 * sigma, int(count), alpha))
    return rdp


def _worst_pair_loss_pmf(q, s_c, grid, direction, tail=1e-30):
    """Privacy loss L = log(P/Q)(x), x ~ P, of the worst pair at clip 1 and noise std ``s_c``,
    on the lattice ``grid`` * k: returns (k0, masses). L increases in x, so over each of many
    small x-bins its min (``direction`` = -1) or max (+1) is at a bin edge. Bins of mass below
    ``tail`` at both ends are dropped (for the lower bound that only lowers delta)."""
    half = 1 + 40 * s_c
    edges = np.linspace(-half, half, 400_001)

    def log_mix(x, mean):
        return np.logaddexp(np.log1p(-q) + stats.norm.logpdf(x, 0, s_c),
                            np.log(q) + stats.norm.logpdf(x, mean, s_c))

    loss = log_mix(edges, 1.0) - log_mix(edges, -1.0)
    cdf = (1 - q) * stats.norm.cdf(edges, 0, s_c) + q * stats.norm.cdf(edges, 1, s_c)
    sf = (1 - q) * stats.norm.sf(edges, 0, s_c) + q * stats.norm.sf(edges, 1, s_c)
    mass = np.where(edges[:-1] < 0, np.diff(cdf), -np.diff(sf))  # accurate in both tails
    keep = mass > tail
    bin_loss = loss[:-1] if direction < 0 else loss[1:]
    rounded = np.floor(bin_loss / grid) if direction < 0 else np.ceil(bin_loss / grid)
    k = rounded[keep].astype(np.int64)
    k0 = int(k.min())
    pmf = np.bincount(k - k0, weights=mass[keep])
    if direction > 0:  # upper bound: the dropped mass goes to infinite loss
        return k0, pmf, 1.0 - mass[keep].sum()
    return k0, pmf, 0.0


def worst_pair_epsilon(q, s_c, count, delta, grid=1e-4, direction=-1):
    """epsilon at ``delta`` of ``count`` steps of the worst pair (noise std / C = ``s_c``):
    ``direction`` -1 rounds every loss down (a lower bound), +1 up (an upper bound)."""
    k0, pmf, inf_mass = _worst_pair_loss_pmf(q, s_c, grid, direction)
    size = count * (len(pmf) - 1) + 1
    n_fft = 1 << (size - 1).bit_length()
    composed = np.fft.irfft(np.fft.rfft(pmf, n_fft) ** count, n_fft)[:size]
    composed = np.clip(composed, 0, None)
    losses = (count * k0 + np.arange(size)) * grid
    keep = composed > 0
    losses, composed = losses[keep], composed[keep]
    total_inf = 1 - (1 - inf_mass) ** count

    def curve(eps):  # hockey-stick divergence E_P[(1 - e^(eps - L))_+]
        above = losses > eps
        return total_inf + float(np.sum(composed[above] * -np.expm1(eps - losses[above])))

    if curve(0.0) <= delta:
        return 0.0
    return optimize.brentq(lambda e: curve(e) - delta, 0.0, float(losses.max()), xtol=1e-9)
