import json
import pickle
import time

import pandas as pd
import pytest

from sdv_dpkme.cli import main
from tests.cli_helpers import (
    FAST_PARAMS,
    parse_report,
    run_cli,
    run_cli_together,
    write_adult_files,
)


@pytest.mark.slow
def test_demo_writes_table_report_and_summary(tmp_path, monkeypatch):
    import sdv_dpkme.synthesizers.dphp as dphp
    from sdv_dpkme.synthesizers.options import build_kwargs

    original = dphp.DPHPSynthesizer.__init__
    # keep the test fast: few steps, small kernels
    fast = build_kwargs(dphp.DPHPSynthesizer, dict(steps=10, sum_order=10, product_redraws=2,
                                                   verbose=False))

    def fast_init(self, *args, **kwargs):
        original(self, *args, **{**kwargs, **fast})

    monkeypatch.setattr(dphp.DPHPSynthesizer, '__init__', fast_init)
    main(['demo', '--out', str(tmp_path), '--rows', '200'])
    summary = json.loads((tmp_path / 'sdmetrics_summary.json').read_text())
    assert summary['rows'] == 200 and 0 < summary['sdmetrics_quality'] <= 1
    report = json.loads((tmp_path / 'privacy_report.json').read_text())
    assert report['epsilon'] == 1.0 and report['epsilon_spent'] <= 1.0
    assert (tmp_path / 'synthetic.csv').read_text().count('\n') == 201
    # the worst columns and pairs are named, worst first, and their marginals drawn
    worst = summary['worst_column_shapes']
    assert len(worst) == 3 and [w['score'] for w in worst] == sorted(w['score'] for w in worst)
    assert len(summary['worst_pair_trends'][0]['columns']) == 2
    assert (tmp_path / 'worst_columns.png').read_bytes()[:4] == b'\x89PNG'


def test_issue21_domain_template_command_writes_the_skeleton(tmp_path, capsys):
    from sdv.metadata import Metadata

    from sdv_dpkme.domain import domain_template

    metadata = Metadata.load_from_dict({'tables': {'guests': {'columns': {
        'age': {'sdtype': 'numerical', 'range_min': 17, 'range_max': 99},
        'room': {'sdtype': 'categorical', 'range_values': ['SECRET-ROOM']},
        'email': {'sdtype': 'email', 'pii': True},
    }}}})
    path = tmp_path / 'metadata.json'
    metadata.save_to_json(path)
    main(['domain-template', str(path), '--out', str(tmp_path / 'domain.json')])
    written = json.loads((tmp_path / 'domain.json').read_text())
    assert written == domain_template(metadata)
    assert 'SECRET-ROOM' not in json.dumps(written) and '99' not in json.dumps(written)
    assert 'no rows read' in capsys.readouterr().err


# ------------------------------------------------------------------ fit -> sample -> report
@pytest.fixture(scope='module')
def fitted(tmp_path_factory):
    """One CLI fit of DP-HP on 300 Adult rows, shared by the sample and report tests."""
    folder = tmp_path_factory.mktemp('cli')
    files = write_adult_files(folder)
    out = folder / 'models' / 'adult.pkl'  # the folder is created at the end
    result = run_cli('fit', files['train'], '--metadata', files['metadata'], '--domain',
                     files['domain'], '--synthesizer', 'dphp', '--epsilon', '1', '--delta',
                     '1e-5', '--target', 'income', '--seed', '0', '--quiet', '--out', out,
                     *FAST_PARAMS, cwd=folder)
    assert result.returncode == 0, result.stderr
    return {**files, 'folder': folder, 'synth': out, 'fit': result}


@pytest.mark.slow
def test_fit_writes_the_synthesizer_and_its_privacy_report(fitted):
    report = json.loads((fitted['synth'].with_suffix('.privacy.json')).read_text())
    assert report['epsilon'] == 1.0 and report['delta'] == 1e-5
    assert 0 < report['epsilon_spent'] <= 1.0 and report['guarantee_holds']
    assert {'class_proportions', 'sum_kernel', 'product_kernel'} <= {
        r['name'] for r in report['releases']}
    assert 'Wrote' in fitted['fit'].stdout
    raw = fitted['synth'].read_bytes()
    # the synthesizer keeps no trace of where the private table was read from
    assert b'adult_train' not in raw and str(fitted['folder']).encode() not in raw
    synth = pickle.loads(raw)
    assert type(synth).__name__ == 'DPHPSynthesizer' and synth.target_column == 'income'


