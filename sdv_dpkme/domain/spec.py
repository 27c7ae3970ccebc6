"""Public column domains: the only facts about the table that may shape the encoding.

They come from the user (``known_min_max_values``, ``known_categories``, ``nullable_columns`` or one
``domain`` spec per table) or, only when the user says the metadata is public
(``metadata_is_public=True``), from metadata range keys. Metadata detected from the data is not
public: SDV's ``detect_from_dataframes`` copies exact extremes and category lists of the private rows
into it. A column with no public domain is either an error or, when the synthesizer allows it, left
to private discovery (``sdv_dpkme.domain.discovery``).
"""

import json
import math
import os
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sdv_dpkme.domain.hints import missing_domain_message, sdtype_hint
from sdv_dpkme.domain.scales import (  # noqa: F401 (is_discrete: read by the synthesizers here)
    MAX_DISCRETE_VALUES,
    SCALES,
    default_scale,
    fits_discrete,
    is_discrete,
)

MODELLED = ('numerical', 'datetime', 'categorical', 'boolean', 'ordinal')
# Metadata keys that SDV fills from the data; they are dropped unless the metadata is public.
# (``high_cardinality`` is one bit of the row count per value; ``datetime_format`` is read off
# the rows' strings. A public datetime format is declared in the domain spec.)
DATA_DERIVED_KEYS = ('range_min', 'range_max', 'range_values', 'range_is_nullable',
                     'decimal_places', 'high_cardinality', 'datetime_format')

# Per-column keys of a domain spec. The first block is SDV DayZ's parameter format.
SPEC_KEYS = {
    'min_value', 'max_value', 'num_decimal_digits',        # DayZ numerical
    'start_timestamp', 'end_timestamp',                    # DayZ datetime
    'category_values',                                     # DayZ categorical
    'missing_values_proportion',                           # DayZ, ignored: a data statistic
    'nullable', 'integer', 'scale', 'datetime_format',     # ours
}
# Keys that ``domain_template`` writes as placeholders (null) for the user to fill in.
TEMPLATE_KEYS = ('min_value', 'max_value', 'start_timestamp', 'end_timestamp', 'category_values',
                 'nullable', 'integer')
# Top-level keys: DayZ's file and the bundled ``*_domain.json`` format.
SPEC_TOP_KEYS = {
    'DAYZ_SPEC_VERSION', 'tables', 'relationships', 'num_rows', 'columns', 'table_name',
    'known_min_max_values', 'known_categories', 'nullable_columns', 'integer_columns',
    'metadata_is_public',
}


class DomainError(ValueError):
    """A column lacks a public domain, or a declared domain is invalid."""


@dataclass
class ColumnDomain:
    """Public facts about one modelled column (or, with ``discovered``, DP outputs)."""

    name: str
    sdtype: str
    low: float = None
    high: float = None
    categories: list = field(default_factory=list)
    integer: bool = False
    decimal_places: int = None
    datetime_format: str = None
    nullable: bool = False
    # encoding of a numerical column (SCALES); None = 'linear'
    scale: str = None
    # the scale came from default_scale, not from a declaration (said so in the report)
    scale_by_rule: bool = False
    # the user said whether missing values may occur (else discovery decides)
    nullable_declared: bool = False
    # low/high or categories (and nullability unless declared) came from the DP discovery release
    discovered: bool = False
    # some public fact states integer-ness (else a numerical column's is voted on under DP,
    # sdv_dpkme.domain.integers); True for every domain built before the vote existed
    integer_declared: bool = True
    # integer-ness came from that DP vote
    integer_voted: bool = False
    # discovery released nothing for this column (``discovery.released_nothing``): it keeps only
    # its missing bucket, so its synthetic values are all missing, whatever its sdtype
    empty: bool = False

    @property
    def is_numeric(self):
        """Whether the column is encoded on bounds (an empty domain has none: it is one-hot)."""
        return self.sdtype in ('numerical', 'datetime') and not self.empty


def public_dtype(domain):
    """The pandas dtype of a modelled column in the synthetic table, from public facts only.

    The private frame's dtypes are not public: one row flips them (a NaN turns int64 into
    float64, a 40.5 an int column into floats, a None a bool column into objects). So the type
    follows the domain: integer-ness, nullability, the datetime format and the categories.
    """
    if domain.sdtype == 'numerical':
        if domain.integer:
            return np.dtype('float64') if domain.nullable else np.dtype('int64')
        return np.dtype('float64')
    if domain.sdtype == 'datetime':
        # a declared format means strings in that format, as SDV writes them
        return np.dtype(object) if domain.datetime_format else np.dtype('datetime64[ns]')
    values = [False, True] if domain.sdtype == 'boolean' else list(domain.categories)
    if values and all(isinstance(v, (bool, np.bool_)) for v in values):
        return np.dtype(object) if domain.nullable else np.dtype(bool)
    if values and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                      for v in values):
        return np.dtype('float64') if domain.nullable else np.dtype('int64')
    if values and all(isinstance(v, (int, float, np.integer, np.floating))
                      and not isinstance(v, (bool, np.bool_)) for v in values):
        return np.dtype('float64')
    return np.dtype(object)


