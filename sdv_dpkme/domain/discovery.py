"""Private domain discovery: one Gaussian release of count histograms, then public thresholds.

For the k modelled columns that lack a declared domain, one vector is released:

    h = [histogram of column 1 ; ... ; histogram of column k]  +  N(0, (sigma * sqrt(2k))^2 I)

- numerical / datetime column: counts over a public grid of bins (``NUMERIC_EDGES`` /
  ``DATETIME_EDGES``, with -inf/+inf end bins) and a null bin;
- categorical / ordinal column: counts of each value present in the data and a null key.

Sensitivity: every row adds exactly 1 to exactly one entry of each column's histogram, so replacing
one row moves one unit from one entry to another in each column: ||h(D) - h(D')||_2 <= sqrt(2k).

Post-processing (costs nothing):
- bounds = outer edges of the outermost grid bins whose noisy count is >= ``numeric_threshold``;
- categories = the values whose noisy count is >= ``category_threshold`` (partition selection);
- nullable = the noisy null count is >= ``null_threshold`` (unless nullability was declared);
- the share of rows each domain cuts = (n - noisy counts kept inside it) / n, n being public;
- ``warn_single_category`` warns about a category list of one value (a constant column), and a
  column where nothing cleared keeps only its missing bucket, with a warning.

Three steps, so a distributed fit runs the same code (sdv_dpkme.scale): (a) ``DiscoveryCounter``
counts a chunk of rows; (b) partial ``DiscoveryCounts`` merge by ``+`` (exact integers; the
engine's reduce) (both in ``discovery_counts``); (c) ``discover`` adds the noise once to the
merged counts, in a canonical key order, and thresholds. In memory, (a) runs on the whole table
as one chunk. What the curator is told, and the refusals: ``discovery_messages``.

Before the release: a table with fewer rows than a column's threshold is refused (n and the
thresholds are public), so a hopeless discovery spends nothing.

The set of categorical keys comes from the data, so the histogram alone is not a Gaussian mechanism
on a fixed vector. Its privacy argument (documented in docs/privacy.md): compare with the Gaussian
mechanism H over the union of the keys of two neighbours D, D'. Per column, at most one key is held
only by the replaced row in D (count 1, absent from D') and at most one only by the new row in D'.
Outside the event "one of those keys, at count 1 (or at count 0 in H), clears the threshold" the
outputs of the real mechanism and of H coincide, so the fit is (epsilon, delta_G + delta_T)-DP with
delta_T >= k_cat * (P[N >= T - 1] + P[N >= T]), N ~ N(0, s^2): ``category_threshold`` solves that
for T, and the accountant reserves delta_T before any release.
"""

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import brentq
from scipy.stats import norm

from sdv_dpkme.domain.discovery_counts import (
    DATETIME_EDGES,
    NULL,
    NUMERIC_EDGES,
    DiscoveryCounter,
    count_vector,
    grid_for,
    sensitivity,
)
from sdv_dpkme.domain.discovery_messages import (
    DomainDiscoveryWarning,
    hopeless_message,
    show_cut,
    show_value,
    warn_discovered,
    warn_released_nothing,
    warn_single_category,
)
from sdv_dpkme.domain.hints import sdtype_hint
from sdv_dpkme.domain.scales import MAX_DISCRETE_VALUES, fits_discrete
from sdv_dpkme.domain.spec import ColumnDomain, DomainError

# Share of delta reserved for the category threshold (only when a categorical column is discovered).
DELTA_SHARE = 0.1
# Probability that some empty bin of a column's grid (or its empty null bin) clears its threshold.
FALSE_BIN_RATE = 1e-3
NAME = 'domain_discovery'

# the discovery API other modules use from here
__all__ = ['DATETIME_EDGES', 'NAME', 'NUMERIC_EDGES', 'Discovery', 'DiscoveryCounter',
           'DomainDiscoveryWarning', 'category_threshold', 'count_vector',
           'discover', 'numeric_threshold', 'sensitivity', 'warn_discovered',
           'warn_single_category']


# ------------------------------------------------------------------------------ thresholds
def numeric_threshold(noise_std, n_bins):
    """Noisy count a grid bin needs: an empty bin anywhere on the grid clears it w.p. <= 1e-3."""
    if noise_std == 0:
        return 0.5  # no noise: a bin with one row
    return noise_std * norm.isf(FALSE_BIN_RATE / n_bins)


