"""Integer-ness of numerical columns that nobody declared: one small DP vote.

A column's values being whole numbers is what makes SDMetrics (and users) see ``0`` rather than
``0.3``, and lets the default rule encode a small integer range one-hot. The private dtype cannot
say it: one row flips it (a 40.5 turns an int column into floats). So, for the k numerical columns
whose integer-ness is declared nowhere (no ``integer`` fact, no ``integer_columns`` entry, no
``computer_representation``, no ``decimal_places``), one vector is released:

    v_j = (1 - a) * #(finite non-integer values of column j) - a * #(finite integer values)
    v + N(0, (sigma * sqrt(k))^2 I),      a = FRACTION_ALLOWED = 0.2

Missing and infinite values count in neither term. Replacing one row changes each v_j by at most
1 (a non-integer becoming an integer: (1 - a) + a; a value becoming missing: at most 1 - a), so
||v(D) - v(D')||_2 <= sqrt(k). Column j is modelled as integer when its noisy v_j < 0, i.e. when
fewer than a = 20% of its present values have a fractional part (post-processing, no cost). A
plain majority would round columns recorded with mixed precision (lab values such as 0.6, 1, 2.5,
where about half are whole) and lose their small values.

The vote spends ``INTEGER_SHARE`` of the unspent precision, counted by the fit's accountant and
listed in the privacy report as ``integer_discovery``. It is skipped, spending nothing, when n
(public) is below ``MIN_ROWS_PER_STD`` noise standard deviations: the answer would be a coin flip,
so the columns stay floats and the curator is told to declare them. The margin of a column of
whole numbers is a * n, so the vote needs n >= MIN_ROWS_PER_STD / a noise stds: about 1,000 rows
at epsilon = 1 with six columns. Like domain discovery, it
counts chunk by chunk (``IntegerVoteCounter``) and partial counts merge by ``+``, so Parquet, Dask
and Spark fits run the same code and release the same values.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sdv_dpkme.domain.transformers import to_numbers

NAME = 'integer_discovery'
#: share of the unspent precision (1/sigma^2) the vote spends: 3% moves the rest's noise by 1.5%.
INTEGER_SHARE = 0.03
#: a column is integer when fewer than this share of its present values are fractional
FRACTION_ALLOWED = 0.2
#: the vote is taken only when a * n is at least this many noise stds (a column of whole numbers
#: without missing values then comes out integer with probability 1 - 3e-5)
MIN_ROWS_PER_STD = 4.0


def needs_vote(domain):
    """A numerical column whose integer-ness no public fact states."""
    return domain.sdtype == 'numerical' and domain.is_numeric and not domain.integer_declared


def sensitivity(n_columns):
    """L2 sensitivity of the vote vector under replace-one adjacency."""
    return math.sqrt(n_columns)


def vote_value(fractional, whole):
    """v_j from the exact counts; < 0 means fewer than FRACTION_ALLOWED are fractional."""
    return (1.0 - FRACTION_ALLOWED) * fractional - FRACTION_ALLOWED * whole


@dataclass
class IntegerVotes:
    """Exact votes of some rows. PRIVATE: they only reach the one noisy release in ``vote``.
    Votes of disjoint chunks merge by ``+`` (exact integer sums)."""

    n: int
    counts: dict  # column -> (#non-integer, #integer) among finite values

    def __add__(self, other):
        if list(self.counts) != list(other.counts):
            raise ValueError('cannot merge integer votes of different columns')
        return IntegerVotes(self.n + other.n, {
            c: (f + other.counts[c][0], w + other.counts[c][1])
            for c, (f, w) in self.counts.items()
        })

    def votes(self, columns):
        return np.array([vote_value(*self.counts[c]) for c in columns], dtype=float)


class IntegerVoteCounter:
    """Per chunk of rows: a pandas frame -> its ``IntegerVotes``. Holds only column names, keeps
    no state between chunks (a retried task recomputes the same votes)."""

    def __init__(self, columns):
        self.columns = list(columns)

    def __call__(self, frame):
        counts = {}
        for column in self.columns:
            values = to_numbers(frame[column], column)
            finite = values[np.isfinite(values)]
            whole = int(np.count_nonzero(finite == np.floor(finite)))
            counts[column] = (finite.size - whole, whole)
        return IntegerVotes(len(frame), counts)


@dataclass
class IntegerVote:
    """Public record of one vote: the release and the columns it made integer (DP outputs)."""

    release: object
    integer: dict = field(default_factory=dict)  # column -> bool

    def replay(self, accountant):
        accountant.record(self.release)


def vote(rows, columns, ledger, share=INTEGER_SHARE):
    """Release the integer votes of ``columns`` once; returns an ``IntegerVote``, or ``None``
    (nothing spent) when n is too small for the noise.

    ``rows``: the pandas table, or a distributed row source with ``len`` and
    ``discovery_counts(counter)`` (as for ``discovery.discover``).
    """
    accountant, mechanism = ledger.accountant, ledger.mechanism
    columns = list(columns)
    sigma = accountant.calibrate({NAME: (1.0, 1)}, fraction=share)[NAME]
    delta_s = sensitivity(len(columns))
    noise_std = sigma * delta_s
    n_rows = len(rows)  # public under replace-one adjacency
    if FRACTION_ALLOWED * n_rows < MIN_ROWS_PER_STD * noise_std:
        return None
    counter = IntegerVoteCounter(columns)
    exact = counter(rows) if isinstance(rows, pd.DataFrame) else rows.discovery_counts(counter)
    if exact.n != n_rows:  # nothing is released yet
        raise ValueError(
            f'The integer vote read {exact.n:,} rows, but {n_rows:,} were counted before it: the '
            'data changed during the fit. The vote released nothing, but a domain discovery '
            'before it in this fit is spent; fit again on stable data.'
        )
    counts = exact.votes(columns)
    del exact  # exact votes are never kept
    noisy = mechanism.release(
        counts, name=NAME,
        description=(f'integer vote of {len(columns)} numerical column(s) with no declared '
                     f'integer-ness: {1 - FRACTION_ALLOWED:g} x #non-integer - '
                     f'{FRACTION_ALLOWED:g} x #integer values, integer when < 0'),
        sensitivity=delta_s, noise_multiplier=sigma,
        details={'columns': columns, 'budget_share': share, 'noise_std_rows': noise_std,
                 'fraction_allowed': FRACTION_ALLOWED},
    ).numpy()
    del counts
    return IntegerVote(release=accountant.releases[-1],
                       integer={c: bool(v < 0) for c, v in zip(columns, noisy)})
