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
