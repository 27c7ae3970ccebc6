"""Machine-readable record of what a fit spent."""

import json
import math
from dataclasses import asdict, dataclass, field

import pandas as pd

FIXED_SEED_NOTE = (
    'fixed noise seed: the noise is known, so the fit is NOT differentially private; '
    'epsilon_spent is inf (epsilon_calibrated is what the releases would spend with secret noise)'
)


@dataclass
class Release:
    """One noisy release (or ``count`` identical ones)."""

    name: str
    description: str
    mechanism: str
    sensitivity: float
    noise_multiplier: float
    noise_std: float
    count: int = 1
    sampling: str = 'none'
    dimension: int = 0
    sampling_probability: float = 1.0
    details: dict = field(default_factory=dict)


@dataclass
class DeltaReservation:
    """A share of delta set aside for a failure event outside the Gaussian accounting."""

    name: str
    delta: float
    description: str


@dataclass
class PrivacyReport:
    """What was promised, what was spent and through which releases."""

    epsilon: float
    delta: float
    epsilon_spent: float
    neighbouring_relation: str
    accountant: str
    noise_source: str
    public_inputs: list = field(default_factory=list)
    releases: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    # delta of the Gaussian composition: delta minus the reservations (epsilon_spent is at it)
    gaussian_delta: float = None
    reserved_delta: list = field(default_factory=list)
    # what the releases spend if the noise is secret; epsilon_spent is inf when it is not
    epsilon_calibrated: float = None
    # with subsampled releases: {bound name: epsilon} of every valid bound, and the one used (the
    # smallest); None otherwise (plain releases compose exactly)
    epsilon_bounds: dict = None
    bound_used: str = None
    # every option of the fit (``{'kernel.sum_order': 100, 'training.steps': 'auto', ...}``):
    # what each release was and how the releases were post-processed, all public settings
    parameters: dict = field(default_factory=dict)
    # the release plan, decided before any spend from public facts only: one dict per release
    # group (group, decision kept/narrowed/dropped, releases, planned, dimension, sensitivity,
    # noise_multiplier, expected_noise_norm, signal_bound, ratio, reason); empty where a
    # method has no such plan
    plan: list = field(default_factory=list)

    def __post_init__(self):
        self._settle()

    def _settle(self):
        if self.gaussian_delta is None:
            self.gaussian_delta = self.delta - sum(r.delta for r in self.reserved_delta)
        if self.epsilon_calibrated is None:
            self.epsilon_calibrated = self.epsilon_spent
        if not self.guarantee_holds:  # known noise: no finite epsilon holds
            self.epsilon_spent = math.inf
            if FIXED_SEED_NOTE not in self.notes:
                self.notes.append(FIXED_SEED_NOTE)

    @property
    def guarantee_holds(self):
        """False when a test-only fixed noise seed was used (the noise is then known)."""
        return not self.noise_source.startswith('fixed')

    def to_dict(self):
        out = asdict(self)
        out['guarantee_holds'] = self.guarantee_holds
        return out

    def to_json(self, path=None, indent=2):
        text = json.dumps(self.to_dict(), indent=indent, default=str)
        if path is not None:
            with open(path, 'w') as f:
                f.write(text)
        return text

    def to_frame(self):
        """One row per release."""
        return pd.DataFrame([asdict(r) for r in self.releases])

    def __str__(self):
        head = f'(epsilon={self.epsilon:g}, delta={self.delta:g})-DP; spent epsilon='
        if not self.guarantee_holds:
            head = ('NOT differentially private (fixed noise seed; target '
                    f'epsilon={self.epsilon:g}, delta={self.delta:g}); spent epsilon=')
        lines = [
            f'{head}{self.epsilon_spent:.6g} (calibrated epsilon={self.epsilon_calibrated:.6g}) '
            f'at delta={self.gaussian_delta:g}'
            + (' (Gaussian releases)' if self.reserved_delta else ''),
        ]
        lines += [f'reserved delta={r.delta:g} for {r.name}: {r.description}'
                  for r in self.reserved_delta]
        lines += [
            f'neighbouring relation: {self.neighbouring_relation}',
            f'accountant: {self.accountant}',
            f'noise: {self.noise_source}',
        ]
        if len(self.releases):
            lines.append(self.to_frame().drop(columns='details').to_string(index=False))
        lines.extend(f'note: {n}' for n in self.notes)
        for entry in self.plan:
            lines.append(
                f"plan: {entry['group']} {entry['decision']} ({entry['releases']} of "
                f"{entry['planned']} releases; expected noise norm "
                f"{entry['expected_noise_norm']:.3g}, signal bound {entry['signal_bound']:g}): "
                f"{entry['reason']}")
        if self.parameters:
            lines.append('options: ' + ', '.join(f'{k}={v!r}' for k, v in self.parameters.items()))
        return '\n'.join(lines)
