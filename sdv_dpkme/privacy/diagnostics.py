"""Error messages that never quote a private value, unless the curator asks for them.

An error raised while a fit reads the private rows can quote them: SDV's checks list offending
values ("Invalid values found for numerical column 'score': [...]", repeated keys, rows that
break a constraint) and pandas names the string it could not parse. Such messages end up in logs
and notebooks, and no mechanism accounts for them. So every entry point that reads private rows
is wrapped in ``sanitised_errors``, the one sanitising point at the fit boundary:

- a message written by sdv_dpkme itself (an exception raised by a ``raise`` statement in this
  package) is kept: those messages name the column and the rule, never a value. Its chained
  exceptions (``__cause__``, ``__context__``), which may hold a library's message, are dropped;
- any other exception (SDV, RDT, pandas, numpy, torch, a builtin) gets a filtered message: the
  lines of SDV's checks that we know are kept, or rewritten to name the column and the rule
  without the values; every other line is withheld. Its chain is dropped as well.

``private_values_in_errors()`` turns this off for a block of code (the CLI's ``--debug``): the
curator then sees the original messages, values included, as diagnostics on their side. It
changes no release, no report and nothing that is saved.
"""

import contextlib
import contextvars
import dis
import functools
import os
import re

_SHOW = contextvars.ContextVar('sdv_dpkme_private_values_in_errors', default=False)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_RAISE = dis.opmap['RAISE_VARARGS']

HINT = ('Private values are not shown; to see them as curator-side diagnostics, run inside '
        '`with sdv_dpkme.private_values_in_errors():` or pass --debug on the command line.')
WITHHELD = '[a line of the message is withheld: it may quote private values]'


class PrivateValuesWithheldError(ValueError):
    """Raised instead of a library's exception whose filtered message its own type cannot
    carry (the original type is named in the message)."""


@contextlib.contextmanager
def private_values_in_errors(show=True):
    """Within this block, errors keep the private values they quote (curator-side diagnostics;
    never share such messages). Nested blocks may turn it off again with ``show=False``."""
    token = _SHOW.set(bool(show))
    try:
        yield
    finally:
        _SHOW.reset(token)


def showing_private_values():
    """Whether the curator asked for private values in error messages."""
    return _SHOW.get()


def with_private_detail(message, detail):
    """``message`` and ``detail`` when the curator asked for private values, else ``message`` and
    the hint that says how to see them. ``detail``: text that may quote private values."""
    if showing_private_values():
        return f'{message}. Private detail: {detail}'
    return f'{message}. {HINT}'


# --------------------------------------------------------------------- library messages
# SDV's data checks (metadata, keys, constraints, single-table validation): lines that quote no
# value are kept; lines that announce values are cut before them and say which rule failed.
_KEEP = [re.compile(p) for p in (
    r'',
    r'The provided data does not match the metadata:',
    r'Errors in .+:',
    r'(Error: )?The columns \[.*\] are not present in the metadata\.',
    r'(Error: )?The metadata columns \[.*\] are not present in the data\.',
    r'(Error: )?The provided data is missing the tables .+\.',
    r'(Error: )?Key column .+ contains missing values\.',
    r"(Error: )?Values found for numerical column '.+' exceed the allowed decimal places "
    r'\(\d+\)\.',
    r"(Error: )?Invalid null values found for \w+ column '.+': `range_is_nullable` is set to "
    r'False\.',
    r'(Error: )?Primary key (column|for table) ".+" is stored as an int but the Regex allows it '
    r'to start with "0"\. .*',
    r'The table has \d+ row\(s\); a DP fit needs at least 2 .*',
    r'The `data` parameter must be a dictionary containing exactly one table name mapped to a '
    r'pandas DataFrame\.',
    r'Data must be a DataFrame, not a .+\.',
)] + [
    # our parsers' messages as another process relays them (a Spark worker's traceback text);
    # ending in the hint, they hold no private detail (``with_private_detail`` gives either)
    re.compile(r"([\w.]+: )?Column '.+' (is numerical but )?holds values that are not "
               r'(numbers|dates).*\. ' + re.escape(HINT)),
]
_RULES = {
    'numerical': 'some values are not numbers',
    'datetime': 'some values are not dates (in the datetime_format, if one is declared)',
    'boolean': 'some values are not booleans',
}
_REWRITE = [
    (re.compile(r"(?P<head>(Error: )?Invalid values found for (?P<sdtype>\w+) column '.*?'):"),
     lambda m: f"{m['head']}: {_RULES.get(m['sdtype'], 'some values do not fit its sdtype')}; "
               'fix the data, or give the column the sdtype that fits in the metadata.'),
    (re.compile(r"(?P<head>(Error: )?Out of range values found for \w+ column '.*?'):"),
     lambda m: f"{m['head']}: some values are outside the range that the metadata states "
               '(range_min/range_max or range_values).'),
    (re.compile(r'(?P<head>(Error: )?Key column .+? contains repeating values):'),
     lambda m: f"{m['head']}: a key must be unique in every row; fix the data, or give the "
               'column a sdtype that is not a key.'),
    (re.compile(r"(?P<head>(Error: )?Data is not valid for the '\w+' constraint in table "
                r"'.*?'):"),
     lambda m: f"{m['head']}: some rows break it; fix or drop them, or remove the constraint."),
    (re.compile(r"(?P<head>Error: foreign key column .+? contains unknown references):"),
     lambda m: f"{m['head']}."),
]


