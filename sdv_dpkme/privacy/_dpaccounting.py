"""dp-accounting entry point: its PLD and RDP accountants under REPLACE_ONE, with the conventions
pinned (see ``subsampled`` and docs/privacy.md, "Accounting of subsampled releases").

Groups are tuples (sigma, sampling probability, count, scheme), sigma relative to the replace-one
sensitivity of the released statistic; ``plain`` is the plain releases' sigma_eff or None.
"""

import functools
from fractions import Fraction

from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import rdp_privacy_accountant

#: dp-accounting's value_discretization_interval: the PLD's privacy losses are rounded to this
#: grid pessimistically (an upper bound at any value); 1e-3 costs < 0.1% of epsilon against
#: 1e-4 at DP-SGD schedules and is about 10x faster, which calibration needs
PLD_DISCRETIZATION = 1e-3
#: the privacy losses' range grows like 1/sigma^2: below this multiplier (plain or group) the
#: interval grows as (PLD_COARSEN_BELOW / sigma)^2 so the grid keeps its size (still an upper
#: bound; epsilon is large there); below PLD_MIN_MULTIPLIER the PLD is not evaluated
PLD_COARSEN_BELOW = 0.5
PLD_MIN_MULTIPLIER = 0.02
#: orders of the dp-accounting RDP bound: sparser than its default, whose integer orders up to
#: 256 cost O(order^2) each and calibration evaluates the bound often (any order set is valid)
RDP_ORDERS = tuple([1 + x / 8 for x in range(1, 16)] + list(range(3, 21))
                   + list(range(22, 33, 2)) + list(range(36, 65, 4)) + [80, 96, 128])


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


def pld_discretization(smallest_multiplier):
    """The PLD's value_discretization_interval for a composition whose smallest multiplier is
    ``smallest_multiplier``."""
    return PLD_DISCRETIZATION * max(1.0, (PLD_COARSEN_BELOW / smallest_multiplier) ** 2)


@functools.lru_cache(maxsize=4096)
def pld_epsilon(plain, groups, delta):
    if not groups and plain is None:
        return 0.0
    smallest = min([entry[0] for entry in groups] + ([plain] if plain else []))
    accountant = pld_privacy_accountant.PLDAccountant(
        NeighboringRelation.REPLACE_ONE,
        value_discretization_interval=pld_discretization(smallest))
    # dp-accounting's REPLACE_ONE Gaussians read their multiplier as s / C with values of norm
    # <= C, i.e. means 2 apart in units of z: z = 2 * (s / replace-one sensitivity)
    accountant.compose(_composed_event(plain, groups, 2.0, _poisson_event))
    return float(accountant.get_epsilon(delta))


@functools.lru_cache(maxsize=4096)
def rdp_wor_epsilon(plain, groups, delta):
    accountant = rdp_privacy_accountant.RdpAccountant(
        orders=list(RDP_ORDERS), neighboring_relation=NeighboringRelation.REPLACE_ONE)
    # dp-accounting's RDP accountant reads GaussianDpEvent's multiplier as s / sensitivity
    # (alpha / 2 z^2 at q = 1): our multiplier as it is
    accountant.compose(_composed_event(plain, groups, 1.0, _wor_event))
    return float(accountant.get_epsilon(delta))
