"""Accounting for subsampled Gaussian releases: DP-MERF's minibatches and DP-SGD (DP-KIP).

Two sampling schemes, both under replace-one adjacency (n public):

* ``SAMPLING_WOR``: each batch is a uniformly random subset of exactly B of the n rows, without
  replacement, independently across steps: the setting of Wang, Balle & Kasiviswanathan (2019),
  whose general RDP amplification bound (their Theorem 9) autodp implements
  (``AmplificationBySampling(PoissonSampling=False)``; no extra conditions), with gamma = B/n.
* ``SAMPLING_POISSON``: every row is selected independently with probability q (DP-SGD), the
  selected rows' terms are clipped to norm C and summed. The same Theorem 9 bound holds with
  gamma = q: replacing row i, and conditioning on the other selected rows, both outputs are
  mixtures (1-q) p0 + q p1 and (1-q) p0 + q p1' whose three components are pairwise Gaussians with
  means at most 2C apart, and the proof of Theorem 9 only uses such pairwise RDP bounds (plus
  joint convexity over the conditioning); see docs/privacy.md. The sensitivity is 2C. For the
  whole group of T steps, the RDP at each order is the min of T times that bound and the
  triangle bound of ``poisson_rdp`` (through an auxiliary run without row i's term), which is
  much tighter at large q.

In both, the base mechanism is a Gaussian whose noise multiplier is relative to the replace-one
sensitivity of the released statistic.

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
    Mechanism,
    analytic_gaussian_multiplier,
    approx_dp,
    gaussian_epsilon,
    mechanism_zoo,
    transformer_zoo,
)
from sdv_dpkme.privacy.poisson_rdp import replace_one_rdp
from sdv_dpkme.privacy.report import Release

SAMPLING_WOR = 'uniform without replacement'
SAMPLING_POISSON = 'Poisson (replace-one, per-row Bernoulli(q))'
SUBSAMPLED_SCHEMES = (SAMPLING_WOR, SAMPLING_POISSON)
BOUND_RDP = 'RDP'
BOUND_EXACT = 'exact Gaussian'
_AMPLIFICATION = {
    SAMPLING_WOR: 'amplification by sampling without replacement (autodp, Wang, Balle & '
                  'Kasiviswanathan 2019)',
    SAMPLING_POISSON: 'amplification by Poisson sampling (each row selected independently with '
                      'probability q) under replace-one adjacency, at each order the min of two '
                      'RDP bounds on the group of T steps: T x the general subsampled-RDP bound '
                      'of Wang, Balle & Kasiviswanathan 2019, Thm 9 (autodp '
                      'AmplificationBySampling(PoissonSampling=False)) with gamma = q and the '
                      'base Gaussian multiplier relative to the replace-one sensitivity 2C of the '
                      'clipped sum (valid because that proof only uses pairwise bounds between '
                      'the mixture components), and the weak triangle inequality (Mironov 2017, '
                      'Prop. 11) through the run without the replaced row\'s term: '
                      '(a-1/2)/(a-1) T eps(2a) + T eps(2a-1), eps the sampled Gaussian RDP '
                      '(Mironov, Talwar & Zhang 2019) with multiplier s/C (docs/privacy.md)',
}


def accountant_description(schemes):
    """The report's ``accountant`` text for subsampled releases of the given sampling schemes."""
    schemes = [s for s in SUBSAMPLED_SCHEMES if s in set(schemes)]
    if not schemes:
        raise ValueError('no subsampled sampling scheme given')
    which = '' if schemes == [SAMPLING_WOR] else ' [sampling: ' + '; '.join(schemes) + ']'
    return (
        'min of two upper bounds on the composition of the non-subsampled Gaussian releases and '
        f'the subsampled Gaussian releases{which}: (RDP) RDP composition with '
        + ' and '.join(_AMPLIFICATION[s] for s in schemes)
        + ', the non-subsampled releases as one Gaussian with sigma_eff = '
        '(sum count/sigma^2)^-1/2, converted to (epsilon, delta); (exact Gaussian) exact Gaussian '
        'composition of all releases ignoring amplification, sigma_eff = '
        '(sum count/sigma^2)^-1/2, analytic Gaussian epsilon via autodp'
    )


ACCOUNTANT_SUBSAMPLED = accountant_description([SAMPLING_WOR])
ACCOUNTANT_POISSON = accountant_description([SAMPLING_POISSON])


def check_scheme(sampling):
    if sampling not in SUBSAMPLED_SCHEMES:
        raise NotImplementedError(
            f'no accountant for sampling scheme {sampling!r}; supported: {SUBSAMPLED_SCHEMES}'
        )


