"""Machine-readable record of what a fit spent."""

import json
from dataclasses import asdict, dataclass, field

import pandas as pd


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

    def __post_init__(self):
        if self.gaussian_delta is None:
            self.gaussian_delta = self.delta - sum(r.delta for r in self.reserved_delta)

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
        lines = [
            f'(epsilon={self.epsilon:g}, delta={self.delta:g})-DP; spent epsilon='
            f'{self.epsilon_spent:.6g} at delta={self.gaussian_delta:g}'
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
        return '\n'.join(lines)
