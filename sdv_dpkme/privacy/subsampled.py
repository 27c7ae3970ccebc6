"""Accounting for subsampled Gaussian releases (DP-MERF's minibatch mode).

The code samples each batch as a uniformly random subset of exactly B of the n rows, without
replacement and independently across steps. Under replace-one adjacency this is the setting of
Wang, Balle & Kasiviswanathan (2019), whose RDP amplification bound autodp implements
(``AmplificationBySampling(PoissonSampling=False)``; general bound, no extra conditions). The base
mechanism is a Gaussian whose noise multiplier is relative to the replace-one sensitivity of the
batch statistic.

Two valid upper bounds on epsilon are computed and the smaller is used:

* RDP: the non-subsampled releases (as one Gaussian) and the subsampled ones composed in RDP with
  amplification, converted once to (epsilon, delta);
* exact Gaussian, ignoring amplification: for a fixed batch the release is a Gaussian with this
  multiplier (means differ by at most the sensitivity when the differing row is in the batch, not at
  all otherwise); the same batch distribution on both tables makes the release a mixture of such
  pairs, and mixtures keep every hockey-stick divergence (joint convexity), so each subsampled
  release is (1/sigma)-GDP and all releases compose exactly to one Gaussian with
  sigma_eff = (sum count/sigma^2)^-1/2 (Dong, Roth & Su 2019); analytic Gaussian epsilon via autodp.

The RDP conversion is lossy, so with large sampling probabilities or a large plain part the second
bound is the tighter one.
"""

import math

import torch

from sdv_dpkme.privacy._autodp import (
    analytic_gaussian_multiplier,
    gaussian_epsilon,
    mechanism_zoo,
    transformer_zoo,
)
from sdv_dpkme.privacy.report import Release

SAMPLING_WOR = 'uniform without replacement'
BOUND_RDP = 'RDP'
BOUND_EXACT = 'exact Gaussian'
ACCOUNTANT_SUBSAMPLED = (
    'min of two upper bounds on the composition of the non-subsampled Gaussian releases and the '
    'subsampled Gaussian releases: (RDP) RDP composition with amplification by sampling without '
    'replacement (autodp, Wang, Balle & Kasiviswanathan 2019), the non-subsampled releases as one '
    'Gaussian with sigma_eff = (sum count/sigma^2)^-1/2, converted to (epsilon, delta); '
    '(exact Gaussian) exact Gaussian composition of all releases ignoring amplification, '
    'sigma_eff = (sum count/sigma^2)^-1/2, analytic Gaussian epsilon via autodp'
)


def _replace_one_gaussian(sigma):
    mech = mechanism_zoo.GaussianMechanism(sigma=sigma)
    mech.neighboring = 'replace_one'  # sigma is relative to the replace-one sensitivity
    return mech


def _check(subsampled):
    for _, prob, _ in subsampled:
        if not 0 < prob <= 1:
            raise ValueError(f'sampling probability must be in (0, 1], got {prob!r}')


def rdp_epsilon(gaussian_multiplier, subsampled, delta):
    """RDP bound: epsilon at ``delta`` of one plain Gaussian (multiplier, None for none) composed
    with ``subsampled`` = [(multiplier, sampling probability B/n, count), ...] via autodp."""
    _check(subsampled)
    mechs, counts = [], []
    if gaussian_multiplier is not None and math.isfinite(gaussian_multiplier):
        mechs.append(_replace_one_gaussian(gaussian_multiplier))
        counts.append(1)
    for sigma, prob, count in subsampled:
        base = _replace_one_gaussian(sigma)
        mech = base if prob == 1 else (
            transformer_zoo.AmplificationBySampling(PoissonSampling=False)(base, prob)
        )
        mechs.append(mech)
        counts.append(int(count))
    if not mechs:
        return 0.0
    return float(transformer_zoo.Composition()(mechs, counts).get_approxDP(delta))


def _precision(gaussian_multiplier, subsampled):
    plain = 0.0 if gaussian_multiplier is None else gaussian_multiplier**-2.0  # inf -> 0
    return plain + sum(int(count) / sigma**2 for sigma, _, count in subsampled)


def exact_gaussian_epsilon(gaussian_multiplier, subsampled, delta):
    """Exact-Gaussian bound (amplification ignored): all releases as Gaussians, composed exactly."""
    _check(subsampled)
    precision = _precision(gaussian_multiplier, subsampled)
    return 0.0 if precision == 0 else gaussian_epsilon(precision**-0.5, delta)