def _to_timestamp_ns(value, column, datetime_format=None):
    try:
        ts = pd.to_datetime(value, format=datetime_format)
    except (ValueError, TypeError) as err:
        try:  # a spec may write its bounds in another format than the column's (e.g. DayZ's)
            ts = pd.to_datetime(value)
        except (ValueError, TypeError):
            raise DomainError(
                f"Bound {value!r} of datetime column '{column}' is not a date: {err}"
            ) from None
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


# ------------------------------------------------------------------------------ domain spec
def _load_spec(spec):
    if isinstance(spec, (str, os.PathLike)):
        try:
            with open(spec, encoding='utf-8') as f:
                return json.load(f)
        except OSError as err:
            raise DomainError(f'Cannot read the domain spec file {str(spec)!r}: {err}') from None
        except json.JSONDecodeError as err:
            raise DomainError(f'The domain spec file {str(spec)!r} is not JSON: {err}') from None
    if not isinstance(spec, dict):
        raise DomainError(f'domain must be a dict or a path to a JSON file, got {spec!r}.')
    return spec


def _table_entry(spec, table_name):
    """The part of a (possibly multi-table, DayZ-style) spec that describes ``table_name``."""
    unknown = set(spec) - SPEC_TOP_KEYS
    if unknown:
        raise DomainError(
            f'Unknown keys in the domain spec: {sorted(unknown)}; expected "columns" (or '
            f'DayZ\'s "tables"), see docs/domains.md.'
        )
    if 'tables' not in spec:
        return spec
    tables = spec['tables']
    if not isinstance(tables, dict) or not tables:
        raise DomainError('domain["tables"] must map table names to their spec.')
    if table_name in tables:
        return tables[table_name]
    if len(tables) == 1:
        return next(iter(tables.values()))
    raise DomainError(
        f'The domain spec describes tables {sorted(tables)}, not {table_name!r}.'
    )


def parse_domain_spec(spec, table_name=None):
    """Per-column declarations from one domain spec (dict or JSON path).

    Returns ``{column: {'bounds', 'categories', 'nullable', 'decimal_places', 'integer', 'scale',
    'datetime_format'}}`` with only the keys the spec declares. SDV DayZ's parameter format is
    accepted; its ``missing_values_proportion`` and ``num_rows`` are statistics of a table, not
    domain facts, and are ignored with a warning.
    """
    if spec is None:
        return {}
    entry = _table_entry(_load_spec(spec), table_name)
    ignored = []
    if 'num_rows' in entry:
        ignored.append('num_rows')
    out = {}

    def put(column, key, value):
        out.setdefault(column, {})[key] = value

    for column, bounds in (entry.get('known_min_max_values') or {}).items():
        put(column, 'bounds', tuple(bounds) if isinstance(bounds, list) else bounds)
    for column, cats in (entry.get('known_categories') or {}).items():
        put(column, 'categories', cats)
    for column in entry.get('nullable_columns') or ():
        put(column, 'nullable', True)
    for column in entry.get('integer_columns') or ():
        put(column, 'integer', True)

    columns = entry.get('columns') or {}
    if not isinstance(columns, dict):
        raise DomainError('domain["columns"] must map column names to their spec.')
    for column, params in columns.items():
        if not isinstance(params, dict):
            raise DomainError(f"domain['columns']['{column}'] must be a dict, got {params!r}.")
        unfilled = [key for key in TEMPLATE_KEYS if key in params and params[key] is None]
        if unfilled:  # a domain_template placeholder: never silently a discovery
            raise DomainError(
                f"Column '{column}': {unfilled} still hold the template's placeholder (null). "
                'Fill them in from public knowledge, or delete the keys to let the synthesizer '
                'discover them under DP (it spends domain_budget_share of the budget).'
            )
        unknown = set(params) - SPEC_KEYS
        if unknown:
            raise DomainError(
                f"Unknown keys for column '{column}' in the domain spec: {sorted(unknown)}; "
                f'allowed: {sorted(SPEC_KEYS)}.'
            )
        if 'missing_values_proportion' in params:
            ignored.append(f'{column}.missing_values_proportion')
        for low_key, high_key in (('min_value', 'max_value'), ('start_timestamp', 'end_timestamp')):
            if low_key in params or high_key in params:
                if low_key not in params or high_key not in params:
                    raise DomainError(
                        f"Column '{column}' declares only one of {low_key}/{high_key}; declare "
                        'both, or neither to let the synthesizer discover the bounds under DP.'
                    )
                put(column, 'bounds', (params[low_key], params[high_key]))
        if 'category_values' in params:
            cats = list(params['category_values'])
            if any(pd.isna(c) for c in cats):
                # DayZ lists a missing value among the categories: that declares nullability
                cats = [c for c in cats if not pd.isna(c)]
                put(column, 'nullable', True)
            put(column, 'categories', cats)
        if 'datetime_format' in params:
            if not isinstance(params['datetime_format'], str) or not params['datetime_format']:
                raise DomainError(
                    f"domain['columns']['{column}']['datetime_format'] must be a strftime "
                    "string such as '%Y-%m-%d'."
                )
            put(column, 'datetime_format', params['datetime_format'])
        if 'num_decimal_digits' in params:
            put(column, 'decimal_places', int(params['num_decimal_digits']))
        if 'scale' in params:
            if params['scale'] not in SCALES:
                raise DomainError(
                    f"domain['columns']['{column}']['scale'] must be one of {SCALES}, got "
                    f"{params['scale']!r}."
                )
            put(column, 'scale', params['scale'])
        for key in ('nullable', 'integer'):
            if key in params:
                if not isinstance(params[key], bool):
                    raise DomainError(f"domain['columns']['{column}']['{key}'] must be true/false.")
                put(column, key, params[key])
    if ignored:
        warnings.warn(
            f'The domain spec holds data statistics, which are ignored: {", ".join(ignored)}. '
            'Declare nullability with "nullable": true. If this spec came from '
            'DayZSynthesizer.create_parameters on your private data, its min/max and '
            'category values are NOT public either.'
        )
    return out


