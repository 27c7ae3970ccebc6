"""One accountant per fit: calibrates noise multipliers and records every release.

The composition of non-subsampled Gaussian releases is exactly one Gaussian mechanism with
multiplier sigma_eff = (sum_i count_i / sigma_i^2)^(-1/2) (Gaussian DP composition), whose
(epsilon, delta) curve is the analytic Gaussian one (Balle & Wang 2018), evaluated by autodp.
With subsampled releases (minibatches without replacement, or Poisson-subsampled DP-SGD steps)
the spend is the min of several valid bounds (for Poisson groups, dp-accounting's PLD accountant
under replace-one), see ``subsampled``; the report names each and the one used.

A mechanism that is a Gaussian release *except on a bad event of probability <= p* (the thresholded
histogram of domain discovery: a value held by one row passing the threshold) reserves p of delta
first; the Gaussian composition is then calibrated and reported at delta - reserved, so the whole fit
is (epsilon, delta)-DP.
"""

import math

from sdv_dpkme.privacy._autodp import analytic_gaussian_multiplier, gaussian_epsilon
from sdv_dpkme.privacy.report import DeltaReservation, PrivacyReport, Release
from sdv_dpkme.privacy.subsampled import (
    SAMPLING_WOR,
    accountant_description,
    calibrate_subsampled,
    check_scheme,
    epsilon_bounds,
    tighter_bound,
)

REPLACE_ONE = (
    'replace-one: two tables are neighbours if they have the same number of rows n and differ in '
    'one row; n is treated as public'
)

ACCOUNTANT = (
    'exact composition of non-subsampled Gaussian releases (sigma_eff = (sum count/sigma^2)^-1/2), '
    'analytic Gaussian epsilon via autodp ExactGaussianMechanism'
)


class BudgetExceededError(RuntimeError):
    """A release would spend more than the declared budget."""


#: autodp's analytic Gaussian calibrator evaluates exp(epsilon), which overflows a float past ~709
MAX_FINITE_EPSILON = 700.0