def null_threshold(noise_std):
    return numeric_threshold(noise_std, 1)


def single_row_release_probability(noise_std, threshold):
    """P[count 1 + N(0, s^2) >= T]: how likely a value held by one row is released."""
    if noise_std == 0:
        return 1.0
    return float(norm.sf((threshold - 1) / noise_std))


def category_threshold(noise_std, delta_threshold, n_columns):
    """Smallest T with n_columns * (P[N >= T - 1] + P[N >= T]) <= delta_threshold.

    Per column, a replaced row can make one value disappear (count 1 -> 0) and one appear
    (0 -> 1); the first term bounds releasing the one at count 1, the second the comparison
    mechanism releasing the one at count 0 (union bound over the columns).
    """
    if noise_std == 0:
        return 0.5
    target = delta_threshold / n_columns

    def excess(t):
        return norm.sf((t - 1) / noise_std) + norm.sf(t / noise_std) - target

    high = 1 + noise_std * (norm.isf(target / 2) + 1)
    return float(brentq(excess, 1.0, high, xtol=1e-10 * max(1.0, high)))


# -------------------------------------------------------------------------------- discovery
@dataclass
class Discovery:
    """Public record of one discovery: DP outputs and the parameters that produced them."""

    domains: dict
    release: object  # the Release recorded in the accountant
    reservation: object = None  # the DeltaReservation, if categories were discovered
    summary: dict = field(default_factory=dict)
    # {column: (share of rows the domain likely cuts, its noise std)}: post-processing only
    cut: dict = field(default_factory=dict)

    def replay(self, accountant):
        """Record this release in a new accountant (a later fit reusing the same encoding)."""
        if self.reservation is not None and accountant.private:
            accountant.reserve_delta(
                self.reservation.delta, self.reservation.name, self.reservation.description
            )
        accountant.record(self.release)


# Move the inner bound to 0 when it is within this fraction of the outer bound (one-signed data).
ZERO_SNAP = 0.25


def _bounds_from_bins(cleared, edges, integer, snap_to_zero=True):
    first, last = cleared[0], cleared[-1]
    # bin i covers [edges[i-1], edges[i]); end bins are clipped at the outermost finite edge
    low = edges[max(first - 1, 0)]
    high = edges[min(last, len(edges) - 1)]
    if high <= low:  # only an end bin cleared: widen to the adjacent grid bin
        if first == 0:
            high = edges[1]
        else:
            low = edges[-2]
    # The grid is geometric, so a thin tail towards 0 spreads over many narrow bins that each
    # stay under the threshold; for one-signed data, reaching 0 costs <= ZERO_SNAP of the range.
    if snap_to_zero and 0 < low <= ZERO_SNAP * high:
        low = 0.0
    elif snap_to_zero and high < 0 and -high <= ZERO_SNAP * -low:
        high = 0.0
    if integer:
        low, high = math.floor(low), math.ceil(high)
    return float(low), float(high)


