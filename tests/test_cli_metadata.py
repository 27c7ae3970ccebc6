"""The ``metadata`` command, ``fit`` without ``--metadata`` and the ``domain-template`` advice."""

import json

import pytest

from sdv_dpkme.cli import main
from tests.cli_helpers import FAST_PARAMS, write_adult_files


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
    return write_adult_files(tmp_path_factory.mktemp('adult'), train_rows=200, holdout_rows=10)


def test_metadata_command_writes_types_without_private_values(inputs, tmp_path, capsys):
    import pandas as pd

    out = tmp_path / 'metadata.json'
    main(['metadata', str(inputs['train']), '--out', str(out), '--table', 'adult'])
    written = json.loads(out.read_text())
    columns = written['tables']['adult']['columns']
    data = pd.read_csv(inputs['train'])
    assert set(columns) == set(data.columns)
    assert columns['age']['sdtype'] == 'numerical'
    # the keys SDV copies from the rows are left out: no extreme, no category list
    text = json.dumps(written)
    assert 'range_' not in text and 'Never-married' not in text
    err = capsys.readouterr().err
    assert 'NOT public' in err and 'domain-template' in err


def test_metadata_command_refuses_bad_arguments_before_work(inputs, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(['metadata', str(inputs['train']), '--out', str(tmp_path / 'meta.txt')])
    assert exit_.value.code == 2 and not (tmp_path / 'meta.txt').exists()
    with pytest.raises(SystemExit) as exit_:
        main(['metadata', str(tmp_path / 'missing.csv'), '--out', str(tmp_path / 'm.json')])
    assert exit_.value.code == 2 and 'does not exist' in capsys.readouterr().err


def test_fit_without_metadata_is_refused_before_reading_rows(tmp_path, capsys):
    # Detecting sdtypes inside the fit read the private values outside any DP release.
    import pandas as pd

    table = tmp_path / 'visits.csv'
    pd.DataFrame({'amount': [1.0, 2.0], 'label': ['yes', 'no']}).to_csv(table, index=False)
    out = tmp_path / 'synth.pkl'
    with pytest.raises(SystemExit) as exit_:
        main(['fit', str(table), '--epsilon', '1', '--out', str(out), '--quiet'])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and '--metadata is required' in err
    assert f'sdv-dpkme metadata {table}' in err
    assert not out.exists() and not out.with_suffix('.privacy.json').exists()


def test_metadata_is_public_needs_a_metadata_file(inputs, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(['fit', str(inputs['train']), '--epsilon', '1', '--metadata-is-public',
              '--out', str(tmp_path / 's.pkl')])
    assert exit_.value.code == 2 and '--metadata is required' in capsys.readouterr().err
    assert not (tmp_path / 's.pkl').exists()


def test_domain_template_advice_names_the_command_line_flag(inputs, tmp_path, capsys):
    out = tmp_path / 'domain.json'
    main(['domain-template', str(inputs['metadata']), '--out', str(out)])
    err = capsys.readouterr().err
    assert f'--domain {out}' in err and 'domain=' not in err