def epsilon_bounds(gaussian_multiplier, subsampled, delta):
    """{'RDP': ..., 'exact Gaussian': ...}; both are valid, the spend is their min."""
    return {
        BOUND_RDP: rdp_epsilon(gaussian_multiplier, subsampled, delta),
        BOUND_EXACT: exact_gaussian_epsilon(gaussian_multiplier, subsampled, delta),
    }


def tighter_bound(bounds):
    """Name of the smaller bound (RDP on a tie)."""
    return min(bounds, key=lambda name: (bounds[name], name != BOUND_RDP))


def exact_multiplier(epsilon, delta, gaussian_multiplier, count):
    """Smallest multiplier for ``count`` releases with exact-Gaussian bound <= epsilon (inf if the
    plain part alone spends it)."""
    spare = analytic_gaussian_multiplier(epsilon, delta) ** -2 - _precision(gaussian_multiplier, [])
    if spare <= 0:
        return math.inf
    sigma = math.sqrt(count / spare)
    for _ in range(1000):  # rounding in 1/sigma^2 sums: nudge up so it never overspends
        if exact_gaussian_epsilon(gaussian_multiplier, [(sigma, 1.0, count)], delta) <= epsilon:
            return sigma
        sigma *= 1 + 1e-9
    return math.inf


def calibrate_subsampled(epsilon, delta, gaussian_multiplier, prob, count, tol=1e-3):
    """Smallest multiplier for ``count`` subsampled releases so that, composed with the plain
    Gaussian part, the min of both bounds (``epsilon_bounds``) is <= epsilon at delta.

    Both bounds decrease in sigma, so the answer is the smaller of the two calibrations: the exact
    Gaussian one in closed form, the RDP one by bisection (within relative ``tol``) and only when
    RDP beats the exact one at its multiplier.
    """
    _check([(None, prob, count)])
    exact = exact_multiplier(epsilon, delta, gaussian_multiplier, count)

    def rdp_spent(sigma):
        return rdp_epsilon(gaussian_multiplier, [(sigma, prob, count)], delta)

    if math.isfinite(exact):
        if rdp_spent(exact) > epsilon:
            return exact  # RDP needs more noise than the exact bound
        high = exact
    else:
        high = 1.0
        while rdp_spent(high) > epsilon:
            high *= 2
            if high > 1e6:
                raise ValueError('the remaining budget is too small for any minibatch release')
    low = high / 2
    while rdp_spent(low) <= epsilon and low > 1e-3:  # bracket: rdp_spent(high) <= epsilon < at low
        high, low = low, low / 2
    while high / low > 1 + tol:  # bisection in log space; rdp_spent() decreases in sigma
        mid = math.sqrt(low * high)
        if rdp_spent(mid) > epsilon:
            low = mid
        else:
            high = mid
    return high


class SubsampledGaussianMechanism:
    """``count`` Gaussian releases of statistics of secret random batches of ``sample_size`` rows.

    The whole group is calibrated to the unspent budget and recorded when the mechanism is built
    (before any use), so the report holds it even if training stops early. Batches are drawn by
    ``sample_batch`` with the privacy noise source: amplification needs the batch to be secret.
    """

    def __init__(self, accountant, noise, *, name, description, sensitivity, sample_size,
                 population, count):
        self.noise = noise
        self.sample_size = int(sample_size)
        self.population = int(population)
        self.count = int(count)
        prob = self.sample_size / self.population
        self.noise_multiplier = accountant.calibrate_subsampled(prob, self.count)
        self.std = self.noise_multiplier * sensitivity
        accountant.record(Release(
            name=name, description=description, mechanism='gaussian',
            sensitivity=float(sensitivity), noise_multiplier=float(self.noise_multiplier),
            noise_std=float(self.std), count=self.count, sampling=SAMPLING_WOR,
            sampling_probability=prob,
        ))
        self.used = 0

    def sample_batch(self):
        return self.noise.sample_without_replacement(self.population, self.sample_size)

    def release(self, value):
        if self.used >= self.count:
            raise RuntimeError('all accounted subsampled releases are used up')
        self.used += 1
        value = torch.as_tensor(value, dtype=torch.float64).cpu()
        if self.std == 0:
            return value.clone()
        return value + self.noise.normal(value.shape, self.std)
