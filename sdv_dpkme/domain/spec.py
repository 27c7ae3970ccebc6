"""Public column domains: the only facts about the table that may shape the encoding.

They come from the user (``known_min_max_values``, ``known_categories``) or, only when the user says
the metadata is public (``metadata_is_public=True``), from metadata range keys. Metadata detected
from the data is not public: SDV's ``detect_from_dataframes`` copies exact extremes and category
lists of the private rows into it.
"""

import math
from dataclasses import dataclass, field

import pandas as pd

MODELLED = ('numerical', 'datetime', 'categorical', 'boolean', 'ordinal')
# Metadata keys that SDV fills from the data; they are dropped unless the metadata is public.
DATA_DERIVED_KEYS = ('range_min', 'range_max', 'range_values', 'range_is_nullable', 'decimal_places')


class DomainError(ValueError):
    """A column lacks a public domain, or a declared domain is invalid."""


@dataclass
class ColumnDomain:
    """Public facts about one modelled column."""

    name: str
    sdtype: str
    low: float = None
    high: float = None
    categories: list = field(default_factory=list)
    integer: bool = False
    decimal_places: int = None
    datetime_format: str = None
    nullable: bool = False

    @property
    def is_numeric(self):
        return self.sdtype in ('numerical', 'datetime')


def _to_timestamp_ns(value, column, datetime_format=None):
    try:
        ts = pd.to_datetime(value, format=datetime_format)
    except (ValueError, TypeError) as err:
        raise DomainError(f"Bound {value!r} of datetime column '{column}' is not a date: {err}")
    return float(ts.value)


def _bounds(column, sdtype, declared, datetime_format):
    if not isinstance(declared, (tuple, list)) or len(declared) != 2:
        raise DomainError(
            f"known_min_max_values['{column}'] must be a (low, high) pair, got {declared!r}."
        )
    low, high = declared
    if sdtype == 'datetime':
        low = _to_timestamp_ns(low, column, datetime_format)
        high = _to_timestamp_ns(high, column, datetime_format)
    else:
        try:
            low, high = float(low), float(high)
        except (TypeError, ValueError):
            raise DomainError(
                f"known_min_max_values['{column}'] must hold two numbers, got {declared!r}."
            )
    if not (math.isfinite(low) and math.isfinite(high)) or not low < high:
        raise DomainError(
            f"known_min_max_values['{column}'] = {declared!r}: need finite low < high."
        )
    return low, high


def _categories(column, declared):
    if isinstance(declared, (str, bytes)) or not hasattr(declared, '__iter__'):
        raise DomainError(f"known_categories['{column}'] must be a list, got {declared!r}.")
    cats = list(declared)
    if not cats:
        raise DomainError(f"known_categories['{column}'] is empty.")
    if any(pd.isna(c) for c in cats):
        raise DomainError(
            f"known_categories['{column}'] contains a missing value; missing values are always "
            'modelled separately, leave them out of the list.'
        )
    if len(set(cats)) != len(cats):
        raise DomainError(f"known_categories['{column}'] has duplicates.")
    return cats


def strip_data_derived(column_metadata):
    """Copy of a column's metadata without the keys SDV derives from the data."""
    return {k: v for k, v in column_metadata.items() if k not in DATA_DERIVED_KEYS}


def build_domains(columns_metadata, known_min_max_values, known_categories, metadata_is_public,
                  nullable_columns=()):
    """Public domain of every modelled column; one error naming every column that lacks one."""
    known_min_max_values = dict(known_min_max_values or {})
    known_categories = dict(known_categories or {})
    nullable_columns = set(nullable_columns or ())
    domains, missing = {}, []
    for column, meta in columns_metadata.items():
        sdtype = meta.get('sdtype')
        if sdtype not in MODELLED:
            continue
        dom = ColumnDomain(name=column, sdtype=sdtype, nullable=column in nullable_columns)
        if sdtype in ('numerical', 'datetime'):
            dom.datetime_format = meta.get('datetime_format')
            declared = known_min_max_values.get(column)
            if declared is None and metadata_is_public and 'range_min' in meta:
                declared = (meta['range_min'], meta.get('range_max'))
            if declared is None:
                missing.append(
                    f"  - '{column}' ({sdtype}): known_min_max_values={{'{column}': (low, high)}}"
                )
                continue
            dom.low, dom.high = _bounds(column, sdtype, declared, dom.datetime_format)
            rep = str(meta.get('computer_representation', 'Float'))
            dom.integer = sdtype == 'numerical' and rep.lower().startswith(('int', 'uint'))
            if metadata_is_public and meta.get('decimal_places') is not None:
                dom.decimal_places = int(meta['decimal_places'])
        elif sdtype == 'boolean':
            dom.categories = [False, True]
        else:
            declared = known_categories.get(column)
            if declared is None and sdtype == 'ordinal' and meta.get('order'):
                declared = meta['order']  # the order is written by the user, not detected
            if declared is None and metadata_is_public and meta.get('range_values'):
                declared = meta['range_values']
            if declared is None:
                missing.append(
                    f"  - '{column}' ({sdtype}): known_categories={{'{column}': [...]}}"
                )
                continue
            dom.categories = _categories(column, declared)
        domains[column] = dom

    unknown = (set(known_min_max_values) | set(known_categories) | nullable_columns) - set(
        columns_metadata
    )
    if unknown:
        raise DomainError(f'Public domains were declared for unknown columns: {sorted(unknown)}.')
    if missing:
        raise DomainError(
            'These columns have no public domain. Declare each from public knowledge (never '
            'from the private data):\n'
            + '\n'.join(missing)
            + '\nor pass metadata_is_public=True if the metadata ranges were written from public '
            'knowledge, not detected from the data.'
        )
    return domains

