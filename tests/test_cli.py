import json

from sdv_dpkme.cli import main


def test_demo_writes_table_report_and_summary(tmp_path, monkeypatch):
    import sdv_dpkme.synthesizers.dphp as dphp

    original = dphp.DPHPSynthesizer.__init__

    def fast_init(self, *args, **kwargs):  # keep the test fast: few steps, small kernels
        kwargs.update(steps=10, sum_order=10, product_redraws=2, verbose=False)
        original(self, *args, **kwargs)

    monkeypatch.setattr(dphp.DPHPSynthesizer, '__init__', fast_init)
    main(['demo', '--out', str(tmp_path), '--rows', '200'])
    summary = json.loads((tmp_path / 'sdmetrics_summary.json').read_text())
    assert summary['rows'] == 200 and 0 < summary['sdmetrics_quality'] <= 1
    report = json.loads((tmp_path / 'privacy_report.json').read_text())
    assert report['epsilon'] == 1.0 and report['epsilon_spent'] <= 1.0
    assert (tmp_path / 'synthetic.csv').read_text().count('\n') == 201


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