@pytest.mark.slow
def test_sample_writes_csv_or_parquet_by_extension(fitted, tmp_path):
    result = run_cli('sample', fitted['synth'], '--rows', '50', '--out', tmp_path / 'syn.csv')
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / 'syn.csv')
    assert len(table) == 50 and list(table.columns) == list(
        pd.read_csv(fitted['train'], nrows=1).columns)
    assert table['age'].between(17, 90).all()
    main(['sample', str(fitted['synth']), '-n', '7', '-o', str(tmp_path / 'syn.parquet')])
    assert len(pd.read_parquet(tmp_path / 'syn.parquet')) == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == ['syn.csv', 'syn.parquet']


def _release_names(fitted):
    report = json.loads((fitted['synth'].with_suffix('.privacy.json')).read_text())
    return report['releases']


@pytest.mark.slow
def test_report_without_real_data_holds_only_dp_outputs(fitted, tmp_path):
    out = tmp_path / 'report.html'
    result = run_cli('report', fitted['synth'], '--rows', '200', '--out', out)
    assert result.returncode == 0, result.stderr
    page = parse_report(out)
    assert {'summary', 'privacy-ledger', 'training', 'synthetic-overview',
            'without-real-data'} <= set(page.sections)
    # nothing computed from real rows: no scores, no comparison, no TSTR, no banner
    assert not {'quality', 'diagnostic', 'comparison-plots', 'tstr'} & set(page.sections)
    assert 'real-data-banner' not in page.ids and 'dp-only-notice' in page.ids
    assert page.figures and not any('real-data-plot' in cls for _, cls, _ in page.figures)
    assert {s for s, _, _ in page.figures} == {'training', 'synthetic-overview'}
    # self-contained: every image embedded, no script, no link out of the page
    assert page.images and all(s.startswith('data:image/png;base64,') for s in page.images)
    assert page.scripts == 0 and all(h.startswith('#') for h in page.links)
    ledger = page.section_text['privacy-ledger']
    releases = _release_names(fitted)
    assert f'Releases ({len(releases)})' in ledger
    assert all(r['description'] in ledger for r in releases)  # every release is listed
    # and every option of the fit, as --param set it (issue 41)
    options = json.loads(fitted['synth'].with_suffix('.privacy.json').read_text())['parameters']
    assert options['training.steps'] == 5 and options['kernel.sum_order'] == 10
    assert all(name in ledger for name in options)
    assert 'adult_train' not in out.read_text()


@pytest.mark.slow
def test_report_with_real_data_says_so_and_ranks_worst_first(fitted, tmp_path):
    out = tmp_path / 'report.html'
    result = run_cli('report', fitted['synth'], '--real', fitted['holdout'], '--classifiers',
                     'LogisticRegression,DecisionTreeClassifier', '--out', out)
    assert result.returncode == 0, result.stderr
    assert 'NOT private' in result.stdout
    page = parse_report(out)
    assert {'summary', 'privacy-ledger', 'quality', 'diagnostic', 'comparison-plots', 'tstr',
            'training'} <= set(page.sections)
    assert 'real-data-banner' in page.ids and 'dp-only-notice' not in page.ids
    assert 'synthetic-overview' not in page.sections
    real_plots = [f for f in page.figures if 'real-data-plot' in f[1]]
    assert len(real_plots) == 4 + 3 and {s for s, _, _ in real_plots} == {'comparison-plots'}
    overall, per_column, per_pair = page.scores('quality')
    assert len(overall) == 3 and len(per_column) == 15
    assert per_column == sorted(per_column) and per_pair == sorted(per_pair)
    # the worst column's figure comes first and names it
    assert real_plots[0][2] in page.section_text['quality']
    diagnostic, validity = page.scores('diagnostic')
    assert validity == sorted(validity)
    assert diagnostic[2] == 1.0  # data structure: CSV floats cast to the synthetic int dtypes
    assert 'LogisticRegression' in page.section_text['tstr']
    assert 'DecisionTreeClassifier' in page.section_text['tstr']
    assert 'RandomForestClassifier' not in page.section_text['tstr']
    assert all(s.startswith('data:image/png;base64,') for s in page.images)


