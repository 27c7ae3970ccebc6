"""Steps (a) and (b) of private domain discovery: exact counts of the undeclared columns.

A numeric or datetime column is counted over a public grid of bins (``NUMERIC_EDGES`` /
``DATETIME_EDGES``, with -inf/+inf end bins) and a null bin; a categorical column per value
present and a null key. Partial counts of disjoint chunks merge by ``+``, so every path (one
frame, Parquet batches, Dask or Spark partitions) gives the same counts. The counts are PRIVATE:
they only ever reach the one noisy release in ``discovery.discover``.
"""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdv_dpkme.domain.transformers import to_numbers, to_timestamps_ns


def _numeric_edges(mantissas=('1', '1.5', '2', '3', '5', '7'), decades=range(-6, 16)):
    # decimal strings keep the edges exact (0.3, not 0.30000000000000004)
    positive = sorted(float(f'{m}e{j}') for j in decades for m in mantissas)
    return np.array([-x for x in reversed(positive)] + [0.0] + positive)


def _datetime_edges():
    years = pd.date_range('1700-01-01', '2250-01-01', freq='YS')
    quarters = pd.date_range('1950-01-01', '2050-01-01', freq='QS')
    return np.unique(np.concatenate([years.asi8, quarters.asi8])).astype(float)


# Public grids: 0, +-{1, 1.5, 2, 3, 5, 7} x 10^j for j = -6..15 (consecutive edges within a factor
# <= 1.67, so a tail of the distribution spans few bins), and year starts 1700-2250 refined to
# quarter starts 1950-2049 for datetimes (nanoseconds; months would spread a small table's rows
# too thin to clear the noise). Each also has a -inf and a +inf end bin.
NUMERIC_EDGES = _numeric_edges()
DATETIME_EDGES = _datetime_edges()


def grid_for(domain):
    return DATETIME_EDGES if domain.sdtype == 'datetime' else NUMERIC_EDGES


def _codes(data, domain):
    """Bin index of every row of a numeric column (0 = -inf end bin), null rows = -1."""
    if domain.sdtype == 'datetime':
        values = to_timestamps_ns(data, domain.name, domain.datetime_format)
    else:
        values = to_numbers(data, domain.name)
    null = np.isnan(values)
    codes = np.searchsorted(grid_for(domain), np.where(null, 0.0, values), side='right')
    codes[null] = -1
    return codes


NULL = ('null',)


def _value_order(value):
    """Sort key of a category value: that of ``ColumnDomain.categories``, with ``repr`` to break
    ties, so the order never depends on which chunk saw a value first."""
    return type(value).__name__, str(value), repr(value)


@dataclass
class DiscoveryCounts:
    """Exact counts of some rows for the columns to discover. PRIVATE: they only ever reach
    the one noisy release in ``discover`` (never a log, a warning or the fitted object).

    Partial counts of disjoint chunks merge by ``+`` (exact integer sums: associative and
    commutative), so one chunk of the whole table, Parquet batches, Dask or Spark partitions give
    the same counts. ``values[column]`` maps each value present to ``(representative, count)``:
    equal values of different types (1 and 1.0 from partitions with different dtypes) merge as
    pandas would, and keep the representative that sorts first, whatever the merge order.
    """

    n: int
    bins: dict  # numeric column -> int64 count per bin of its public grid (data-independent length)
    values: dict  # categorical column -> {value: (representative, count)}
    nulls: dict  # column -> null count

    def __add__(self, other):
        if (list(self.bins) != list(other.bins) or list(self.values) != list(other.values)
                or any(self.bins[c].shape != other.bins[c].shape for c in self.bins)):
            raise ValueError('cannot merge discovery counts of different columns')
        values = {}
        for column, mine in self.values.items():
            merged = dict(mine)
            for value, (rep, count) in other.values[column].items():
                if value in merged:
                    old_rep, old_count = merged[value]
                    rep = min(old_rep, rep, key=_value_order)
                    count += old_count
                merged[value] = (rep, count)
            values[column] = merged
        return DiscoveryCounts(
            self.n + other.n, {c: b + other.bins[c] for c, b in self.bins.items()}, values,
            {c: k + other.nulls[c] for c, k in self.nulls.items()},
        )

    def entries(self, columns):
        """``[((column, key), count), ...]`` in a canonical order (grid order, values sorted,
        null last per column): it does not depend on how the rows were split or ordered, so the
        same noise draw lands on the same key on every path."""
        out = []
        for column in columns:
            if column in self.bins:
                out += [((column, ('bin', i)), int(c)) for i, c in enumerate(self.bins[column])]
            else:
                reps = sorted(self.values[column].values(), key=lambda item: _value_order(item[0]))
                out += [((column, ('value', rep)), int(count)) for rep, count in reps]
            out.append(((column, NULL), int(self.nulls[column])))
        return out


class DiscoveryCounter:
    """Step (a) of discovery, per chunk of rows: a pandas frame -> its ``DiscoveryCounts``.

    Holds only public facts (the undeclared columns' sdtypes and formats; the grids are module
    constants), so it is pickled to the workers of a distributed fit; it keeps no state between
    chunks, so a retried task recomputes the same counts.
    """

    def __init__(self, undeclared):
        self.domains = dict(undeclared)
        self.columns = list(undeclared)

    def __call__(self, frame):
        bins, values, nulls = {}, {}, {}
        for column, domain in self.domains.items():
            data = frame[column]
            if domain.is_numeric:
                codes = _codes(data, domain)
                n_bins = len(grid_for(domain)) + 1
                bins[column] = np.bincount(codes[codes >= 0], minlength=n_bins).astype(np.int64)
                nulls[column] = int((codes < 0).sum())
            else:
                series = pd.Series(np.asarray(data, dtype=object))
                present = series.value_counts(dropna=True, sort=False)
                values[column] = {v: (v, int(c)) for v, c in present.items()}
                nulls[column] = int(series.isna().sum())
        return DiscoveryCounts(len(frame), bins, values, nulls)


def column_counts(data, domain):
    """Exact counts of one column: ``[(key, count), ...]``. PRIVATE: only ever released noised.

    Keys: ``('bin', i)`` for every bin of a numeric column's grid (all of them, data-independent),
    ``('value', v)`` for each value present in a categorical column, and ``NULL``.
    """
    frame = pd.DataFrame({domain.name: data})
    counts = DiscoveryCounter({domain.name: domain})(frame)
    return [(key, count) for (_, key), count in counts.entries([domain.name])]


def count_vector(table, domains):
    """``{(column, key): count}`` over all columns to discover; each row adds k ones."""
    return dict(DiscoveryCounter(domains)(table).entries(list(domains)))


def sensitivity(n_columns):
    """L2 sensitivity of the concatenated histograms under replace-one adjacency."""
    return math.sqrt(2 * n_columns)
