"""autodp entry point.

Importing ``autodp.privacy_calibrator`` first fails on a circular import (autodp #51), so this module
imports ``mechanism_zoo`` first and every other part of the package goes through it.
"""

from autodp import mechanism_zoo  # noqa: F401  (must come first)
from autodp import calibrator_zoo, transformer_zoo
from autodp.autodp_core import Mechanism

__all__ = ['Mechanism', 'mechanism_zoo', 'calibrator_zoo', 'transformer_zoo', 'analytic_gaussian_multiplier', 'gaussian_epsilon']


def gaussian_epsilon(noise_multiplier, delta):
    """Exact epsilon of one Gaussian release with this noise multiplier (analytic Gaussian)."""
    return float(mechanism_zoo.ExactGaussianMechanism(sigma=noise_multiplier).get_approxDP(delta))


def analytic_gaussian_multiplier(epsilon, delta):
    """Smallest noise multiplier of one Gaussian release that is (epsilon, delta)-DP.

    autodp's calibrator solves numerically; the answer is nudged up until autodp's own exact
    epsilon for it is at most the target, so rounding can never overspend.
    """
    mech = calibrator_zoo.ana_gaussian_calibrator()(
        mechanism_zoo.ExactGaussianMechanism, epsilon, delta
    )
    sigma = float(mech.params['sigma'])
    while gaussian_epsilon(sigma, delta) > epsilon:
        sigma *= 1 + 1e-9
    return sigma
