"""Accounting for subsampled Gaussian releases: DP-MERF's minibatches and DP-SGD (DP-KIP).

Two sampling schemes, both under replace-one adjacency (n public):

* ``SAMPLING_WOR``: each batch is a uniformly random subset of exactly B of the n rows, without
  replacement, independently across steps (gamma = B/n).
* ``SAMPLING_POISSON``: every row is selected independently with probability q (DP-SGD), the
  selected rows' terms are clipped to norm C and summed; the replace-one sensitivity is 2C.

In both, a release's noise multiplier is relative to the replace-one sensitivity of the released
statistic. Several valid upper bounds on epsilon are computed for the whole fit (the plain,
non-subsampled releases composed exactly into one Gaussian with
sigma_eff = (sum count/sigma^2)^-1/2, plus the subsampled group); the spend is their minimum and
the report names each (docs/privacy.md, "Accounting of subsampled releases"):

* ``PLD`` (Poisson groups): dp-accounting's privacy-loss-distribution accountant under
  ``REPLACE_ONE``. Its Poisson-sampled Gaussian pair is (1-q) N(0, z^2) + q N(-1, z^2) against
  (1-q) N(0, z^2) + q N(+1, z^2) with z its noise multiplier = s / C: exactly our worst pair, a
  selected row whose clipped term flips from +C to -C (docs/privacy.md). Its plain Gaussian under
  ``REPLACE_ONE`` also reads z as s / C, i.e. means 2 apart, so both get z = 2 * our multiplier.
  Pessimistic discretisation (``PLD_DISCRETIZATION``): an upper bound.
* ``RDP (autodp)``: RDP composition with the general subsampled-RDP bound of Wang, Balle &
  Kasiviswanathan (2019, Thm 9; autodp ``AmplificationBySampling(PoissonSampling=False)``),
  gamma = B/n or q; for Poisson it holds because its proof only uses pairwise bounds between the
  three mixture components, which are Gaussians with means at most 2C apart.
* ``RDP (dp-accounting)`` (without-replacement groups): dp-accounting's RDP accountant with its
  ``SampledWithoutReplacementDpEvent``, the Gaussian-specific bound of the same paper (Thm 27,
  often tighter than Thm 9). dp-accounting's PLD accountant does not model sampling without
  replacement, so that scheme has no PLD bound.
* ``exact Gaussian``: amplification ignored; for a fixed batch each release is a Gaussian whose
  mean moves by at most the sensitivity, mixtures keep every hockey-stick divergence (joint
  convexity), so all releases compose exactly into one Gaussian (Dong, Roth & Su 2019); analytic
  Gaussian epsilon via autodp.
"""

import functools
import math
from fractions import Fraction

import torch
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import rdp_privacy_accountant

from sdv_dpkme.privacy._autodp import (
    analytic_gaussian_multiplier,
    approx_dp,
    gaussian_epsilon,
    mechanism_zoo,
    transformer_zoo,
)
from sdv_dpkme.privacy.report import Release

SAMPLING_WOR = 'uniform without replacement'
SAMPLING_POISSON = 'Poisson (replace-one, per-row Bernoulli(q))'
SUBSAMPLED_SCHEMES = (SAMPLING_WOR, SAMPLING_POISSON)
BOUND_PLD = 'PLD'
BOUND_RDP = 'RDP (autodp)'
BOUND_RDP_DPA = 'RDP (dp-accounting)'
BOUND_EXACT = 'exact Gaussian'
#: order in which ties are broken and calibrations tried: the usually tighter first
BOUND_ORDER = (BOUND_PLD, BOUND_RDP_DPA, BOUND_RDP, BOUND_EXACT)
#: dp-accounting's value_discretization_interval: the PLD's privacy losses are rounded to this
#: grid pessimistically (an upper bound at any value); 1e-3 costs < 0.1% of epsilon against
#: 1e-4 at DP-SGD schedules and is about 10x faster, which calibration needs
PLD_DISCRETIZATION = 1e-3
#: orders of the dp-accounting RDP bound: sparser than its default, whose integer orders up to
#: 256 cost O(order^2) each and calibration evaluates the bound often (any order set is valid)
RDP_ORDERS = tuple([1 + x / 8 for x in range(1, 16)] + list(range(3, 21))
                   + list(range(22, 33, 2)) + list(range(36, 65, 4)) + [80, 96, 128])
#: calibration: the achieved epsilon is within this of the target, never above it
EPSILON_TOLERANCE = 5e-4