def _replace_one_gaussian(sigma):
    mech = mechanism_zoo.GaussianMechanism(sigma=sigma)
    mech.neighboring = 'replace_one'  # sigma is relative to the replace-one sensitivity
    return mech


def _amplified(sigma, prob):
    """autodp mechanism of one subsampled release (either scheme, see the module docstring)."""
    base = _replace_one_gaussian(sigma)
    if prob == 1:
        return base
    return transformer_zoo.AmplificationBySampling(PoissonSampling=False)(base, prob)


def subsampled_rdp(sigma, prob):
    """RDP curve alpha -> epsilon(alpha) of one subsampled release under Theorem 9 (per step)."""
    _check([(sigma, prob, 1)])
    return _amplified(sigma, prob).RenyiDP


def poisson_group_rdp(sigma, prob, count):
    """RDP curve of a group of ``count`` Poisson-subsampled releases at replace-one multiplier
    ``sigma`` (= s / 2C): at each order the min of Theorem 9 composed ``count`` times and the
    triangle bound of ``poisson_rdp`` (whose multiplier is relative to C: 2 sigma)."""
    _check([(sigma, prob, count)])
    per_step = subsampled_rdp(sigma, prob)

    def rdp(alpha):
        alpha = float(alpha)
        return min(count * float(per_step(alpha)),
                   replace_one_rdp(prob, 2 * sigma, int(count), alpha))

    return rdp


def _check(subsampled):
    for entry in subsampled:
        prob = entry[1]
        if not 0 < prob <= 1:
            raise ValueError(f'sampling probability must be in (0, 1], got {prob!r}')
        if len(entry) > 3:
            check_scheme(entry[3])


def _group(sigma, prob, count, sampling=SAMPLING_WOR):
    """(autodp mechanism, how many times it composes) of one group of subsampled releases."""
    if sampling == SAMPLING_POISSON and prob < 1:
        mech = Mechanism()
        mech.name, mech.params = 'PoissonReplaceOneGroup', {'sigma': sigma, 'prob': prob}
        mech.propagate_updates(poisson_group_rdp(sigma, prob, count), 'RDP')
        return mech, 1
    return _amplified(sigma, prob), int(count)


def rdp_epsilon(gaussian_multiplier, subsampled, delta):
    """RDP bound: epsilon at ``delta`` of one plain Gaussian (multiplier, None for none) composed
    with ``subsampled`` = [(multiplier, sampling probability B/n or q, count[, sampling scheme]),
    ...] via autodp (scheme ``SAMPLING_WOR`` when left out)."""
    _check(subsampled)
    mechs, counts = [], []
    if gaussian_multiplier is not None and math.isfinite(gaussian_multiplier):
        mechs.append(_replace_one_gaussian(gaussian_multiplier))
        counts.append(1)
    for entry in subsampled:
        mech, count = _group(*entry)
        mechs.append(mech)
        counts.append(count)
    if not mechs:
        return 0.0
    return approx_dp(transformer_zoo.Composition()(mechs, counts), delta)


def _precision(gaussian_multiplier, subsampled):
    plain = 0.0 if gaussian_multiplier is None else gaussian_multiplier**-2.0  # inf -> 0
    return plain + sum(int(entry[2]) / entry[0]**2 for entry in subsampled)


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


def calibrate_subsampled(epsilon, delta, gaussian_multiplier, prob, count, tol=1e-3,
                         sampling=SAMPLING_WOR):
    """Smallest multiplier for ``count`` subsampled releases of scheme ``sampling`` so that,
    composed with the plain Gaussian part, the min of both bounds (``epsilon_bounds``) is <=
    epsilon at delta.

    Both bounds decrease in sigma, so the answer is the smaller of the two calibrations: the exact
    Gaussian one in closed form, the RDP one by bisection (within relative ``tol``) and only when
    RDP beats the exact one at its multiplier.
    """
    _check([(None, prob, count, sampling)])
    exact = exact_multiplier(epsilon, delta, gaussian_multiplier, count)

    def rdp_spent(sigma):
        return rdp_epsilon(gaussian_multiplier, [(sigma, prob, count, sampling)], delta)

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