def merge_declarations(known_min_max_values=None, known_categories=None, nullable_columns=None,
                       domain=None, table_name=None):
    """All public declarations as ``{column: {...}}``; a fact declared twice differently fails."""
    merged = parse_domain_spec(domain, table_name)
    sources = [
        ('bounds', 'known_min_max_values', dict(known_min_max_values or {})),
        ('categories', 'known_categories', dict(known_categories or {})),
        ('nullable', 'nullable_columns', dict.fromkeys(nullable_columns or (), True)),
    ]
    for key, arg, values in sources:
        for column, value in values.items():
            previous = merged.setdefault(column, {}).get(key)
            if previous is not None and _normalise(previous) != _normalise(value):
                raise DomainError(
                    f"Column '{column}': {arg} says {value!r} but the domain spec says "
                    f'{previous!r}; declare each fact once.'
                )
            merged[column][key] = value
    return merged


def _normalise(value):
    return list(value) if isinstance(value, (tuple, list)) else value


# --------------------------------------------------------------------------- domain building
def resolve_domains(columns_metadata, declarations, metadata_is_public):
    """Split the modelled columns into declared domains and columns still to be discovered.

    Returns ``(declared, undeclared, hints)``: ``declared`` maps columns to complete
    ``ColumnDomain``; ``undeclared`` maps columns lacking bounds/categories to a ``ColumnDomain``
    holding their public facts only (sdtype, integer-ness from ``computer_representation``,
    datetime format, declared nullability); ``hints`` says how to declare each of those.
    """
    unknown = set(declarations) - set(columns_metadata)
    if unknown:
        raise DomainError(f'Public domains were declared for unknown columns: {sorted(unknown)}.')
    declared, undeclared, hints = {}, {}, []
    for column, meta in columns_metadata.items():
        sdtype = meta.get('sdtype')
        facts = declarations.get(column, {})
        if sdtype not in MODELLED:
            continue
        dom = ColumnDomain(name=column, sdtype=sdtype, nullable=bool(facts.get('nullable')),
                           nullable_declared='nullable' in facts)
        if ('nullable' not in facts and metadata_is_public
                and meta.get('range_is_nullable') is not None):
            dom.nullable, dom.nullable_declared = bool(meta['range_is_nullable']), True
        _check_kind(column, sdtype, facts)
        if sdtype in ('numerical', 'datetime'):
            # a format read off the rows is not public: only a declared one (or public metadata)
            dom.datetime_format = facts.get('datetime_format') or (
                meta.get('datetime_format') if metadata_is_public else None
            )
            if dom.datetime_format and sdtype != 'datetime':
                raise DomainError(f"Column '{column}': datetime_format is for datetime columns.")
            rep = str(meta.get('computer_representation', 'Float'))
            dom.integer = sdtype == 'numerical' and bool(
                facts.get('integer', rep.lower().startswith(('int', 'uint')))
            )
            if facts.get('decimal_places') is not None:
                dom.decimal_places = facts['decimal_places']
            elif metadata_is_public and meta.get('decimal_places') is not None:
                dom.decimal_places = int(meta['decimal_places'])
            dom.integer_declared = sdtype != 'numerical' or (
                'integer' in facts or 'computer_representation' in meta
                or dom.decimal_places is not None
            )
            dom.scale = facts.get('scale')
            bounds = facts.get('bounds')
            if bounds is None and metadata_is_public and 'range_min' in meta:
                bounds = (meta['range_min'], meta.get('range_max'))
            if bounds is None:
                hints.append(
                    f"  - '{column}' ({sdtype}): domain={{'known_min_max_values': {{'{column}': (low, high)}}}}"
                )
                undeclared[column] = dom
                continue
            dom.low, dom.high = _bounds(column, sdtype, bounds, dom.datetime_format)
            if dom.scale == 'log' and (sdtype != 'numerical' or dom.low < 0):
                raise DomainError(
                    f"Column '{column}': a log scale needs a numerical column with low >= 0."
                )
            if dom.scale == 'discrete' and not fits_discrete(dom):
                raise DomainError(
                    f"Column '{column}': a discrete scale needs an integer numerical column "
                    f'with integer bounds at most {MAX_DISCRETE_VALUES} values apart, got '
                    f'[{dom.low:g}, {dom.high:g}].'
                )
            if dom.scale is None and sdtype == 'numerical':
                # declared bounds, no declared scale: the public default rule decides
                dom.scale, dom.scale_by_rule = default_scale(dom), True
        elif sdtype == 'boolean':
            dom.categories = [False, True]
        else:
            cats = facts.get('categories')
            if cats is None and sdtype == 'ordinal' and meta.get('order'):
                cats = meta['order']  # the order is written by the user, not detected
            if cats is None and metadata_is_public and meta.get('range_values'):
                cats = meta['range_values']
            if cats is None:
                hints.append(f"  - '{column}' ({sdtype}): domain={{'known_categories': {{'{column}': [...]}}}}"
                             + sdtype_hint(column))
                undeclared[column] = dom
                continue
            dom.categories = _categories(column, cats)
        declared[column] = dom
    return declared, undeclared, hints


