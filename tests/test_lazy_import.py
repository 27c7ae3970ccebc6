"""``import sdv_dpkme`` and the CLI's parser load no torch, SDV or engines; SDV's add-on entry
points still resolve whatever is imported first."""

import subprocess
import sys

import pytest

from tests.cli_helpers import cli_env

HEAVY = ('torch', 'sdv', 'rdt', 'sdmetrics', 'sklearn', 'sdv_dpkme.engines',
         'sdv_dpkme.synthesizers')


def _run(code):
    result = subprocess.run([sys.executable, '-c', code], env=cli_env(), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_import_and_parser_load_nothing_heavy():
    out = _run(
        'import sys, sdv_dpkme, sdv_dpkme.cli\n'
        'sdv_dpkme.cli.build_parser().parse_args(["sample", "x.pkl", "-n", "5", "-o", "x.csv"])\n'
        f'print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n'
        'print(sdv_dpkme.__version__)'
    )
    loaded, version = out.splitlines()
    assert loaded == '[]' and version


def test_help_loads_nothing_heavy():
    out = _run(
        'import sys, contextlib, io\n'
        'from sdv_dpkme.cli import main\n'
        'with contextlib.redirect_stdout(io.StringIO()):\n'
        '    try:\n'
        '        main(["--help"])\n'
        '    except SystemExit:\n'
        '        pass\n'
        f'print(sorted(m for m in {HEAVY!r} if m in sys.modules))'
    )
    assert out.strip() == '[]'


@pytest.mark.parametrize('first', [
    'import sdv_dpkme; sdv_dpkme.DPHPSynthesizer',
    'from sdv_dpkme.synthesizers import DPMERFSynthesizer',
    'import sdv_dpkme.synthesizers.dpkip',
    'from sdv_dpkme import fit_distributed',
    'import sdv',
])
def test_sdv_add_ons_resolve_whatever_is_imported_first(first):
    out = _run(
        'import warnings; warnings.simplefilter("error", UserWarning)\n'
        f'{first}\n'
        'from sdv.single_table import (DPHPSynthesizer, DPKIPSynthesizer, DPMERFSynthesizer,\n'
        '                              DPReweightingSynthesizer)\n'
        'import sdv_dpkme\n'
        'assert DPHPSynthesizer is sdv_dpkme.DPHPSynthesizer\n'
        'print(DPReweightingSynthesizer.__module__)'
    )
    assert out.strip().startswith('sdv_dpkme.synthesizers.')


def test_public_names_resolve():
    import sdv_dpkme

    for name in sdv_dpkme.__all__:
        assert getattr(sdv_dpkme, name) is not None
    with pytest.raises(AttributeError, match='no attribute'):
        sdv_dpkme.NoSuchName  # noqa: B018