class _SubsampledGaussian:
    """``count`` Gaussian releases of statistics of secret random batches, one sampling scheme.

    The whole group is calibrated to the unspent budget and recorded when the mechanism is built
    (before any use), so the report holds it even if training stops early. Batches are drawn by
    ``sample_batch`` with the privacy noise source: amplification needs the batch to be secret.
    ``noise_multiplier`` is relative to ``sensitivity``; ``std`` is the noise standard deviation.
    """

    sampling = None

    def __init__(self, accountant, noise, *, name, description, sensitivity, prob, population,
                 count, dimension=0, details=None):
        self.noise = noise
        self.population = int(population)
        self.count = int(count)
        if self.population < 1 or self.count < 1:
            raise ValueError(f'need population >= 1 and count >= 1, got {population}, {count}')
        self.sensitivity = float(sensitivity)
        if not 0 < self.sensitivity < math.inf:
            raise ValueError(f'sensitivity must be positive and finite, got {sensitivity!r}')
        self.sampling_probability = float(prob)
        self.noise_multiplier = accountant.calibrate_subsampled(
            self.sampling_probability, self.count, sampling=self.sampling
        )
        self.std = self.noise_multiplier * self.sensitivity
        accountant.record(Release(
            name=name, description=description, mechanism='gaussian',
            sensitivity=self.sensitivity, noise_multiplier=float(self.noise_multiplier),
            noise_std=float(self.std), count=self.count, sampling=self.sampling,
            dimension=int(dimension), sampling_probability=self.sampling_probability,
            details=dict(details or {}),
        ))
        self.used = 0

    def sample_batch(self):
        raise NotImplementedError

    def release(self, value):
        if self.used >= self.count:
            raise RuntimeError('all accounted subsampled releases are used up')
        self.used += 1
        value = torch.as_tensor(value, dtype=torch.float64).cpu()
        if self.std == 0:
            return value.clone()
        return value + self.noise.normal(value.shape, self.std)


class SubsampledGaussianMechanism(_SubsampledGaussian):
    """Batches of exactly ``sample_size`` of the ``population`` rows, uniformly without
    replacement (DP-MERF's minibatch mode); ``sensitivity`` is that of the batch statistic."""

    sampling = SAMPLING_WOR

    def __init__(self, accountant, noise, *, name, description, sensitivity, sample_size,
                 population, count):
        self.sample_size = int(sample_size)
        super().__init__(
            accountant, noise, name=name, description=description, sensitivity=sensitivity,
            prob=self.sample_size / int(population), population=population, count=count,
        )

    def sample_batch(self):
        return self.noise.sample_without_replacement(self.population, self.sample_size)


class PoissonSubsampledGaussianMechanism(_SubsampledGaussian):
    """DP-SGD steps: each of the ``population`` rows is in a batch independently with probability
    ``sampling_probability`` (q); ``release`` adds N(0, noise_std^2) to the SUM of the batch's
    per-row terms, each clipped by the caller to L2 norm <= ``clip_norm`` (C).

    Replace-one sensitivity of that sum: ``sensitivity`` = 2C. ``noise_multiplier`` =
    noise_std / (2C) is what the report holds; ``clip_multiplier`` = noise_std / C
    (= 2 * noise_multiplier) is DP-SGD's usual "sigma". Divide the release by
    ``expected_batch_size`` = q * n (public), never by the secret batch size.
    """

    sampling = SAMPLING_POISSON

    def __init__(self, accountant, noise, *, name, description, clip_norm, sampling_probability,
                 population, count, dimension=0, details=None):
        self.clip_norm = float(clip_norm)
        if not 0 < self.clip_norm < math.inf:
            raise ValueError(f'clip_norm must be positive and finite, got {clip_norm!r}')
        prob = float(sampling_probability)
        if not 0 < prob <= 1:
            raise ValueError(
                f'sampling probability must be in (0, 1], got {sampling_probability!r}'
            )
        details = {
            'clip_norm': self.clip_norm,
            'bound': ('min(RDP: at each order the min of Wang-Balle-Kasiviswanathan 2019 Thm 9 '
                      'with gamma=q and the weak-triangle bound through the run without the '
                      'replaced row, exact Gaussian)'),
            **dict(details or {}),
        }
        super().__init__(
            accountant, noise, name=name, description=description, sensitivity=2 * self.clip_norm,
            prob=prob, population=population, count=count, dimension=dimension, details=details,
        )
        self.expected_batch_size = self.sampling_probability * self.population

    @property
    def noise_std(self):
        return self.std

    @property
    def clip_multiplier(self):
        return self.std / self.clip_norm

    def sample_mask(self):
        """Bool tensor over the rows: which are in the next batch (secret: from the noise)."""
        return self.noise.bernoulli(self.population, self.sampling_probability)

    def sample_batch(self):
        """Indices (LongTensor, increasing) of the rows in the next batch; may be empty."""
        return torch.nonzero(self.sample_mask(), as_tuple=True)[0]