def _check_kind(column, sdtype, facts):
    """A declaration that does not fit the column's sdtype is an error, never ignored: ignored,
    the column would be discovered (spending budget) or modelled on another domain."""
    if sdtype in ('numerical', 'datetime') and 'categories' in facts:
        extra = (f" (add domain={{'columns': {{'{column}': {{'integer': True, 'scale': "
                 "'discrete'}}}} to model each integer value like a category)"
                 if sdtype == 'numerical' else '')
        raise DomainError(
            f"Column '{column}' has sdtype '{sdtype}' in the metadata, so the categories "
            'declared for it (known_categories / category_values) do not apply. Declare its '
            f"bounds instead: domain={{'known_min_max_values': {{'{column}': (low, high)}}}}{extra}; or, if "
            "it is a category column, set its sdtype to 'categorical' in the metadata."
        )
    if sdtype in ('categorical', 'ordinal', 'boolean') and 'bounds' in facts:
        raise DomainError(
            f"Column '{column}' has sdtype '{sdtype}' in the metadata, so the bounds declared for "
            'it (known_min_max_values / min_value, max_value) do not apply. If it holds numbers, '
            "set its sdtype to 'numerical' in the metadata (detect_from_dataframes types integer "
            "columns with few values as 'categorical' or 'ordinal'); otherwise declare its "
            f"categories: domain={{'known_categories': {{'{column}': [...]}}}}."
        )
    if sdtype == 'boolean' and 'categories' in facts:
        cats = facts['categories']
        is_bools = (not isinstance(cats, (str, bytes)) and hasattr(cats, '__iter__')
                    and all(isinstance(c, (bool, np.bool_)) for c in cats))
        if not is_bools or set(cats) != {False, True}:
            raise DomainError(
                f"Column '{column}' is boolean: its domain is always [False, True], not "
                f'{cats!r}. If it holds other values (e.g. \'f\'/\'t\' or \'yes\'/\'no\'), '
                "set its sdtype to 'categorical' in the metadata and keep known_categories."
            )


def build_domains(columns_metadata, known_min_max_values, known_categories, metadata_is_public,
                  nullable_columns=(), domain=None, table_name=None):
    """Public domain of every modelled column; one error naming every column that lacks one."""
    declarations = merge_declarations(
        known_min_max_values, known_categories, nullable_columns, domain, table_name
    )
    declared, undeclared, hints = resolve_domains(
        columns_metadata, declarations, metadata_is_public
    )
    if undeclared:
        raise DomainError(missing_domain_message(hints))
    return declared