def _filter_lines(text):
    """(filtered text, whether anything was withheld or rewritten)."""
    out, changed, skipping = [], False, False
    for line in str(text).split('\n'):
        if any(p.fullmatch(line) for p in _KEEP):
            out.append(line)
            skipping = False
            continue
        rule = next(((p, f) for p, f in _REWRITE if p.match(line)), None)
        if rule is not None:
            out.append(rule[1](rule[0].match(line)))
            changed, skipping = True, True  # the next unknown lines are the values
            continue
        changed = True
        if not skipping and (not out or out[-1] != WITHHELD):
            out.append(WITHHELD)
    return '\n'.join(out), changed


def _own_warning(err):
    """A warning class of this package (its messages are written here, like our raises)."""
    return isinstance(err, Warning) and type(err).__module__.split('.')[0] == 'sdv_dpkme'


def _raised_here(err):
    """True when a ``raise`` statement of this package raised ``err``, or a ``warnings.warn``
    call of this package raised one of its own warning classes as an error (``-W error``): its
    message was written here (a builtin failing inside our code, e.g. ``float('x')``, is not)."""
    tb = err.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    try:
        inside = os.path.abspath(code.co_filename).startswith(_PACKAGE)
        # warnings.warn is C code: no frame of its own, so the last frame is the caller's
        return inside and (code.co_code[tb.tb_lasti] == _RAISE or _own_warning(err))
    except (IndexError, TypeError, ValueError):
        return False


def _drop_chain(err):
    err.__cause__ = None
    err.__context__ = None
    err.__suppress_context__ = True


def sanitised(err):
    """``err`` itself (its chain dropped) when its message is ours, else a new exception of the
    same type where possible, with the filtered message."""
    if _raised_here(err):
        _drop_chain(err)
        return err
    errors = getattr(err, 'errors', None)  # SDV's InvalidDataError: a list of messages
    if isinstance(errors, list) and all(isinstance(e, str) for e in errors):
        filtered = [_filter_lines(e) for e in errors]
        if any(changed for _, changed in filtered):
            try:
                return type(err)([text for text, _ in filtered] + [HINT])
            except Exception:  # noqa: BLE001 - fall back to the generic message below
                pass
        else:
            _drop_chain(err)
            return err
    text, changed = _filter_lines(str(err))
    if not changed:
        _drop_chain(err)
        return err
    if text.strip() in ('', WITHHELD):
        text = (f'{type(err).__module__}.{type(err).__qualname__} was raised while reading the '
                'private rows; its message is withheld: it may quote private values')
    message = f'{text}\n{HINT}'
    try:
        replacement = type(err)(message)
        if str(replacement) == message:
            return replacement
    except Exception:  # noqa: BLE001 - a type that does not take one message
        pass
    return PrivateValuesWithheldError(f'{type(err).__qualname__}: {message}')


def sanitised_errors(function):
    """Decorator of an entry point that reads private rows: its exceptions go through
    ``sanitised`` unless the curator asked for private values."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - every message is checked, then re-raised
            if showing_private_values():
                raise
            replacement = sanitised(err)
            if replacement is err:
                raise
        # raised outside the handler, so the original is not even its hidden __context__
        raise replacement from None

    return wrapper
