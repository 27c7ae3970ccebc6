"""Pure statistics of the empirical privacy audit: Gaussian privacy curves, Clopper-Pearson
bounds, the guessing-game bound and the noise-scale bound. No fitting here (see ``audit``).

Every ``*_epsilon_lower_bound`` holds with probability >= 1 - alpha for a mechanism that is
(epsilon, delta)-DP for the audited pair of neighbouring tables: it may be 0, never above the
true epsilon except with probability alpha.
"""

import math

import numpy as np
from scipy import stats

MAX_EPSILON = 50.0


def gaussian_delta(mu, epsilon):
    """delta(epsilon) of the Gaussian shift N(0,1) vs N(mu,1) (Balle & Wang 2018, Thm 8)."""
    if mu <= 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a, b = -epsilon / mu + mu / 2, -epsilon / mu - mu / 2
    # e^eps * Phi(b) in log space: exp overflows long before the product does
    return float(stats.norm.cdf(a) - math.exp(epsilon + stats.norm.logcdf(b)))


def gaussian_epsilon(mu, delta):
    """Smallest epsilon with gaussian_delta(mu, epsilon) <= delta (bisection; inf for mu=inf)."""
    if mu <= 0 or gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    if math.isinf(mu):
        return math.inf
    lo, hi = 0.0, 1.0
    while gaussian_delta(mu, hi) > delta:
        lo, hi = hi, hi * 2
        if hi > 1e6:
            return math.inf
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gaussian_delta(mu, mid) > delta else (lo, mid)
    return hi


def cp_upper(k, n, alpha):
    """One-sided Clopper-Pearson upper bound on a proportion (k of n), level 1 - alpha."""
    return 1.0 if k >= n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))


def cp_lower(k, n, alpha):
    """One-sided Clopper-Pearson lower bound on a proportion (k of n), level 1 - alpha."""
    return 0.0 if k <= 0 else float(stats.beta.ppf(alpha, k, n - k + 1))


def _log_ratio(num, den):
    if num <= 0:
        return 0.0
    return MAX_EPSILON if den <= 0 else max(0.0, math.log(num / den))


def clopper_pearson_epsilon_lower_bound(scores_out, scores_in, threshold, delta, alpha):
    """Many-run bound (Jagielski et al. 2020; Nasr et al. 2021) of the test 'score > threshold
    means the canary is in', with ``threshold`` fixed before the trials.

    epsilon >= log((TPR - delta) / FPR) and log((TNR - delta) / FNR) for any test; each rate is
    replaced by its Clopper-Pearson bound (4 bounds, alpha / 4 each)."""
    out, inn = np.asarray(scores_out, float), np.asarray(scores_in, float)
    n0, n1 = len(out), len(inn)
    if not n0 or not n1:
        return 0.0
    fp, tp = int((out > threshold).sum()), int((inn > threshold).sum())
    a = alpha / 4
    direct = _log_ratio(cp_lower(tp, n1, a) - delta, cp_upper(fp, n0, a))
    flipped = _log_ratio(cp_lower(n0 - fp, n0, a) - delta, cp_upper(n1 - tp, n1, a))
    return min(MAX_EPSILON, max(direct, flipped))


def guess_success_bound(epsilon, delta):
    """Largest probability of guessing a fair secret bit from an (epsilon, delta)-DP output:
    (e^eps + delta) / (1 + e^eps), both the test and its complement being tight."""
    return (1.0 if math.isinf(epsilon)
            else (math.exp(min(epsilon, 700)) + delta) / (1 + math.exp(min(epsilon, 700))))


def guessing_epsilon_lower_bound(correct, guesses, delta, alpha):
    """Bound from ``correct`` right guesses of ``guesses`` fair, independent canary bits (one
    canary per fit, every bit guessed: the counting argument of Steinke, Nasr & Jagielski 2023
    with no abstention). Given the past, each guess is right with probability at most
    ``guess_success_bound``, so the count is dominated by Binomial(guesses, that): the bound is
    the smallest epsilon whose binomial tail at ``correct`` exceeds alpha."""
    if guesses <= 0 or correct <= 0:
        return 0.0

    def tail(eps):
        return stats.binom.sf(correct - 1, guesses, min(1.0, guess_success_bound(eps, delta)))

    if tail(0.0) > alpha:
        return 0.0
    lo, hi = 0.0, MAX_EPSILON
    if tail(hi) <= alpha:
        return hi
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(mid) <= alpha else (lo, mid)
    return lo


def noise_scale_upper(noise, std, alpha):
    """Upper confidence bound (level 1 - alpha) on kappa, if ``noise`` is iid N(0, (kappa std)^2):
    sum (noise / std)^2 / kappa^2 is chi-square with noise.size degrees of freedom."""
    z = np.asarray(noise, float).ravel() / std
    if not z.size:
        return math.inf
    return math.sqrt(float(np.sum(z * z)) / stats.chi2.ppf(alpha, z.size))
