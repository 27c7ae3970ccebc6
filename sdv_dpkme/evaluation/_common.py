"""Shared helpers for the evaluation modules (metadata handling, type coercion)."""

from __future__ import annotations

import copy
from collections.abc import Mapping

import numpy as np
import pandas as pd

#: SDV sdtypes treated as numeric features by :func:`infer_column_types`.
NUMERIC_SDTYPES = frozenset({'numerical', 'datetime'})
#: SDV sdtypes treated as categorical features by :func:`infer_column_types`.
CATEGORICAL_SDTYPES = frozenset({'categorical', 'boolean', 'ordinal'})

_DEFAULT_TABLE_NAME = 'table'


def normalize_metadata(metadata):
    """Return ``(table_name, full_metadata_dict)`` for single-table metadata.

    ``metadata`` may be an ``sdv.metadata.Metadata`` (or anything with ``to_dict()``)
    holding exactly one table, a multi-table style dict ``{'tables': {name: {...}}}``
    with one table, or a single-table dict ``{'columns': {...}, ...}``. The returned
    dict always has the unified ``{'tables': {name: table_dict}}`` layout expected
    by the SDMetrics 0.32 reports.
    """
    if hasattr(metadata, 'to_dict') and not isinstance(metadata, Mapping):
        metadata = metadata.to_dict()

    if not isinstance(metadata, Mapping):
        raise TypeError(
            'metadata must be an sdv.metadata.Metadata or a dict, '
            f'got {type(metadata).__name__}.'
        )

    metadata = copy.deepcopy(dict(metadata))
    if 'tables' in metadata:
        tables = metadata['tables']
        if len(tables) != 1:
            raise ValueError(
                f'Only single-table metadata is supported; got {len(tables)} tables '
                f'({list(tables)}).'
            )
        table_name = next(iter(tables))
        full = {'tables': {table_name: dict(tables[table_name])}}
    elif 'columns' in metadata:
        table_name = _DEFAULT_TABLE_NAME
        table = {k: v for k, v in metadata.items() if k != 'METADATA_SPEC_VERSION'}
        full = {'tables': {table_name: table}}
    else:
        raise ValueError("metadata dict must contain either a 'tables' or a 'columns' key.")

    if 'METADATA_SPEC_VERSION' in metadata:
        full['METADATA_SPEC_VERSION'] = metadata['METADATA_SPEC_VERSION']

    return table_name, full


def table_metadata(metadata):
    """Return the single table's metadata dict (``{'columns': ..., ...}``)."""
    table_name, full = normalize_metadata(metadata)
    return full['tables'][table_name]


def infer_column_types(metadata, exclude=()):
    """Split the metadata columns into ``(categorical_columns, numerical_columns)``.

    ``numerical``/``datetime`` sdtypes are numeric; ``categorical``/``boolean``/
    ``ordinal`` are categorical; everything else (``id``, PII sdtypes such as
    ``email``, ``unknown``, ...) and the primary key are ignored. Columns in
    ``exclude`` are dropped. Column order follows the metadata.
    """
    table = table_metadata(metadata)
    exclude = set(exclude)
    primary_key = table.get('primary_key')
    if primary_key is not None:
        exclude.add(primary_key)

    categorical, numerical = [], []
    for column, spec in table.get('columns', {}).items():
        if column in exclude:
            continue

        sdtype = spec.get('sdtype')
        if sdtype in NUMERIC_SDTYPES:
            numerical.append(column)
        elif sdtype in CATEGORICAL_SDTYPES:
            categorical.append(column)

    return categorical, numerical


def to_float(series, datetime_format=None):
    """Convert a column to float64 (NaN for missing / unparseable / infinite values).

    Booleans become 0/1, datetimes (dtype or parseable strings) become seconds since
    the Unix epoch, everything else goes through ``pd.to_numeric``.
    """
    series = pd.Series(series)
    if pd.api.types.is_bool_dtype(series.dtype):
        values = series.astype(float).to_numpy()
    elif pd.api.types.is_datetime64_any_dtype(series.dtype):
        values = _datetime_to_seconds(series)
    elif pd.api.types.is_numeric_dtype(series.dtype):
        values = pd.to_numeric(series, errors='coerce').astype(float).to_numpy()
    else:
        numeric = pd.to_numeric(series, errors='coerce')
        non_null = series.notna()
        if non_null.any() and numeric[non_null].isna().all():
            parsed = pd.to_datetime(series, errors='coerce', format=datetime_format)
            values = _datetime_to_seconds(parsed)
        else:
            values = numeric.astype(float).to_numpy()

    values = np.asarray(values, dtype=float).copy()
    values[~np.isfinite(values)] = np.nan
    return values


def _datetime_to_seconds(series):
    series = pd.Series(series)
    if getattr(series.dt, 'tz', None) is not None:
        series = series.dt.tz_convert('UTC').dt.tz_localize(None)

    series = series.astype('datetime64[ns]')
    values = series.to_numpy().astype('int64').astype(float) / 1e9
    values[series.isna().to_numpy()] = np.nan
    return values


def sorted_categories(values):
    """Sort a collection of category values, falling back to string order."""
    values = list(values)
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=lambda value: (type(value).__name__, str(value)))


def unique_non_null(*series_list):
    """Return the non-null values present in any of the given Series (sorted)."""
    seen = {}
    for series in series_list:
        for value in pd.Series(series).dropna().unique():
            seen.setdefault(value, None)

    return sorted_categories(seen)
