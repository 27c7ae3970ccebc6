"""Fit errors quote no private value (issue 40, finding 3), unless the curator asks for them.

Canary values are planted where a check or a parser fails on them: a string in a numerical
column, an unparseable date, a repeated primary key, a number in a boolean column, a row that
breaks a constraint. The canary must be in no message: the exception's text, its arguments, its
chain (``__cause__``, ``__context__``, suppressed or not) and its formatted traceback, nor in the
command line's stdout and stderr; while the message names the column. With
``sdv_dpkme.private_values_in_errors()`` (the CLI's ``--debug``) the value is shown.
"""

import json
import traceback

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sdv.cag import Inequality
from sdv.errors import InvalidDataError
from sdv.metadata import Metadata

import sdv_dpkme
from sdv_dpkme import DPHPSynthesizer, fit_distributed, private_values_in_errors
from sdv_dpkme.cli import main
from sdv_dpkme.privacy.diagnostics import (
    HINT,
    PrivateValuesWithheldError,
    sanitised,
    sanitised_errors,
    showing_private_values,
)
from tests.conftest import make, FAST, SYNTHESIZERS

pytestmark = pytest.mark.filterwarnings('ignore')

N = 60
# case: (column, canary, rows that get it). Canaries are built at run time: a literal in this
# file would show in the source lines of a traceback that passes through it.
CASES = {
    'non-number': ('score', 'SSN-123-' + '45-6789', [7]),
    'non-date': ('when', 'NOT-A-DATE-' + str(4711), [7]),
    'repeated key': ('pk', 424242 + 0, [7, 8]),
    'number in a boolean': ('flag', 987654.321 + 0, [7]),
}
DECLARED = dict(known_min_max_values={'score': (0, 1), 'when': ('2020-01-01', '2021-12-31')},
                known_categories={'city': ['Lima', 'Oslo'], 'flag': [True, False]})
FAST_HP = {k: v for k, v in FAST.items() if k != 'nullable_columns'}