_DESCRIPTIONS = {
    BOUND_PLD: ('(PLD) dp-accounting PLD accountant, neighbouring relation REPLACE_ONE, the plain '
                'releases as one Gaussian (GaussianDpEvent, noise multiplier 2 sigma_eff) '
                'composed with each Poisson group of T steps (PoissonSampledDpEvent(q, '
                'GaussianDpEvent(2 sigma)), i.e. the pair (1-q) N(0, s^2) + q N(+-C, s^2) of a '
                'selected row whose clipped term flips sign), pessimistic discretisation '
                f'{PLD_DISCRETIZATION:g}'),
    BOUND_RDP: ('(RDP (autodp)) RDP composition with amplification by subsampling, Wang, Balle & '
                'Kasiviswanathan 2019 Thm 9 (autodp AmplificationBySampling(PoissonSampling='
                'False)) with gamma = B/n or q and the base Gaussian multiplier relative to the '
                'replace-one sensitivity (2C for DP-SGD), the plain releases as one Gaussian, '
                'converted to (epsilon, delta) by autodp'),
    BOUND_RDP_DPA: ('(RDP (dp-accounting)) dp-accounting RDP accountant, REPLACE_ONE, '
                    'SampledWithoutReplacementDpEvent (Wang, Balle & Kasiviswanathan 2019 '
                    'Thm 27, Gaussian), the plain releases as one Gaussian'),
    BOUND_EXACT: ('(exact Gaussian) exact Gaussian composition of all releases ignoring '
                  'amplification, sigma_eff = (sum count/sigma^2)^-1/2, analytic Gaussian '
                  'epsilon via autodp'),
}


def check_scheme(sampling):
    if sampling not in SUBSAMPLED_SCHEMES:
        raise NotImplementedError(
            f'no accountant for sampling scheme {sampling!r}; supported: {SUBSAMPLED_SCHEMES}'
        )


def _entries(subsampled):
    """Normalised [(sigma, prob, count, scheme)], scheme ``SAMPLING_WOR`` when left out."""
    out = []
    for entry in subsampled:
        sigma, prob, count = float(entry[0]), float(entry[1]), int(entry[2])
        scheme = entry[3] if len(entry) > 3 else SAMPLING_WOR
        check_scheme(scheme)
        if not 0 < prob <= 1:
            raise ValueError(f'sampling probability must be in (0, 1], got {prob!r}')
        out.append((sigma, prob, count, scheme))
    return tuple(out)


def applicable_bounds(subsampled):
    """Names of the bounds that hold for these groups (all of them Poisson: PLD too; all of them
    without replacement: dp-accounting's RDP too)."""
    schemes = {entry[3] for entry in _entries(subsampled)}
    names = [BOUND_RDP, BOUND_EXACT]
    if schemes == {SAMPLING_POISSON}:
        names.insert(0, BOUND_PLD)
    if schemes == {SAMPLING_WOR}:
        names.insert(0, BOUND_RDP_DPA)
    return [name for name in BOUND_ORDER if name in names]


def accountant_description(schemes):
    """The report's ``accountant`` text for subsampled releases of the given sampling schemes."""
    schemes = [s for s in SUBSAMPLED_SCHEMES if s in set(schemes)]
    if not schemes:
        raise ValueError('no subsampled sampling scheme given')
    names = applicable_bounds([(1.0, 0.5, 1, s) for s in schemes])
    return (
        'min of valid upper bounds on the composition of the non-subsampled Gaussian releases '
        '(sigma_eff = (sum count/sigma^2)^-1/2) and the subsampled Gaussian releases [sampling: '
        + '; '.join(schemes) + '], replace-one: '
        + '; '.join(_DESCRIPTIONS[name] for name in names)
        + ('; no PLD bound: dp-accounting\'s PLD accountant does not model sampling without '
           'replacement' if SAMPLING_WOR in schemes else '')
    )


ACCOUNTANT_SUBSAMPLED = accountant_description([SAMPLING_WOR])
ACCOUNTANT_POISSON = accountant_description([SAMPLING_POISSON])


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
    (sigma, prob, _, _), = _entries([(sigma, prob, 1)])
    return _amplified(sigma, prob).RenyiDP


def _plain_sigma(gaussian_multiplier):
    if gaussian_multiplier is None or not math.isfinite(gaussian_multiplier):
        return None
    return float(gaussian_multiplier)


