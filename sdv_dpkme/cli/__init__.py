"""Command line: ``sdv-dpkme fit | sample | report | metadata | domain-template | demo | audit``
(or ``python -m sdv_dpkme ...``). See docs/cli.md.

Every argument and input file is checked before any work, so a bad one costs nothing. Outputs are
written to a temporary file in the target's directory and renamed into place at the end: a failed
command leaves no partial file. Exit codes: 0 done; 1 failed while working (nothing written);
2 bad argument or input, found before any work (nothing written); 130 interrupted.

The parser imports nothing heavy; each command's module is imported when it runs.
"""

import contextlib
import importlib
import sys
import warnings

from sdv_dpkme.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CommandError,
    UsageError,
)
from sdv_dpkme.cli.parser import build_parser

# command -> (module under sdv_dpkme.cli, function)
COMMANDS = {'fit': ('fit', 'fit'), 'sample': ('fit', 'sample'), 'demo': ('fit', 'demo'),
            'report': ('report', 'report'), 'audit': ('report', 'audit'),
            'metadata': ('metadata', 'metadata'),
            'domain-template': ('metadata', 'domain_template')}

__all__ = ['COMMANDS', 'CommandError', 'UsageError', 'build_parser', 'main']


@contextlib.contextmanager
def _plain_warnings():
    """Warnings as one line each ('warning: ...'), without the source line of the library."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        print(f'warning ({category.__name__}): {message}', file=file or sys.stderr)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f'{parser.prog} {args.command}'
    from sdv_dpkme.privacy.diagnostics import private_values_in_errors

    try:  # the fit path withholds private values from its errors, unless --debug
        with _plain_warnings(), private_values_in_errors(args.debug):
            module, function = COMMANDS[args.command]
            getattr(importlib.import_module(f'{__name__}.{module}'), function)(args)
    except UsageError as err:
        print(f'{prog}: error: {err}', file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    except KeyboardInterrupt:
        print(f'{prog}: interrupted; nothing was written.', file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Exception as err:  # noqa: BLE001 - a message, not a traceback, unless --debug
        if args.debug:
            raise
        what = str(err) if isinstance(err, CommandError) else f'{type(err).__name__}: {err}'
        print(f'{prog}: error: {what}\nNothing was written. (--debug shows the traceback and '
              'private values.)', file=sys.stderr)
        raise SystemExit(EXIT_FAILED) from None
    return 0

