"""autodp entry point.

Importing ``autodp.privacy_calibrator`` first fails on a circular import (autodp #51), so this module
imports ``mechanism_zoo`` first and every other part of the package goes through it.
"""

import numpy as np
from autodp import mechanism_zoo  # noqa: F401  (must come first)
from autodp import calibrator_zoo, transformer_zoo
from autodp.autodp_core import Mechanism

__all__ = ['Mechanism', 'mechanism_zoo', 'calibrator_zoo', 'transformer_zoo', 'analytic_gaussian_multiplier',
           'approx_dp', 'gaussian_epsilon']


def approx_dp(mechanism, delta):
    """``mechanism.get_approxDP(delta)`` without numpy's float warnings: autodp's RDP conversion
    brackets its order search at alpha = 1, where its objective is inf by design, and its curves
    take log(0) at q = 1; scipy recovers, but users saw RuntimeWarnings from every fit. Any order
    the search settles on gives a valid bound, so nothing is lost."""
    with np.errstate(all='ignore'):
        return float(mechanism.get_approxDP(delta))


def gaussian_epsilon(noise_multiplier, delta):
    """Exact epsilon of one Gaussian release with this noise multiplier (analytic Gaussian)."""
    return approx_dp(mechanism_zoo.ExactGaussianMechanism(sigma=noise_multiplier), delta)


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
