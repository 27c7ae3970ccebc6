"""``metadata`` and ``domain-template``: the two files a fit reads besides the table.

``metadata`` detects SDV metadata from a table. Detection reads the rows, so what it writes is
not public: the command drops the keys SDV copies from the rows (exact extremes, category lists,
formats) and says so; the column types it keeps must still be checked against public knowledge.
``domain-template`` writes the domain spec skeleton from the metadata alone.
"""

import json
import sys
import warnings
from pathlib import Path

from sdv_dpkme.cli.common import UsageError, _load_metadata, _output_file, _table_file

DETECTED_WARNING = (
    'the metadata was detected from the rows of {path}, so it is NOT public: SDV chose each '
    "column's sdtype by looking at the private values. Check every sdtype against what you know "
    'without the data (True/False columns are often detected as categorical, small integer '
    'columns as categorical, numeric codes as id), fix it in the file, and declare bounds and '
    'categories in a domain spec (sdv-dpkme domain-template); the data-derived keys (ranges, '
    'category lists, formats) are left out.'
)


def _read_raw(path, na_values):
    """The table with pandas' own type inference, as SDV's detection expects it."""
    import pandas as pd

    from sdv_dpkme.fileio import table_format

    try:
        if table_format(path) == 'parquet':
            return pd.read_parquet(path)
        return pd.read_csv(path, keep_default_na=False, na_values=list(na_values))
    except ImportError as err:
        raise UsageError(f"Reading Parquet needs pyarrow: pip install 'sdv-dpkme[parquet]' "
                         f'({err}).') from None
    except Exception as err:  # noqa: BLE001 - the reader's message may quote the file
        raise UsageError(f"Cannot read '{path}' as a table ({type(err).__name__}).") from None


def detect_metadata(path, table=None, na_values=('',)):
    """``(Metadata, table name)`` detected from a table file, without the data-derived keys;
    prints that it is not public."""
    from sdv.metadata import Metadata

    from sdv_dpkme.domain import strip_data_derived

    table = table or Path(path).stem
    data = _read_raw(path, na_values)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # SDV's detection notes; ours follows
            detected = Metadata.detect_from_dataframes({table: data}).to_dict()
    except Exception as err:  # noqa: BLE001 - SDV raises several kinds
        raise UsageError(f"Cannot detect metadata from '{path}' ({type(err).__name__}); write "
                         'it by hand (docs/quickstart.md).') from None
    columns = detected['tables'][table]['columns']
    for column, meta in list(columns.items()):
        columns[column] = strip_data_derived(meta)
    # printed, not warned: a warnings filter must not hide it
    print('warning: ' + DETECTED_WARNING.format(path=path), file=sys.stderr)
    return Metadata.load_from_dict(detected), table


def metadata(args):
    """Detect SDV metadata from a CSV or Parquet table and write it as JSON."""
    from sdv_dpkme.fileio import atomic_path

    data_path = _table_file(args.data, 'Table file')
    out = _output_file(args.out, 'Metadata file', ['.json'], [data_path])
    detected, table = detect_metadata(data_path, args.table, args.na_value or [''])
    with atomic_path(out) as tmp:
        Path(tmp).write_text(json.dumps(detected.to_dict(), indent=2) + '\n', encoding='utf-8')
    kinds = {}
    for column, meta in detected.to_dict()['tables'][table]['columns'].items():
        kinds.setdefault(meta['sdtype'], []).append(column)
    print(f"Wrote the metadata of table '{table}' to {out}: "
          + '; '.join(f'{k}: {", ".join(v)}' for k, v in sorted(kinds.items()))
          + f'. Check it, then: sdv-dpkme domain-template {out} --out domain.json', file=sys.stderr)


def domain_template(args):
    """Write the domain spec skeleton of an SDV metadata JSON; no data file is read."""
    from sdv_dpkme.domain import domain_template as template
    from sdv_dpkme.fileio import atomic_path

    out = _output_file(args.out, 'Output file', ['.json'], [args.metadata]) if args.out else None
    metadata, table = _load_metadata(args.metadata, args.table)
    try:
        skeleton = template(metadata, table)
    except ValueError as err:
        raise UsageError(str(err)) from None
    text = json.dumps(skeleton, indent=2) + '\n'
    if out:
        with atomic_path(out) as tmp:
            Path(tmp).write_text(text, encoding='utf-8')
    else:
        sys.stdout.write(text)
    print(
        f"Domain spec skeleton of table '{skeleton['table_name']}' written from the metadata "
        f'alone (no rows read){" to " + str(out) if out else ""}. Replace every null with '
        'a public fact (bounds, categories, whether values are whole numbers, whether missing '
        'values may occur), or delete the key to have it discovered under DP; then fit with '
        f'--domain {out or "<that file>"}.',
        file=sys.stderr,
    )