def validate_budget(epsilon, delta, calibrated=False):
    """Raise ValueError unless 0 < epsilon <= inf and 0 < delta < 1; ``calibrated``: the budget
    will calibrate noise, so a finite epsilon must also be at most MAX_FINITE_EPSILON (recording
    and reporting releases works at any epsilon)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        raise ValueError(f'epsilon must be a positive number, got {epsilon!r}.')
    if isinstance(delta, bool) or not isinstance(delta, (int, float)):
        raise ValueError(f'delta must be a number in (0, 1), got {delta!r}.')
    if not epsilon > 0 or math.isnan(epsilon):
        raise ValueError(f'epsilon must be > 0, got {epsilon!r}. Smaller epsilon = more privacy.')
    if math.isinf(epsilon):
        return
    if calibrated and epsilon > MAX_FINITE_EPSILON:
        raise ValueError(
            f'epsilon={epsilon!r} is above {MAX_FINITE_EPSILON:g}, where the analytic Gaussian '
            'calibration overflows (it evaluates exp(epsilon)); the noise there is negligible '
            "anyway. For a non-private reference fit, pass epsilon=float('inf')."
        )
    if not 0 < delta < 1:
        raise ValueError(
            f'delta must be in (0, 1), got {delta!r}; choose it well below 1/n, e.g. 1e-5.'
        )


class PrivacyAccountant:
    """Ledger of Gaussian releases against an (epsilon, delta) budget.

    ``epsilon=float('inf')`` is the non-private reference mode: no noise is added and the report
    says so.
    """

    def __init__(self, epsilon, delta, neighbouring_relation=REPLACE_ONE):
        validate_budget(epsilon, delta)
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.neighbouring_relation = neighbouring_relation
        self.releases = []
        self.reserved = []
        self.notes = []
        self._total_precision = {}

    @property
    def private(self):
        return math.isfinite(self.epsilon)

    @property
    def gaussian_delta(self):
        """delta left to the Gaussian composition once the reservations are taken off."""
        return self.delta - sum(r.delta for r in self.reserved)

    def reserve_delta(self, amount, name, description=''):
        """Set ``amount`` of delta aside for a bad event that the Gaussian accounting omits.

        Only before the first release: every calibration depends on the Gaussian delta.
        """
        if self.releases:
            raise RuntimeError('delta must be reserved before the first release')
        amount = float(amount)
        if not 0 < amount < self.gaussian_delta:
            raise ValueError(
                f'cannot reserve delta={amount!r}: {self.gaussian_delta:g} is left unreserved'
            )
        self.reserved.append(DeltaReservation(name, amount, description))

    def add_note(self, note):
        self.notes.append(note)

    def calibrate(self, plan, fraction=1.0):
        """Noise multipliers that spend ``fraction`` of the budget still unspent.

        ``plan`` maps a release name to ``(share, count)``: the group gets ``share`` of that
        precision (1/sigma^2 adds up under composition), split evenly over its ``count`` releases.
        Shares must sum to 1. Earlier releases (e.g. domain discovery) are taken off first, so a
        plan calibrated with ``fraction=1`` spends exactly the rest of the budget.
        Returns ``{name: noise multiplier of each of its releases}`` (0 when not private).
        """
        total = sum(share for share, _ in plan.values())
        if not math.isclose(total, 1.0, rel_tol=1e-9) or any(s <= 0 for s, _ in plan.values()):
            raise ValueError(f'release shares must be positive and sum to 1, got {plan}')
        if not 0 < fraction <= 1:
            raise ValueError(f'fraction must be in (0, 1], got {fraction!r}')
        if not self.private:
            return dict.fromkeys(plan, 0.0)
        available = self.remaining_precision() * fraction
        if available <= 1e-9 * self.total_precision():
            raise BudgetExceededError('the privacy budget is already spent')
        return {
            name: math.sqrt(count / (share * available)) for name, (share, count) in plan.items()
        }

    def total_precision(self):
        """1/sigma_eff^2 of the single Gaussian release that spends the whole budget."""
        delta = self.gaussian_delta
        if delta not in self._total_precision:  # autodp solves numerically: cache it
            self._total_precision[delta] = analytic_gaussian_multiplier(self.epsilon, delta) ** -2
        return self._total_precision[delta]

    def remaining_precision(self):
        used = sum(r.count / r.noise_multiplier**2 for r in self.releases if r.noise_multiplier)
        return self.total_precision() - used

    def effective_multiplier(self, releases=None):
        releases = self.releases if releases is None else releases
        precision = sum(r.count / r.noise_multiplier**2 for r in releases)
        return math.inf if precision == 0 else 1 / math.sqrt(precision)

    def epsilon_spent(self, releases=None):
        """epsilon at the Gaussian delta; with subsampled releases the min of the valid bounds
        (``subsampled.epsilon_bounds``)."""
        return self._spend(releases)[0]

    def _spend(self, releases=None):
        """(epsilon, {bound name: epsilon} or None when there is no subsampled release)."""
        releases = self.releases if releases is None else releases
        if not releases:
            return 0.0, None
        if any(r.noise_multiplier == 0 for r in releases):
            return math.inf, None
        plain = [r for r in releases if r.sampling == 'none']
        sampled = [r for r in releases if r.sampling != 'none']
        sigma_eff = self.effective_multiplier(plain)
        if not sampled:  # exact Gaussian composition
            return gaussian_epsilon(sigma_eff, self.gaussian_delta), None
        bounds = epsilon_bounds(
            sigma_eff,
            [(r.noise_multiplier, r.sampling_probability, r.count, r.sampling) for r in sampled],
            self.gaussian_delta,
        )
        return min(bounds.values()), bounds

    def calibrate_subsampled(self, sampling_probability, count, sampling=SAMPLING_WOR):
        """Multiplier for ``count`` subsampled releases that spends the rest of the budget.

        ``sampling``: ``SAMPLING_WOR`` or ``SAMPLING_POISSON`` (multipliers relative to the
        replace-one sensitivity of the released statistic). The smallest multiplier for which the
        min of the valid bounds (PLD for Poisson groups, see ``subsampled``) is at most the
        budget, and within ``subsampled.EPSILON_TOLERANCE`` of it.
        """
        check_scheme(sampling)
        if not self.private:
            return 0.0
        plain = [r for r in self.releases if r.sampling == 'none']
        if any(r.sampling != 'none' for r in self.releases):
            raise NotImplementedError('one group of subsampled releases per fit')
        return calibrate_subsampled(
            self.epsilon, self.gaussian_delta, self.effective_multiplier(plain) if plain else None,
            sampling_probability, count, sampling=sampling,
        )

    def record(self, release):
        """Add a release; refuse it if the total would exceed the budget."""
        if release.sampling != 'none':
            check_scheme(release.sampling)
        if self.private:
            if release.noise_multiplier <= 0:
                raise BudgetExceededError(f'release {release.name!r} has no noise')
            spent = self.epsilon_spent([*self.releases, release])
            if spent > self.epsilon * (1 + 1e-9):
                raise BudgetExceededError(
                    f'release {release.name!r} would spend epsilon={spent:.6g} > {self.epsilon:g}'
                )
        self.releases.append(release)

    def report(self, noise_source, public_inputs=(), notes=()):
        """The privacy report of the releases so far.

        ``noise_source``: the fit's ``NoiseSource`` or its ``describe()`` string. With a fixed
        seed the report itself sets ``epsilon_spent`` to inf (``epsilon_calibrated`` keeps what
        the releases would spend with secret noise).
        """
        description = noise_source if isinstance(noise_source, str) else noise_source.describe()
        notes = [*self.notes, *notes]
        if not self.private:
            notes.append('epsilon=inf: NON-PRIVATE reference run, no noise was added.')
        spent, bounds = self._spend()
        accountant, used = ACCOUNTANT, None
        schemes = [r.sampling for r in self.releases if r.sampling != 'none']
        if schemes:
            accountant = accountant_description(schemes)
            if bounds is not None:
                used = tighter_bound(bounds)
                accountant += (
                    f' -- the tighter one here: {used} ('
                    + ', '.join(f'{name} epsilon={value:.6g}' for name, value in bounds.items())
                    + ')'
                )
        return PrivacyReport(
            epsilon=self.epsilon,
            delta=self.delta,
            epsilon_spent=spent,
            neighbouring_relation=self.neighbouring_relation,
            accountant=accountant,
            noise_source=description,
            public_inputs=list(public_inputs),
            releases=list(self.releases),
            notes=notes,
            gaussian_delta=self.gaussian_delta,
            reserved_delta=list(self.reserved),
            epsilon_bounds=None if bounds is None else dict(bounds),
            bound_used=used,
        )


__all__ = ['PrivacyAccountant', 'BudgetExceededError', 'Release', 'validate_budget']
