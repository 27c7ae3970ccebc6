"""The ledger of one fit: its accountant, its noise source and the Gaussian mechanism on both."""

import warnings
from dataclasses import dataclass

from sdv_dpkme.privacy.accountant import PrivacyAccountant
from sdv_dpkme.privacy.mechanisms import GaussianMechanism, NoiseSource, NotPrivateWarning
from sdv_dpkme.privacy.testing import active_seed


@dataclass
class Ledger:
    """The accountant, noise source and mechanism of one fit."""

    accountant: PrivacyAccountant
    noise: NoiseSource
    mechanism: GaussianMechanism

    @classmethod
    def open(cls, epsilon, delta):
        """A fresh ledger: every release of the fit goes through it. Its noise is secret unless
        a test fixed it (``sdv_dpkme.privacy.testing.fixed_noise``)."""
        seed = active_seed()
        if seed is not None:
            warnings.warn(
                f'fixed_noise({seed!r}) fixes the privacy noise: anyone who knows the seed can '
                'remove the noise, so this fit is NOT differentially private (its privacy '
                'report says epsilon_spent=inf). Use it only in tests.',
                NotPrivateWarning, stacklevel=2,
            )
        accountant = PrivacyAccountant(epsilon, delta)
        noise = NoiseSource(seed)
        return cls(accountant, noise, GaussianMechanism(accountant, noise))
