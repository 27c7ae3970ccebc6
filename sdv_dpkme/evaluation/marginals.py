"""Alpha-way marginal total-variation distance between two tables.

For every subset of ``alpha`` columns the joint histograms of the real and the
synthetic table are compared with the total-variation distance
``0.5 * sum(|p - q|)`` (in ``[0, 1]``); the score is the mean over subsets.

Numeric columns are discretised with *explicit* bin edges (typically derived
from public bounds with :func:`public_bin_edges`) so that every synthesizer is
measured on the same, data-independent grid.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from sdv_dpkme.evaluation._common import to_float


def public_bin_edges(bounds, n_bins=10):
    """Equal-width bin edges over public bounds.

    Args:
        bounds: Either a ``(lo, hi)`` pair, or a dict ``{column: (lo, hi)}``.
        n_bins (int): Number of bins. Defaults to 10.

    Returns:
        numpy.ndarray of ``n_bins + 1`` increasing edges for a pair, or a dict
        ``{column: edges}`` for a dict. A degenerate interval ``lo == hi`` gives a
        single bin ``[lo - 0.5, hi + 0.5]``.
    """
    if isinstance(bounds, Mapping):
        return {column: public_bin_edges(pair, n_bins) for column, pair in bounds.items()}

    n_bins = int(n_bins)
    if n_bins < 1:
        raise ValueError(f'n_bins must be >= 1, got {n_bins}.')

    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise ValueError(f'bounds must be a (lo, hi) pair, got {bounds!r}.') from None

    lo, hi = _edge_values([lo, hi])
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f'bounds must be finite, got {bounds!r}.')
    if hi < lo:
        raise ValueError(f'bounds must satisfy lo <= hi, got {bounds!r}.')
    if hi == lo:
        return np.array([lo - 0.5, hi + 0.5])

    return np.linspace(lo, hi, n_bins + 1)


def _edge_values(edges):
    """Edges as float; datetime-like edges become seconds since the epoch."""
    edges = list(np.ravel(np.asarray(edges, dtype=object)))
    if edges and all(isinstance(e, (pd.Timestamp, np.datetime64)) for e in edges):
        return to_float(pd.Series(pd.to_datetime(edges)))
    if edges and all(isinstance(e, str) for e in edges):
        return to_float(pd.Series(edges))

    return np.asarray(edges, dtype=float)


def _check_edges(column, edges):
    edges = _edge_values(edges)
    if edges.ndim != 1 or len(edges) < 2:
        raise ValueError(f'Bin edges for {column!r} need at least two values.')
    if not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise ValueError(f'Bin edges for {column!r} must be finite and strictly increasing.')

    return edges


def _is_numeric(series):
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return False

    return pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_datetime64_any_dtype(dtype)


def _encode_columns(real, synthetic, columns, bins, categorical):
    """Integer-code every column consistently across both tables.

    Returns ``(real_codes, synthetic_codes, cardinalities)`` with one column per
    entry of ``columns``.
    """
    n_real = len(real)
    real_codes, synthetic_codes, cardinalities = [], [], []
    for column in columns:
        if column in bins:
            edges = _check_edges(column, bins[column])
            n_bins = len(edges) - 1
            codes = []
            for frame in (real, synthetic):
                values = to_float(frame[column])
                code = np.clip(np.searchsorted(edges, values, side='right') - 1, 0, n_bins - 1)
                code[np.isnan(values)] = n_bins  # missing values form their own cell
                codes.append(code)
            real_codes.append(codes[0])
            synthetic_codes.append(codes[1])
            cardinalities.append(n_bins + 1)
            continue

        if column not in categorical and (
            _is_numeric(real[column]) or _is_numeric(synthetic[column])
        ):
            raise ValueError(
                f'Numeric column {column!r} has no bin edges. Pass explicit public edges '
                f'via `bins`, e.g. bins={{{column!r}: public_bin_edges((lo, hi), n_bins=10)}}, '
                'or list it in `categorical` to use its raw values.'
            )

        combined = pd.concat(
            [real[column].astype(object), synthetic[column].astype(object)], ignore_index=True
        )
        # use_na_sentinel=False: every missing marker (None/NaN/NA/NaT) is one category.
        codes, uniques = pd.factorize(combined, use_na_sentinel=False)
        real_codes.append(codes[:n_real])
        synthetic_codes.append(codes[n_real:])
        cardinalities.append(max(len(uniques), 1))

    return (
        np.column_stack(real_codes).astype(np.int64),
        np.column_stack(synthetic_codes).astype(np.int64),
        cardinalities,
    )


def _joint_keys(codes, cardinalities):
    if math.prod(cardinalities) < 2**62:
        return np.ravel_multi_index(tuple(codes.T), tuple(cardinalities))

    return codes  # fall back to row-wise uniqueness


def _tv(real_codes, synthetic_codes, cardinalities):
    real_keys = _joint_keys(real_codes, cardinalities)
    synthetic_keys = _joint_keys(synthetic_codes, cardinalities)
    axis = None if real_keys.ndim == 1 else 0
    keys = np.concatenate([real_keys, synthetic_keys])
    _, inverse = np.unique(keys, axis=axis, return_inverse=True)
    inverse = np.ravel(inverse)
    n_cells = inverse.max() + 1
    n_real = len(real_keys)
    p = np.bincount(inverse[:n_real], minlength=n_cells) / n_real
    q = np.bincount(inverse[n_real:], minlength=n_cells) / len(synthetic_keys)
    return float(min(1.0, 0.5 * np.abs(p - q).sum()))


def _subsets(columns, alpha, max_subsets, random_state):
    alpha = int(alpha)
    if alpha < 1:
        raise ValueError(f'alpha must be >= 1, got {alpha}.')
    if alpha > len(columns):
        raise ValueError(f'alpha={alpha} is larger than the number of columns ({len(columns)}).')

    subsets = list(itertools.combinations(columns, alpha))
    if max_subsets is not None and len(subsets) > int(max_subsets):
        rng = np.random.default_rng(random_state)
        chosen = np.sort(rng.choice(len(subsets), size=int(max_subsets), replace=False))
        subsets = [subsets[i] for i in chosen]

    return subsets


def marginal_tv_per_subset(
    real,
    synthetic,
    columns,
    alpha=3,
    bins=None,
    max_subsets=None,
    random_state=0,
    categorical=None,
):
    """Total-variation distance of every ``alpha``-way marginal.

    Same arguments as :func:`marginal_tv`.

    Returns:
        dict: ``{(col_1, ..., col_alpha): tv}`` in the order of
        ``itertools.combinations(columns, alpha)`` (restricted to the sampled subsets
        when ``max_subsets`` is set).
    """
    columns = list(columns)
    if len(set(columns)) != len(columns):
        raise ValueError('columns contains duplicates.')

    missing = [c for c in columns if c not in real.columns or c not in synthetic.columns]
    if missing:
        raise ValueError(f'Columns {missing} are missing from the real or synthetic table.')
    if len(real) == 0 or len(synthetic) == 0:
        raise ValueError('Both tables need at least one row.')

    bins = dict(bins or {})
    categorical = set(categorical or ())
    subsets = _subsets(columns, alpha, max_subsets, random_state)
    used = [c for c in columns if any(c in subset for subset in subsets)]
    real_codes, synthetic_codes, cardinalities = _encode_columns(
        real, synthetic, used, bins, categorical
    )
    position = {column: i for i, column in enumerate(used)}

    result = {}
    for subset in subsets:
        index = [position[c] for c in subset]
        result[subset] = _tv(
            real_codes[:, index],
            synthetic_codes[:, index],
            [cardinalities[i] for i in index],
        )

    return result


def marginal_tv(
    real,
    synthetic,
    columns,
    alpha=3,
    bins=None,
    max_subsets=None,
    random_state=0,
    categorical=None,
):
    """Mean total-variation distance over the ``alpha``-way marginals.

    Args:
        real (pandas.DataFrame): The real table.
        synthetic (pandas.DataFrame): The synthetic table.
        columns (list): Columns to consider; every ``alpha``-subset is scored.
        alpha (int): Marginal order. Defaults to 3.
        bins (dict or None): ``{column: edges}`` explicit, strictly increasing bin
            edges for the numeric columns (e.g. ``public_bin_edges(bounds)``).
            Values outside the edges are clipped into the end bins; missing values
            form an extra cell. A numeric column without edges (and not listed in
            ``categorical``) raises ``ValueError``.
        max_subsets (int or None): If set and there are more subsets, score a
            random sample of this many (drawn with ``random_state``).
        random_state (int): Seed of the subset sample.
        categorical (iterable or None): Columns to compare on their raw values even
            if their dtype is numeric (e.g. integer-coded categories). Non-numeric
            columns are always treated this way; missing values count as their own
            category.

    Returns:
        float: The mean TV distance, in ``[0, 1]`` (0 means identical marginals).
    """
    per_subset = marginal_tv_per_subset(
        real,
        synthetic,
        columns,
        alpha=alpha,
        bins=bins,
        max_subsets=max_subsets,
        random_state=random_state,
        categorical=categorical,
    )
    return float(np.mean(list(per_subset.values())))