@functools.lru_cache(maxsize=4096)
def _rdp_epsilon(plain, groups, delta):
    mechs, counts = [], []
    if plain is not None:
        mechs.append(_replace_one_gaussian(plain))
        counts.append(1)
    for sigma, prob, count, _ in groups:
        mechs.append(_amplified(sigma, prob))
        counts.append(count)
    if not mechs:
        return 0.0
    return approx_dp(transformer_zoo.Composition()(mechs, counts), delta)


def rdp_epsilon(gaussian_multiplier, subsampled, delta):
    """RDP (autodp) bound: epsilon at ``delta`` of one plain Gaussian (multiplier, None for none)
    composed with ``subsampled`` = [(multiplier, sampling probability B/n or q, count[, sampling
    scheme]), ...] (scheme ``SAMPLING_WOR`` when left out)."""
    return _rdp_epsilon(_plain_sigma(gaussian_multiplier), _entries(subsampled), float(delta))


def _composed_event(plain, groups, factor, group_event):
    events = [] if plain is None else [dp_event.GaussianDpEvent(factor * plain)]
    for sigma, prob, count, _ in groups:
        events.append(dp_event.SelfComposedDpEvent(group_event(factor * sigma, prob), count))
    return dp_event.ComposedDpEvent(events)


def _poisson_event(z, prob):
    return dp_event.PoissonSampledDpEvent(prob, dp_event.GaussianDpEvent(z))


def _wor_event(z, prob):
    fraction = Fraction(prob).limit_denominator(10**9)  # B/n back as integers
    return dp_event.SampledWithoutReplacementDpEvent(
        fraction.denominator, fraction.numerator, dp_event.GaussianDpEvent(z))


@functools.lru_cache(maxsize=4096)
def _pld_epsilon(plain, groups, delta):
    if not groups and plain is None:
        return 0.0
    accountant = pld_privacy_accountant.PLDAccountant(
        NeighboringRelation.REPLACE_ONE, value_discretization_interval=PLD_DISCRETIZATION)
    # dp-accounting's REPLACE_ONE Gaussians read their multiplier as s / C with values of norm
    # <= C, i.e. means 2 apart in units of z: z = 2 * (s / replace-one sensitivity)
    accountant.compose(_composed_event(plain, groups, 2.0, _poisson_event))
    return float(accountant.get_epsilon(delta))


def pld_epsilon(gaussian_multiplier, subsampled, delta):
    """PLD bound (Poisson groups only): dp-accounting's PLD accountant, REPLACE_ONE."""
    groups = _entries(subsampled)
    if any(entry[3] != SAMPLING_POISSON for entry in groups):
        raise ValueError('the PLD bound models Poisson subsampling only')
    return _pld_epsilon(_plain_sigma(gaussian_multiplier), groups, float(delta))


@functools.lru_cache(maxsize=4096)
def _dpa_rdp_epsilon(plain, groups, delta):
    accountant = rdp_privacy_accountant.RdpAccountant(
        orders=list(RDP_ORDERS), neighboring_relation=NeighboringRelation.REPLACE_ONE)
    # dp-accounting's RDP accountant reads GaussianDpEvent's multiplier as s / sensitivity
    # (alpha / 2 z^2 at q = 1): our multiplier as it is
    accountant.compose(_composed_event(plain, groups, 1.0, _wor_event))
    return float(accountant.get_epsilon(delta))


def dpa_rdp_epsilon(gaussian_multiplier, subsampled, delta):
    """RDP (dp-accounting) bound (groups without replacement only)."""
    groups = _entries(subsampled)
    if any(entry[3] != SAMPLING_WOR for entry in groups):
        raise ValueError('the dp-accounting RDP bound models sampling without replacement only')
    return _dpa_rdp_epsilon(_plain_sigma(gaussian_multiplier), groups, float(delta))


def _precision(gaussian_multiplier, subsampled):
    plain = 0.0 if gaussian_multiplier is None else gaussian_multiplier**-2.0  # inf -> 0
    return plain + sum(int(entry[2]) / entry[0]**2 for entry in subsampled)


def exact_gaussian_epsilon(gaussian_multiplier, subsampled, delta):
    """Exact-Gaussian bound (amplification ignored): all releases as Gaussians, composed exactly."""
    _entries(subsampled)
    precision = _precision(gaussian_multiplier, subsampled)
    return 0.0 if precision == 0 else gaussian_epsilon(precision**-0.5, delta)


_BOUNDS = {
    BOUND_PLD: pld_epsilon,
    BOUND_RDP: rdp_epsilon,
    BOUND_RDP_DPA: dpa_rdp_epsilon,
    BOUND_EXACT: exact_gaussian_epsilon,
}