def _table(n=N):
    return pd.DataFrame({
        'pk': np.arange(n),
        'score': np.linspace(0, 1, n),
        'when': pd.date_range('2020-01-01', periods=n).strftime('%Y-%m-%d'),
        'city': ['Lima', 'Oslo'] * (n // 2),
        'flag': [True, False] * (n // 2),
    })


def _metadata():
    return Metadata.load_from_dict({'tables': {'t': {'primary_key': 'pk', 'columns': {
        'pk': {'sdtype': 'id'}, 'score': {'sdtype': 'numerical'},
        'when': {'sdtype': 'datetime'}, 'city': {'sdtype': 'categorical'},
        'flag': {'sdtype': 'boolean'},
    }}}})


def _planted(case, n=N, rows=None):
    column, canary, at = CASES[case]
    table = _table(n)
    table[column] = table[column].astype(object)
    table.loc[rows or at, column] = canary
    return table, column, str(canary)


def _all_text(err):
    """Every text an exception carries: message, args, notes and its whole chain, and the
    traceback as Python would print it."""
    texts, stack, seen = [], [err], set()
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        texts += [str(e), repr(e), *map(repr, e.args), *getattr(e, '__notes__', [])]
        texts += map(str, getattr(e, 'errors', None) or [])
        stack += [e.__cause__, e.__context__]
    texts.append(''.join(traceback.format_exception(err)))
    return '\n'.join(texts)


def _synth(cls=DPHPSynthesizer, declared=True, **kwargs):
    fast = {k: v for k, v in SYNTHESIZERS[cls]['fast'].items() if k != 'nullable_columns'}
    if 'target_column' in fast:
        fast['target_column'] = 'city'
    return make(cls, _metadata(), epsilon=1.0, **(DECLARED if declared else {}), **fast, **kwargs)


def _fit_error(synth, data, fit=None):
    with pytest.raises(Exception) as caught:
        (fit or (lambda d: synth.fit({'t': d})))(data)
    return caught.value


@pytest.mark.parametrize('declared', [True, False], ids=['declared', 'discovered'])
@pytest.mark.parametrize('case', list(CASES))
def test_a_failed_fit_names_the_column_and_quotes_no_value(case, declared):
    table, column, canary = _planted(case)
    err = _fit_error(_synth(declared=declared), table)
    assert canary not in _all_text(err)
    assert f"'{column}'" in str(err) and HINT in str(err)
    # what the curator asks for, on their side only
    with private_values_in_errors():
        assert canary in str(_fit_error(_synth(declared=declared), table))
    assert not showing_private_values()


@pytest.mark.parametrize('cls', list(SYNTHESIZERS), ids=lambda c: c.__name__)
def test_every_synthesizer_and_entry_point_withholds_the_value(cls):
    table, _, canary = _planted('non-number')
    synth = _synth(cls)
    for entry in (synth.fit, synth.validate, synth.preprocess):
        with pytest.raises(InvalidDataError) as caught:
            entry({'t': table})
        assert canary not in _all_text(caught.value) and "'score'" in str(caught.value)


def test_rows_that_break_a_constraint_are_not_listed():
    table = _table()
    table['cap'] = 2.0
    table.loc[7, 'cap'] = -4711.25 + 0  # below its row's score
    metadata = _metadata().to_dict()
    metadata['tables']['t']['columns']['cap'] = {'sdtype': 'numerical'}
    synth = make(DPHPSynthesizer, Metadata.load_from_dict(metadata), epsilon=1.0, **DECLARED,
                            **FAST_HP)
    synth.add_constraints([Inequality(low_column_name='score', high_column_name='cap')])
    err = _fit_error(synth, table)
    assert str(-4711.25 + 0)[1:] not in _all_text(err)
    assert "'Inequality' constraint" in str(err) and 'some rows break it' in str(err)


# ---------------------------------------------------------- values parsed by the transformers
@pytest.mark.parametrize('declared', [True, False], ids=['declared', 'discovered'])
@pytest.mark.parametrize('case', ['non-number', 'non-date'])
def test_distributed_workers_quote_no_value(case, declared, tmp_path):
    """Planted past the first partition, the value is parsed by a worker (or by discovery's
    counting pass) with the DP transformers' own parsing, whose messages quote nothing."""
    table, column, canary = _planted(case, n=240, rows=[200])
    other = str(table[column].iloc[1])  # a valid private value, which SDV may quote
    with dask.config.set({'dataframe.convert-string': False}):  # numbers stay numbers
        frame = dd.from_pandas(table, npartitions=3)
    table[column] = table[column].astype(str)  # one Parquet type per column
    table.iloc[:120].to_parquet(tmp_path / 'a.parquet')
    table.iloc[120:].to_parquet(tmp_path / 'b.parquet')
    for data, fit in ((frame, None), (frame, lambda d: fit_distributed(synth, d)),
                      (str(tmp_path), lambda d: fit_distributed(synth, d))):
        synth = _synth(declared=declared)
        err = _fit_error(synth, data, fit)
        assert canary not in _all_text(err) and other not in _all_text(err)
        assert f"'{column}'" in str(err)


@pytest.mark.parametrize('case', ['non-number', 'non-date'])
def test_the_transformers_quote_the_value_only_when_asked(case):
    table, column, canary = _planted(case)
    synth = _synth()
    synth.validate = lambda data: None  # as if SDV's check had not sampled that row
    err = _fit_error(synth, table)
    assert canary not in _all_text(err) and f"Column '{column}'" in str(err)
    with private_values_in_errors():
        assert canary in str(_fit_error(synth, table))


# ------------------------------------------------------------------------- command line
def _cli_files(folder, case):
    table, column, canary = _planted(case)
    table.to_csv(folder / 'data.csv', index=False)
    (folder / 'metadata.json').write_text(json.dumps(_metadata().to_dict()))
    domain = {'columns': {'score': {'min_value': 0, 'max_value': 1},
                          'when': {'start_timestamp': '2020-01-01',
                                   'end_timestamp': '2021-12-31', 'datetime_format': '%Y-%m-%d'},
                          'city': {'category_values': ['Lima', 'Oslo']},
                          'flag': {'category_values': [True, False]}}}
    (folder / 'domain.json').write_text(json.dumps(domain))
    return column, canary


@pytest.mark.parametrize('declared', [True, False], ids=['declared', 'discovered'])
@pytest.mark.parametrize('case', ['non-date', 'repeated key'])
def test_the_command_line_quotes_no_value_unless_debug(case, declared, tmp_path, capsys):
    column, canary = _cli_files(tmp_path, case)
    argv = ['fit', str(tmp_path / 'data.csv'), '-m', str(tmp_path / 'metadata.json'),
            '--epsilon', '1', '-q', '-o', str(tmp_path / 'out.pkl')]
    argv += ['-d', str(tmp_path / 'domain.json')] if declared else []
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code in (1, 2)
    out, err = capsys.readouterr()
    assert canary not in out + err and f"'{column}'" in err and '--debug' in err
    try:  # --debug: values included (a bad input's message, or a failure's traceback)
        main(['--debug', *argv])
    except SystemExit:
        shown = capsys.readouterr().err
    except Exception as failure:  # noqa: BLE001 - re-raised for the traceback
        shown = str(failure)
    assert canary in shown
    assert not showing_private_values()


# --------------------------------------------------------------------------- the filter
def _raise_foreign(message, kind=RuntimeError):
    raise kind(message)  # not a raise statement of the package: a library's message


def test_a_library_message_keeps_known_lines_and_withholds_the_rest():
    secret = '0xC0' + 'FFEE'
    lines = ["Key column 'pk' contains missing values.", f'secret {secret} in free text']
    with pytest.raises(RuntimeError) as caught:
        sanitised_errors(_raise_foreign)('\n'.join(lines))
    text = _all_text(caught.value)
    assert lines[0] in text and secret not in text and HINT in text
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    # a type that cannot carry the filtered message (KeyError quotes it) is replaced
    with pytest.raises(PrivateValuesWithheldError, match='KeyError') as caught:
        sanitised_errors(_raise_foreign)(secret, KeyError)
    assert secret not in _all_text(caught.value)


def test_a_builtin_failing_inside_the_package_is_not_trusted():
    def parse(value):
        return float(value)  # ValueError: could not convert string to float: '<value>'

    parse.__code__ = parse.__code__.replace(co_filename=sdv_dpkme.__file__)
    canary = 'CANARY-' + str(77)
    with pytest.raises(ValueError) as caught:
        sanitised_errors(parse)(canary)
    assert canary not in _all_text(caught.value)


def test_own_messages_pass_with_their_chain_dropped():
    from sdv_dpkme.domain.transformers import to_numbers

    canary = 'CANARY-' + str(88)
    try:
        raise ValueError('a library message: ' + canary)
    except ValueError:
        try:
            to_numbers(pd.Series(['1', canary]), 'score')
        except ValueError as err:
            own = err
    assert own.__context__ is not None  # raised while handling the library's error
    err = sanitised(own)
    assert err is own and err.__context__ is None and canary not in _all_text(err)


def test_the_switch_nests_and_resets():
    canary = 'CANARY-' + str(99)
    assert not showing_private_values()
    with private_values_in_errors():
        assert showing_private_values()
        with private_values_in_errors(False):
            assert not showing_private_values()
            with pytest.raises(RuntimeError) as caught:
                sanitised_errors(_raise_foreign)(canary)
            assert canary not in str(caught.value)
        assert showing_private_values()
        with pytest.raises(RuntimeError, match=canary):
            sanitised_errors(_raise_foreign)(canary)
    assert not showing_private_values()


def test_our_parsing_message_relayed_by_a_worker_process_keeps_only_its_own_line():
    """A Spark worker's error reaches the driver as the text of its traceback (another
    exception type): the line of our message stays, any line with a value goes."""
    from sdv_dpkme.domain.transformers import to_timestamps_ns

    canary = 'NOT-A-DATE-' + str(4712)
    for show in (False, True):
        with private_values_in_errors(show):
            try:
                to_timestamps_ns(pd.Series([canary]), 'when')
            except ValueError as err:
                relayed = ('An exception was thrown from the Python worker.\nTraceback (most '
                           f'recent call last):\n  File "w.py", line 1, in f\nValueError: {err}')
        with pytest.raises(RuntimeError) as caught:
            sanitised_errors(_raise_foreign)(relayed)
        assert canary not in _all_text(caught.value)
        assert ("ValueError: Column 'when' holds values that are not dates" in str(caught.value)) \
            is (not show)  # with the detail, the whole line is withheld


def test_a_library_warning_raised_as_an_error_inside_the_package_is_not_trusted():
    import warnings

    def warn(value):
        warnings.warn(f'parsed {value}', UserWarning)  # not one of our warning classes

    warn.__code__ = warn.__code__.replace(co_filename=sdv_dpkme.__file__)
    canary = 'CANARY-' + str(66)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        with pytest.raises(UserWarning) as caught:
            sanitised_errors(warn)(canary)
    assert canary not in _all_text(caught.value)
