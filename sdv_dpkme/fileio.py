"""Tables and outputs on disk for the command line: reading a table with dtypes fixed by the
metadata and the public domain (never guessed from the rows), and writing every output through a
temporary file so that a failed command leaves nothing behind.
"""

import contextlib
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from sdv_dpkme.privacy.diagnostics import with_private_detail

#: table formats, by file extension
TABLE_EXTENSIONS = {'.csv': 'csv', '.parquet': 'parquet', '.pq': 'parquet'}


class TableError(ValueError):
    """The table file cannot be read as the metadata describes it."""


def table_format(path):
    """'csv' or 'parquet' from the file's extension, or None."""
    return TABLE_EXTENSIONS.get(Path(path).suffix.lower())


def _string_columns(columns):
    """Columns read as text. Pandas would otherwise guess each column's type from its values, so
    one row could turn a category '007' into the number 7, or an id into a float. (Categories
    declared as numbers are converted from the text afterwards, by the declaration.)"""
    return [name for name, spec in columns.items()
            if spec.get('sdtype') not in ('numerical', 'boolean')]


def _typed(domain):
    """True when a categorical domain declares non-string values (numbers, booleans)."""
    values = [v for v in domain.categories if v is not None]
    return bool(values) and not any(isinstance(v, str) for v in values)


def _to_bool(series, column):
    lookup = {'true': True, 'false': False, '1': True, '0': False}
    text = series.astype('string').str.strip().str.lower()
    mapped = text.map(lookup, na_action='ignore')
    bad = text.notna() & mapped.isna()
    if bad.any():
        raise TableError(
            f"Boolean column '{column}' holds a value other than true/false/1/0 (first at data "
            f'row {int(np.flatnonzero(bad.to_numpy())[0]) + 1}).'
        )
    if mapped.isna().any():
        return mapped.astype(object).where(mapped.notna(), None)
    return mapped.astype(bool)


def read_table(path, metadata_columns, domains=None, na_values=('',)):
    """Read a CSV or Parquet table with dtypes that depend only on public facts.

    Args:
        path: the table file (``.csv``, ``.parquet`` or ``.pq``).
        metadata_columns: ``{column: {'sdtype': ...}}`` of the table's metadata.
        domains: ``{column: ColumnDomain}`` of the declared domains (categories declared as
            numbers are converted to them; everything else keeps the metadata's type).
        na_values: the CSV fields that mean a missing value (default: only an empty field, so a
            category such as 'NA' or 'None' stays a category).

    CSV: numerical columns are read as float64 (a value that is not a number is an error, never
    a silent switch to text), boolean columns from true/false/1/0, everything else as text (ids,
    categories, datetimes, which their DP transformers parse with the declared format).
    """
    domains = domains or {}
    fmt = table_format(path)
    columns = dict(metadata_columns)
    if fmt == 'parquet':
        try:
            data = pd.read_parquet(path)
        except ImportError as err:
            raise TableError(
                f"Reading Parquet needs pyarrow: pip install 'sdv-dpkme[parquet]' ({err})."
            ) from None
        except Exception as err:  # noqa: BLE001 - any reader failure is a bad input file
            failure = (type(err).__name__, str(err))
        else:
            failure = None
        if failure is not None:  # the reader's message may quote the file's contents
            raise TableError(with_private_detail(
                f"Cannot read '{path}' as Parquet ({failure[0]})", failure[1]))
    elif fmt == 'csv':
        text = _string_columns(columns)
        numbers = [c for c, s in columns.items() if s.get('sdtype') == 'numerical']
        dtype = {**{c: str for c in text}, **{c: str for c in numbers}}
        try:
            data = pd.read_csv(path, dtype=dtype, keep_default_na=False,
                               na_values=list(na_values))
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
            failure = (type(err).__name__, str(err))
        else:
            failure = None
        if failure is not None:  # the parser's message may quote the file's contents
            raise TableError(with_private_detail(
                f"Cannot read '{path}' as CSV ({failure[0]})", failure[1]))
        for column in numbers:
            if column in data.columns:
                data[column] = _to_float(data[column], column)
        for column, spec in columns.items():
            if column in data.columns and spec.get('sdtype') == 'boolean':
                data[column] = _to_bool(data[column], column)
    else:
        raise TableError(f"Unknown table format '{Path(path).suffix}': use .csv or .parquet.")

    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise TableError(
            f"The table '{path}' lacks the metadata's columns {missing}; it has "
            f'{list(map(str, data.columns))}.'
        )
    for column, domain in domains.items():
        if column in data.columns and getattr(domain, 'categories', None) and _typed(domain):
            data[column] = _to_declared(data[column], domain.categories)
    return data


def _to_float(series, column):
    values = pd.to_numeric(series.str.strip(), errors='coerce')
    bad = series.notna() & values.isna()
    if bad.any():
        raise TableError(
            f"Numerical column '{column}' holds a value that is not a number (first at data row "
            f'{int(np.flatnonzero(bad.to_numpy())[0]) + 1}). Fix the file, or give the column '
            'the sdtype that fits in the metadata.'
        )
    return values.astype('float64')


def _to_declared(series, categories):
    """Text cells to the declared category they spell ('3' -> 3); others stay as they are (they
    go to the out-of-domain bucket)."""
    lookup = {str(c): c for c in categories if c is not None}
    return series.map(lambda v: lookup.get(str(v).strip(), v) if isinstance(v, str) else v)


def parquet_missing():
    """A message when no Parquet engine is installed, else None."""
    import importlib.util

    if any(importlib.util.find_spec(m) for m in ('pyarrow', 'fastparquet')):
        return None
    return "Parquet needs pyarrow: pip install 'sdv-dpkme[parquet]'."


def write_table(data, path):
    """Write a table as CSV or Parquet (by extension), through a temporary file."""
    fmt = table_format(path)
    with atomic_path(path) as tmp:
        if fmt == 'parquet':
            data.to_parquet(tmp, index=False)
        else:
            data.to_csv(tmp, index=False)


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path in the target's directory; on success it replaces ``path``, on any
    error it is removed, so ``path`` is either the complete new file or untouched."""
    with atomic_paths([path]) as (tmp,):
        yield tmp


def _temporary(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)
    os.close(fd)
    # mkstemp makes a 0600 file: give it the mode a plain open() would
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return tmp


@contextlib.contextmanager
def atomic_paths(paths):
    """Like ``atomic_path`` for several outputs: all are renamed into place only after every
    one was written."""
    paths = [Path(p) for p in paths]
    temps = []
    try:
        for path in paths:
            temps.append(_temporary(path))
        yield temps
        for tmp, path in zip(temps, paths):
            os.replace(tmp, path)
    except BaseException:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
