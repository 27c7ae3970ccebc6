"""The ledger of one fit: its accountant, its noise source and the Gaussian mechanism on both."""

from dataclasses import dataclass

from sdv_dpkme.privacy.accountant import PrivacyAccountant
from sdv_dpkme.privacy.mechanisms import GaussianMechanism, NoiseSource


@dataclass
class Ledger:
    """The accountant, noise source and mechanism of one fit."""

    accountant: PrivacyAccountant
    noise: NoiseSource
    mechanism: GaussianMechanism

    @classmethod
    def open(cls, epsilon, delta, noise_seed=None):
        """A fresh ledger: every release of the fit goes through it."""
        accountant = PrivacyAccountant(epsilon, delta)
        noise = NoiseSource(noise_seed)
        return cls(accountant, noise, GaussianMechanism(accountant, noise))