# ------------------------------------------------------------------------------ bad input
@pytest.mark.slow
def test_issue20_demo_bad_arguments_exit_2_without_traceback_or_files(tmp_path):
    """The issue's two cases, as processes: `demo --epsilon 0` printed a traceback, and
    `demo --rows -5` trained fully, then failed and left a 1-byte synthetic.csv."""
    started = time.perf_counter()
    results = run_cli_together([['demo', '--epsilon', '0'],
                                ['demo', '--rows', '-5', '--out', 'out']], cwd=tmp_path)
    messages = ['epsilon must be > 0', 'rows must be at least 1']
    for result, message in zip(results, messages):
        assert result.returncode == 2, result.stderr
        assert message in result.stderr and 'Traceback' not in result.stderr
    # refused before any work: no training ran (a demo fit takes minutes), nothing was written
    assert time.perf_counter() - started < 60
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp('bad')
    files = write_adult_files(folder, train_rows=60, holdout_rows=0)
    domain = json.loads(files['domain'].read_text())
    del domain['known_min_max_values']['age']
    (folder / 'no_age.json').write_text(json.dumps(domain))
    (folder / 'list.json').write_text('[1, 2]')
    (folder / 'bad.json').write_text('{"columns": ')
    (folder / 'table.txt').write_text('age\n1\n')
    (folder / 'garbage.pkl').write_bytes(b'not a pickle')
    data = pd.read_csv(files['train'])
    data.drop(columns=['race']).to_csv(folder / 'no_race.csv', index=False)
    data.assign(age=data['age'].astype(str).replace({data['age'].astype(str)[3]: 'old'})).to_csv(
        folder / 'text_age.csv', index=False)
    metadata = json.loads(files['metadata'].read_text())
    metadata['tables']['other'] = metadata['tables']['adult']
    (folder / 'two_tables.json').write_text(json.dumps(metadata))
    return {**files, 'folder': folder}


FIT = ['fit', '{train}', '-m', '{metadata}', '-d', '{domain}', '--epsilon', '1', '-q',
       '-o', '{folder}/out.pkl']
BAD = {
    'epsilon below 0': (FIT + ['--epsilon', '-1'], 'epsilon must be > 0'),
    'delta above 1': (FIT + ['--delta', '1.5'], 'delta must be in (0, 1)'),
    'unknown synthesizer': (FIT + ['--synthesizer', 'ctgan'], "invalid choice: 'ctgan'"),
    'column without domain, discovery off': (
        [a.replace('{domain}', '{folder}/no_age.json') for a in FIT] + ['--discovery-share', '0'],
        "'age'"),
    'domain not JSON': ([a.replace('{domain}', '{folder}/bad.json') for a in FIT],
                        'is not valid JSON'),
    'domain not an object': ([a.replace('{domain}', '{folder}/list.json') for a in FIT],
                             'must hold a JSON object'),
    'missing domain file': ([a.replace('{domain}', '{folder}/nope.json') for a in FIT],
                            'does not exist'),
    'unknown parameter': (FIT + ['-p', 'stepz=3'], "no parameter 'stepz'"),
    'noise seed refused': (FIT + ['-p', 'noise_seed=1'], 'voids the guarantee'),
    'bad parameter value': (FIT + ['-p', 'steps=0'], 'steps'),
    'unknown table format': ([a.replace('{train}', '{folder}/table.txt') for a in FIT],
                             'must end in .csv'),
    'target not a column': (FIT + ['--target', 'salary'], "'salary'"),
    'table lacks a column': ([a.replace('{train}', '{folder}/no_race.csv') for a in FIT],
                             "lacks the metadata's columns ['race']"),
    'text in a number column': ([a.replace('{train}', '{folder}/text_age.csv') for a in FIT],
                                "Numerical column 'age' holds a value that is not a number"),
    'two tables, none picked': ([a.replace('{metadata}', '{folder}/two_tables.json')
                                 for a in FIT], 'pick one with --table'),
    'unknown table': (FIT + ['--table', 'people'], "Table 'people' is not in the metadata"),
    'privacy report not json': (FIT + ['--privacy-report', '{folder}/r.txt'], 'must end in .json'),
    'output over the input': (FIT[:-1] + ['{train}'], 'would overwrite an input file'),
    'sample zero rows': (['sample', '{folder}/garbage.pkl', '--rows', '0', '-o', '{folder}/s.csv'],
                         'rows must be at least 1'),
    'sample unknown extension': (['sample', '{folder}/garbage.pkl', '-n', '5', '-o',
                                  '{folder}/s.xlsx'], 'must end in .csv'),
    'sample missing synthesizer': (['sample', '{folder}/none.pkl', '-n', '5', '-o',
                                    '{folder}/s.csv'], 'does not exist'),
    'sample not a synthesizer': (['sample', '{folder}/garbage.pkl', '-n', '5', '-o',
                                  '{folder}/s.csv'], 'is not a synthesizer file'),
    'report not html': (['report', '{folder}/garbage.pkl', '-o', '{folder}/r.pdf'],
                        'must end in .html'),
    'report missing real table': (['report', '{folder}/garbage.pkl', '--real', '{folder}/no.csv',
                                   '-o', '{folder}/r.html'], "'{folder}/no.csv' does not exist"),
    'report unknown classifier': (['report', '{folder}/garbage.pkl', '--classifiers', 'SVM',
                                   '-o', '{folder}/r.html'], "Unknown classifiers ['SVM']"),
    'template bad metadata': (['domain-template', '{folder}/bad.json'], 'is not valid JSON'),
    'public data without reweighting': (FIT + ['--public-data', '{train}'],
                                        'only for --synthesizer reweighting'),
    'public data lacks a column': (FIT + ['-s', 'reweighting', '--public-data',
                                          '{folder}/no_race.csv'],
                                   "lacks the metadata's columns ['race']"),
    'missing public data file': (FIT + ['-s', 'reweighting', '--public-data', '{folder}/no.csv'],
                                 'does not exist'),
}