def bound_epsilon(name, gaussian_multiplier, subsampled, delta):
    """epsilon of the bound ``name`` (one of ``applicable_bounds``)."""
    return _BOUNDS[name](gaussian_multiplier, subsampled, delta)


def epsilon_bounds(gaussian_multiplier, subsampled, delta):
    """{bound name: epsilon} of every bound that holds (``applicable_bounds``); all are valid,
    the spend is their min."""
    return {name: bound_epsilon(name, gaussian_multiplier, subsampled, delta)
            for name in applicable_bounds(subsampled)}


def tighter_bound(bounds):
    """Name of the smallest bound (ties: the first in ``BOUND_ORDER``)."""
    return min(bounds, key=lambda name: (bounds[name], BOUND_ORDER.index(name)))


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


def _smallest_multiplier(spent, epsilon, high, tol):
    """Smallest sigma <= high with spent(sigma) <= epsilon, given spent(high) <= epsilon and
    spent decreasing: bracket downwards, then regula falsi (Illinois) on log spent against
    log sigma, nearly linear, until spent(high) is within ``tol`` of epsilon. Returns ``high``,
    so never a sigma that overspends."""
    f_high = spent(high)
    while True:
        # bracket: epsilon falls like sigma^-1 to sigma^-2 here, so sigma * f/epsilon is at or
        # below the answer; step down until the bound overspends
        low = max(high * min(f_high / epsilon, 0.9), high / 1e3)
        if low < 1e-4:  # no noise needed down to here: take the smallest tried
            return high
        f_low = spent(low)
        if f_low > epsilon:
            break
        high, f_high = low, f_low
    target = math.log(epsilon)
    g_low, g_high = math.log(f_low) - target, math.log(max(f_high, 1e-300)) - target
    side = 0
    for _ in range(100):
        if f_high >= epsilon - tol or high / low < 1 + 1e-12:
            break
        x_low, x_high = math.log(low), math.log(high)
        x = x_high - g_high * (x_high - x_low) / (g_high - g_low)
        # keep the step well inside the bracket (a flat or rounded bound can stall the secant)
        x = min(max(x, x_low + 1e-3 * (x_high - x_low)), x_high - 1e-3 * (x_high - x_low))
        mid = math.exp(x)
        f_mid = spent(mid)
        g_mid = math.log(max(f_mid, 1e-300)) - target
        if f_mid > epsilon:
            low, g_low = mid, g_mid
            if side == -1:
                g_high /= 2
            side = -1
        else:
            high, f_high, g_high = mid, f_mid, g_mid
            if side == 1:
                g_low /= 2
            side = 1
    return high


def calibrate_subsampled(epsilon, delta, gaussian_multiplier, prob, count, tol=EPSILON_TOLERANCE,
                         sampling=SAMPLING_WOR):
    """Smallest multiplier for ``count`` subsampled releases of scheme ``sampling`` so that,
    composed with the plain Gaussian part (multiplier ``gaussian_multiplier``, None for none),
    the min of the valid bounds (``epsilon_bounds``) is <= epsilon at delta, and within ``tol``
    of it.

    Every bound decreases in sigma, so the answer is the smallest of the per-bound calibrations:
    the exact Gaussian one in closed form, each other by bisection, tried only when it beats the
    best multiplier found so far.
    """
    (_, prob, count, sampling), = _entries([(1.0, prob, count, sampling)])
    best = exact_multiplier(epsilon, delta, gaussian_multiplier, count)
    group = (prob, count, sampling)
    for name in applicable_bounds([(1.0, *group)]):
        if name == BOUND_EXACT:
            continue

        def spent(sigma, name=name):
            return bound_epsilon(name, gaussian_multiplier, [(sigma, *group)], delta)

        if math.isfinite(best):
            if spent(best) > epsilon:
                continue  # this bound needs more noise than the best so far
            best = _smallest_multiplier(spent, epsilon, best, tol)
        else:  # the plain part alone spends the budget in the exact bound
            high = 1.0
            while spent(high) > epsilon:
                high *= 2
                if high > 1e6:
                    break
            else:
                best = _smallest_multiplier(spent, epsilon, high, tol)
    if not math.isfinite(best):
        raise ValueError('the remaining budget is too small for any subsampled release')
    return best


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
            'bound': ('min(PLD: dp-accounting REPLACE_ONE, pair (1-q) N(0, s^2) + q N(+-C, s^2); '
                      'RDP (autodp): Wang-Balle-Kasiviswanathan 2019 Thm 9 with gamma=q; '
                      'exact Gaussian)'),
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
