"""Run one study: ``python -m benchmarks.run <study> [its arguments]`` (``--list``: the studies).

The same as ``python benchmarks/studies/<study>.py [its arguments]``; benchmarks/README.md gives
each study's command and what it regenerates."""
import os
import sys
from pathlib import Path

STUDIES = Path(__file__).resolve().parent / 'studies'


def studies():
    return sorted(p.stem for p in STUDIES.glob('*.py') if not p.stem.startswith('_'))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ('-h', '--help', '--list'):
        print(__doc__.split('\n')[0] + '\n\nstudies: ' + ', '.join(studies()))
        return 0
    name = argv[0].removesuffix('.py')
    if name not in studies():
        print(f'unknown study {name!r}; the studies: {", ".join(studies())}', file=sys.stderr)
        return 2
    script = str(STUDIES / f'{name}.py')
    # a fresh interpreter on the script, so that its spawned workers import it as they would
    os.execv(sys.executable, [sys.executable, script, *argv[1:]])


if __name__ == '__main__':
    sys.exit(main())