def discover(rows, undeclared, ledger, budget_share, delta_share=DELTA_SHARE):
    """Release the histograms of ``undeclared`` columns once and derive their domains.

    ``rows``: the pandas table (counted as one chunk), or a distributed row source: ``len`` (n,
    public) and ``discovery_counts(counter)``, the merge of ``counter`` (a ``DiscoveryCounter``)
    mapped over its chunks. Either way the merged exact counts reach only the noise step below,
    so both paths release the same values for the same noise draw.
    ``undeclared`` maps columns to ColumnDomain holding their public facts. The release spends
    ``budget_share`` of the unspent precision of ``ledger.accountant`` (and reserves
    ``delta_share`` of delta when a categorical column is discovered). Returns a ``Discovery``.
    A column where nothing could be released keeps only its missing bucket (``released_nothing``)
    with a warning: the release is spent by then, so the fit goes on.
    """
    if not 0 < budget_share < 1:
        raise ValueError(f'domain_budget_share must be in (0, 1), got {budget_share!r}')
    for dom in undeclared.values():  # checked before anything is spent
        scale = getattr(dom, 'scale', None)
        if scale == 'log' and dom.sdtype != 'numerical':
            raise DomainError(f"Column '{dom.name}': a log scale needs a numerical column.")
        if scale == 'discrete' and not (dom.sdtype == 'numerical' and dom.integer):
            raise DomainError(
                f"Column '{dom.name}': a discrete scale needs an integer numerical column."
            )
    accountant, mechanism = ledger.accountant, ledger.mechanism
    columns = list(undeclared)
    k = len(columns)
    categorical = [c for c in columns if not undeclared[c].is_numeric]

    reservation = None
    if categorical and accountant.private:
        accountant.reserve_delta(
            delta_share * accountant.delta, 'category_threshold',
            f'a value held by one row passes the release threshold in one of {categorical}',
        )
        reservation = accountant.reserved[-1]
    sigma = accountant.calibrate({NAME: (1.0, 1)}, fraction=budget_share)[NAME]
    delta_s = sensitivity(k)
    noise_std = sigma * delta_s
    t_null = float(null_threshold(noise_std))
    t_cat = (category_threshold(noise_std, reservation.delta, len(categorical))
             if reservation is not None else (0.5 if categorical else None))
    t_num = {c: float(numeric_threshold(noise_std, len(grid_for(undeclared[c])) + 1))
             for c in columns if undeclared[c].is_numeric}
    n_rows = len(rows)  # public under replace-one adjacency
    hopeless = [c for c in columns if n_rows < (t_num[c] if c in t_num else t_cat)]
    if hopeless:  # even a value held by every row would fail: refuse before spending anything
        if reservation is not None:
            accountant.reserved.remove(reservation)
        raise DomainError(hopeless_message(hopeless, undeclared, n_rows, t_num, t_cat,
                                            noise_std, budget_share))

    counter = DiscoveryCounter({c: undeclared[c] for c in columns})
    exact = counter(rows) if isinstance(rows, pd.DataFrame) else rows.discovery_counts(counter)
    if exact.n != n_rows:  # nothing is released yet
        if reservation is not None:
            accountant.reserved.remove(reservation)
        raise DomainError(
            f'The discovery pass read {exact.n:,} rows, but {n_rows:,} were counted before it: '
            'the data changed during the fit. Nothing was released; fit again on stable data.'
        )
    keys, counts = map(list, zip(*exact.entries(columns)))
    del exact  # exact counts are never kept
    public_dim = sum(len(grid_for(undeclared[c])) + 2 for c in t_num) + len(categorical)
    epsilon_alone = (
        math.inf if sigma == 0 else
        _gaussian_epsilon(sigma, accountant.gaussian_delta)
    )
    details = {
        'columns': columns,
        'budget_share': budget_share,
        'epsilon_alone': epsilon_alone,
        'delta_alone': accountant.gaussian_delta + (reservation.delta if reservation else 0.0),
        'noise_std_rows': noise_std,
        'numeric_bin_threshold_rows': t_num,
        'null_threshold_rows': t_null,
        'category_threshold_rows': t_cat,
        'single_row_release_probability': (
            single_row_release_probability(noise_std, t_cat) if categorical else None
        ),
        'dimension_note': (
            f'dimension counts the public grid and null bins; the histograms of {categorical} '
            'also have one entry per distinct value present, a private number not reported'
            if categorical else 'all bins are public'
        ),
    }
    description = (
        f'count histograms of {k} column(s) without a declared domain: public grids for '
        'numerical/datetime, values present (thresholded) for categorical, a null bin each'
    )
    noisy = mechanism.release(
        np.asarray(counts, dtype=float), name=NAME, description=description,
        sensitivity=delta_s, noise_multiplier=sigma, dimension=public_dim, details=details,
    ).numpy()
    del counts  # exact counts are never kept

    by_column = {c: [] for c in columns}
    for (column, key), value in zip(keys, noisy):
        by_column[column].append((key, value))
    del keys, noisy

    domains, failures, summary, cut = {}, [], {}, {}
    for column in columns:
        template = undeclared[column]
        entries = by_column.pop(column)
        null_count = next(v for key, v in entries if key == NULL)
        dom = ColumnDomain(
            name=column, sdtype=template.sdtype, integer=template.integer,
            decimal_places=template.decimal_places, datetime_format=template.datetime_format,
            nullable=template.nullable if template.nullable_declared else bool(null_count >= t_null),
            nullable_declared=template.nullable_declared, discovered=True,
            integer_declared=template.integer_declared,
        )
        if dom.is_numeric:
            cleared = [key[1] for key, v in entries if key != NULL and v >= t_num[column]]
            if not cleared:
                failures.append(
                    f"  - '{column}': no bin of the public grid has a noisy count above "
                    f'{t_num[column]:.0f} rows'
                )
                domains[column], summary[column] = released_nothing(dom)
                continue
            dom.low, dom.high = _bounds_from_bins(
                cleared, grid_for(dom), dom.integer, snap_to_zero=dom.sdtype == 'numerical'
            )
            dom.scale = getattr(template, 'scale', None)
            if dom.scale == 'log' and dom.low < 0:
                dom.low = 0.0  # a declared log scale declares values >= 0; below is clipped
                if dom.high <= 0:
                    dom.high = 1.0
            if dom.scale == 'discrete' and not fits_discrete(dom):
                warnings.warn(
                    f"Column '{column}': its discovered bounds hold more than "
                    f'{MAX_DISCRETE_VALUES} integer values, so it is modelled on a linear '
                    "scale instead of the declared 'discrete' one.",
                    DomainDiscoveryWarning,
                )
                dom.scale = 'linear'
            edges = grid_for(dom)
            kept = [v for key, v in entries
                    if key != NULL and _bin_inside(key[1], edges, dom.low, dom.high)]
            cut[column] = _cut_share(kept, null_count, n_rows, noise_std)
            summary[column] = (
                f'[{show_value(dom.low, dom)}, {show_value(dom.high, dom)}]'
                + (', nullable' if dom.nullable else '')
                + f'; {show_cut(cut[column])} outside, clipped'
            )
        else:
            released = [key[1] for key, v in entries if key != NULL and v >= t_cat]
            if not released:
                failures.append(
                    f"  - '{column}': no value has a noisy count above {t_cat:.0f} rows"
                    + sdtype_hint(column)
                )
                domains[column], summary[column] = released_nothing(dom)
                continue
            dom.categories = sorted(released, key=lambda v: (type(v).__name__, str(v)))
            # only released keys and the public null key: an unreleased key must not matter
            kept = [v for key, v in entries if key != NULL and v >= t_cat]
            cut[column] = _cut_share(kept, null_count, n_rows, noise_std)
            summary[column] = (
                f'{len(released)} categories' + (', nullable' if dom.nullable else '')
                + f'; {show_cut(cut[column])} hold other values (out-of-domain bucket)'
            )
        domains[column] = dom
    if failures:  # the release is spent: the fit goes on without these columns' values
        warn_released_nothing(failures, noise_std, budget_share)
    return Discovery(domains=domains, release=accountant.releases[-1], reservation=reservation,
                     summary=summary, cut=cut)


def released_nothing(dom):
    """(domain, summary) of a column for which no bin or value cleared its threshold: only its
    missing bucket is left (``ColumnDomain.empty``), so its synthetic values are all missing."""
    dom.empty, dom.nullable, dom.categories = True, True, []
    dom.low = dom.high = dom.scale = None
    return dom, 'nothing released: not modelled, all its synthetic values are missing'


def _bin_inside(index, edges, low, high):
    """Whether grid bin ``index`` (covering [edges[index-1], edges[index])) is in [low, high]."""
    return 1 <= index <= len(edges) - 1 and edges[index - 1] >= low and edges[index] <= high


def _cut_share(kept, null_count, n_rows, noise_std):
    """(estimated share of the rows outside the domain, its noise std) from noisy counts of the
    public or released keys and n, which is public: post-processing of the release."""
    if n_rows == 0:
        return 0.0, 0.0
    share = (n_rows - float(np.sum(kept)) - float(null_count)) / n_rows
    std = noise_std * math.sqrt(len(kept) + 1) / n_rows
    return min(max(share, 0.0), 1.0), std


def _gaussian_epsilon(sigma, delta):
    from sdv_dpkme.privacy._autodp import gaussian_epsilon

    return gaussian_epsilon(sigma, delta)


