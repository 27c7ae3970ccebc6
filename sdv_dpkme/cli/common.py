"""What every command shares: exit codes, errors, argument types and checks of input and output
files, done before any work so that a bad argument costs nothing."""

import argparse
import json
import warnings
from pathlib import Path

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

SYNTHESIZERS = {'dphp': 'DPHPSynthesizer', 'dpmerf': 'DPMERFSynthesizer',
                'dpkip': 'DPKIPSynthesizer', 'reweighting': 'DPReweightingSynthesizer'}
# constructor arguments that have their own option, or that the command line does not offer


class UsageError(Exception):
    """A bad argument or input, found before any work (exit 2)."""


class CommandError(Exception):
    """The work failed (exit 1); nothing was written."""


# ------------------------------------------------------------------------- argument types
def _epsilon(text):
    value = _float(text)
    if not value > 0:  # also NaN
        raise argparse.ArgumentTypeError(
            f'epsilon must be > 0, got {text} (smaller epsilon = more privacy).')
    return value


def _delta(text):
    value = _float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(
            f'delta must be in (0, 1), got {text}; choose it well below 1/n, e.g. 1e-5.')
    return value


def _share(text):
    value = _float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f'the share must be in [0, 1), got {text}.')
    return value


def _rows(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'rows must be a whole number, got {text!r}.') from None
    if value < 1:
        raise argparse.ArgumentTypeError(f'rows must be at least 1, got {value}.')
    return value


def _float(text):
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'not a number: {text!r}.') from None


# ----------------------------------------------------------------------- checks of files
def _input_file(path, what):
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{what} '{path}' does not exist.")
    if not path.is_file():
        raise UsageError(f"{what} '{path}' is not a file.")
    return path


def _json_file(path, what):
    path = _input_file(path, what)
    try:
        return json.loads(path.read_text(encoding='utf-8'))
    except json.JSONDecodeError as err:
        raise UsageError(
            f"{what} '{path}' is not valid JSON: {err.msg} at line {err.lineno}, column "
            f'{err.colno}.'
        ) from None
    except UnicodeDecodeError:
        raise UsageError(f"{what} '{path}' is not a UTF-8 text file.") from None


def _table_file(path, what):
    from sdv_dpkme.fileio import TABLE_EXTENSIONS, table_format

    path = _input_file(path, what)
    if table_format(path) is None:
        raise UsageError(f"{what} '{path}' must end in {', '.join(TABLE_EXTENSIONS)}.")
    return path


def _output_file(path, what, extensions=None, inputs=()):
    path = Path(path)
    if extensions and path.suffix.lower() not in extensions:
        raise UsageError(
            f"{what} '{path}' must end in {' or '.join(extensions)} (the format follows the "
            'extension).'
        )
    if path.is_dir():
        raise UsageError(f"{what} '{path}' is a folder; give a file name.")
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{what} '{path}': '{parent}' is a file, not a folder.")
            break
    for source in inputs:
        if source is not None and path.absolute() == Path(source).absolute():
            raise UsageError(f"{what} '{path}' would overwrite an input file.")
    return path


def _load_metadata(path, table):
    from sdv.metadata import Metadata

    document = _json_file(path, 'Metadata file')
    if not isinstance(document, dict):
        raise UsageError(f"Metadata file '{path}' must hold a JSON object.")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # SDV's note on the old single-table format
            metadata = Metadata.load_from_json(path)
    except Exception as err:  # noqa: BLE001 - SDV raises several kinds for an invalid file
        raise UsageError(f"Metadata file '{path}' is not valid SDV metadata: {err}") from None
    names = list(metadata.tables)
    if table is None:
        if len(names) != 1:
            raise UsageError(
                f"Metadata file '{path}' describes {len(names)} tables {names}; pick one with "
                '--table.'
            )
        return metadata, names[0]
    if table not in names:
        raise UsageError(f"Table '{table}' is not in the metadata file; it has {names}.")
    if len(names) == 1:
        return metadata, table
    single = {'METADATA_SPEC_VERSION': metadata.to_dict().get('METADATA_SPEC_VERSION', 'V1'),
              'tables': {table: metadata.to_dict()['tables'][table]}}
    return Metadata.load_from_dict(single), table



def _load_synthesizer(path):
    from sdv.utils import load_synthesizer

    from sdv_dpkme.synthesizers.base import BaseDPSynthesizer

    path = _input_file(path, 'Synthesizer file')
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', FutureWarning)
            synthesizer = load_synthesizer(str(path))
    except Exception as err:  # noqa: BLE001 - unpickling fails in many ways
        raise UsageError(
            f"'{path}' is not a synthesizer file ({type(err).__name__}: {err})."
        ) from None
    if not isinstance(synthesizer, BaseDPSynthesizer):
        raise UsageError(
            f"'{path}' holds a {type(synthesizer).__name__}, not a DP synthesizer of sdv_dpkme."
        )
    if not getattr(synthesizer, '_fitted', False):
        raise UsageError(f"The synthesizer in '{path}' was never fitted.")
    return synthesizer


def _read_table(path, synthesizer, na_values):
    from sdv_dpkme.fileio import TableError, read_table

    metadata = synthesizer.get_metadata().to_dict()
    (table,) = metadata['tables'].values()
    try:
        return read_table(path, table['columns'], getattr(synthesizer, '_domains', {}),
                          na_values=na_values)
    except TableError as err:
        raise UsageError(str(err)) from None


def _sample(synthesizer, rows):
    synthetic = synthesizer.sample(num_rows=rows)
    return synthetic[synthesizer._table_name] if isinstance(synthetic, dict) else synthetic