@pytest.mark.parametrize('case', list(BAD))
def test_issue20_every_bad_argument_exits_2_with_a_message_and_writes_nothing(
        case, inputs, capsys):
    argv, message = BAD[case]
    names = {k: str(v) for k, v in inputs.items()}
    before = sorted(p.name for p in inputs['folder'].iterdir())
    with pytest.raises(SystemExit) as exit_info:
        main([a.format(**names) for a in argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message.format(**names) in err and 'Traceback' not in err
    assert sorted(p.name for p in inputs['folder'].iterdir()) == before


def test_issue20_a_failure_while_writing_leaves_no_partial_file(inputs, monkeypatch, capsys):
    """The fit runs, then saving breaks half-way: exit 1, and neither output exists."""
    import sdv.single_table.base as sdv_base

    def broken_save(self, filepath):
        with open(filepath, 'wb') as f:
            f.write(b'half a pickle')
        raise OSError('disk full')

    monkeypatch.setattr(sdv_base.BaseSynthesizer, 'save', broken_save)
    folder = inputs['folder']
    before = sorted(p.name for p in folder.iterdir())
    names = {k: str(v) for k, v in inputs.items()}
    with pytest.raises(SystemExit) as exit_info:
        main([a.format(**names) for a in FIT] + FAST_PARAMS)
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert 'disk full' in err and 'Nothing was written' in err and 'Traceback' not in err
    assert sorted(p.name for p in folder.iterdir()) == before  # no out.pkl, no temporary file


def test_issue20_domain_template_says_it_reads_no_rows(inputs, capsys):
    main(['domain-template', str(inputs['metadata'])])
    captured = capsys.readouterr()
    assert json.loads(captured.out)['table_name'] == 'adult'
    assert 'no rows read' in captured.err


def test_issue20_a_fit_that_fails_exits_1_and_points_at_the_template_command(inputs, capsys):
    """60 rows are too few to discover any domain: the fit stops before spending anything."""
    folder = inputs['folder']
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(SystemExit) as exit_info:
        main(['fit', str(inputs['train']), '-m', str(inputs['metadata']), '--epsilon', '1', '-q',
              '-o', str(folder / 'out.pkl')])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert 'too few to discover' in err and 'Nothing was spent' in err
    assert f"sdv-dpkme domain-template {inputs['metadata']} --out domain.json" in err
    assert sorted(p.name for p in folder.iterdir()) == before


def test_issue18_reweighting_fits_from_the_command_line_with_a_public_table(inputs, capsys):
    """--public-data: the rows of another file are reweighted; samples are those rows."""
    folder = inputs['folder']
    public = pd.read_csv(inputs['train']).iloc[:30]
    public.to_csv(folder / 'public.csv', index=False)
    names = {k: str(v) for k, v in inputs.items()}
    out = folder / 'rw.pkl'
    main([a.format(**names) for a in FIT[:-1]] + [str(out), '-s', 'reweighting',
                                                     '--public-data', str(folder / 'public.csv')])
    report = json.loads(out.with_suffix('.privacy.json').read_text())
    assert [r['name'] for r in report['releases']] == ['public_basis_embedding']
    main(['sample', str(out), '-n', '40', '-o', str(folder / 'rw.csv')])
    rows = pd.read_csv(folder / 'rw.csv')
    key = ['workclass', 'education', 'occupation', 'native-country']
    assert set(map(tuple, rows[key].to_numpy())) <= set(map(tuple, public[key].to_numpy()))
    for name in ('rw.pkl', 'rw.privacy.json', 'rw.csv', 'public.csv'):
        (folder / name).unlink()
