"""Encoding scale of a numerical column, chosen from its public domain alone (never from rows).

'linear' or 'log' map the declared bounds onto [0, 1]; 'discrete' one-hot encodes an integer
column over its values. ``default_scale`` is the rule for a column whose scale is not declared
(docs/domains.md, "Default encoding"). The functions read a ``ColumnDomain``'s public facts.
"""

#: encodings of a numerical column: [0, 1] linear or log, or one-hot over its integer values
SCALES = ('linear', 'log', 'discrete')
#: most values an integer column may take to be modelled as discrete (one-hot)
MAX_DISCRETE_VALUES = 256


def discrete_bounds(low, high):
    """Integer bounds with at most MAX_DISCRETE_VALUES integers between them."""
    low, high = float(low), float(high)
    return low.is_integer() and high.is_integer() and high - low + 1 <= MAX_DISCRETE_VALUES


def fits_discrete(domain):
    """An integer numerical column whose bounds are ``discrete_bounds``."""
    return (domain.sdtype == 'numerical' and bool(domain.integer)
            and discrete_bounds(domain.low, domain.high))


#: default encoding rule (docs/domains.md, "Default encoding"): a numerical column whose scale
#: is not declared gets one chosen from its declared domain alone, never from rows.
#: An integer column with at most this many values is one-hot ('discrete'): its spikes (40 hours,
#: one educational-num per degree) are 0.01 or more apart on [0, 1], at or above the marginal
#: kernels' length, so a continuous encoding blurs exactly the values that carry the mass.
DEFAULT_DISCRETE_VALUES = 100
#: Non-negative bounds whose high is this many times the low (or 1) get a log scale: money and
#: counts spanning orders of magnitude, where 0 and 100 sit 0.001 apart on the linear scale.
DEFAULT_LOG_RATIO = 1000


def default_scale(domain):
    """The encoding of a numerical column with declared bounds and no declared scale.

    Reads only public facts of ``domain``: its bounds (span, sign), whether it was declared
    integer, and how many integer values the bounds hold. No row is read, so the choice costs no
    budget and is the same for every table with the same declaration.
    """
    if domain.sdtype != 'numerical' or domain.low is None:
        return None
    if (domain.integer and discrete_bounds(domain.low, domain.high)
            and domain.high - domain.low + 1 <= DEFAULT_DISCRETE_VALUES):
        return 'discrete'
    if domain.low >= 0 and domain.high >= DEFAULT_LOG_RATIO * max(domain.low, 1.0):
        return 'log'
    return 'linear'


def is_discrete(domain):
    """Whether a numerical column is modelled one-hot over its integer values: only when its
    declared scale says 'discrete' (a public modelling choice) and the bounds allow it."""
    return (domain.sdtype == 'numerical' and domain.low is not None
            and domain.scale == 'discrete' and fits_discrete(domain))
