"""Accounting for subsampled Gaussian releases (DP-MERF's minibatch mode).

The code samples each batch as a uniformly random subset of exactly B of the n rows, without
replacement and independently across steps. Under replace-one adjacency this is the setting of
Wang, Balle & Kasiviswanathan (2019), whose RDP amplification bound autodp implements
(``AmplificationBySampling(PoissonSampling=False)``; general bound, no extra conditions). The base
mechanism is a Gaussian whose noise multiplier is relative to the replace-one sensitivity of the
batch statistic. Composition with the non-subsampled releases is done in RDP and converted once.
"""

import math

import torch

from sdv_dpkme.privacy._autodp import mechanism_zoo, transformer_zoo
from sdv_dpkme.privacy.report import Release

SAMPLING_WOR = 'uniform without replacement'
ACCOUNTANT_SUBSAMPLED = (
    'RDP composition (autodp) of the non-subsampled Gaussian releases (as one Gaussian with '
    'sigma_eff = (sum count/sigma^2)^-1/2) and the subsampled Gaussian releases (amplification by '
    'sampling without replacement, Wang, Balle & Kasiviswanathan 2019), converted to (epsilon, delta)'
)


def _replace_one_gaussian(sigma):
    mech = mechanism_zoo.GaussianMechanism(sigma=sigma)
    mech.neighboring = 'replace_one'  # sigma is relative to the replace-one sensitivity
    return mech


def composed_epsilon(gaussian_multiplier, subsampled, delta):
    """epsilon at ``delta`` of one plain Gaussian (multiplier, None for none) composed with
    ``subsampled`` = [(multiplier, sampling probability B/n, count), ...] via RDP (autodp)."""
    mechs, counts = [], []
    if gaussian_multiplier is not None and math.isfinite(gaussian_multiplier):
        mechs.append(_replace_one_gaussian(gaussian_multiplier))
        counts.append(1)
    for sigma, prob, count in subsampled:
        if not 0 < prob <= 1:
            raise ValueError(f'sampling probability must be in (0, 1], got {prob!r}')
        base = _replace_one_gaussian(sigma)
        mech = base if prob == 1 else (
            transformer_zoo.AmplificationBySampling(PoissonSampling=False)(base, prob)
        )
        mechs.append(mech)
        counts.append(int(count))
    if not mechs:
        return 0.0
    return float(transformer_zoo.Composition()(mechs, counts).get_approxDP(delta))


def calibrate_subsampled(epsilon, delta, gaussian_multiplier, prob, count, tol=1e-3):
    """Smallest multiplier (within relative ``tol``) for ``count`` subsampled releases so that,
    composed with the plain Gaussian part, the total is <= epsilon at delta."""
    def spent(sigma):
        return composed_epsilon(gaussian_multiplier, [(sigma, prob, count)], delta)

    low, high = 0.3, 1.0
    while spent(high) > epsilon:
        low, high = high, high * 2
        if high > 1e6:
            raise ValueError('the remaining budget is too small for any minibatch release')
    while high / low > 1 + tol:  # bisection in log space; spent() decreases in sigma
        mid = math.sqrt(low * high)
        if spent(mid) > epsilon:
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
        return self.noise.permutation(self.population)[: self.sample_size]

    def release(self, value):
        if self.used >= self.count:
            raise RuntimeError('all accounted subsampled releases are used up')
        self.used += 1
        value = torch.as_tensor(value, dtype=torch.float64).cpu()
        if self.std == 0:
            return value.clone()
        return value + self.noise.normal(value.shape, self.std)
