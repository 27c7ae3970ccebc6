import json

import pytest
from sdv.metadata import Metadata

from sdv_dpkme import DPHPSynthesizer
from sdv_dpkme.datasets import load_adult_sample
from sdv_dpkme.evaluation.html_report import build_report
from tests.cli_helpers import ReportParser
from tests.conftest import make

NASTY = '<b onmouseover="x()">race</b>'


@pytest.mark.slow
def test_issue20_report_escapes_column_names_from_users():
    data, metadata, domain = load_adult_sample()
    data = data.head(200).rename(columns={'race': NASTY})
    spec = metadata.to_dict()
    columns = spec['tables']['adult']['columns']
    spec['tables']['adult']['columns'] = {NASTY if c == 'race' else c: v
                                          for c, v in columns.items()}
    domain = json.loads(json.dumps(domain))
    domain['known_categories'][NASTY] = domain['known_categories'].pop('race')
    synth = make(DPHPSynthesizer, Metadata.load_from_dict(spec), epsilon=1.0, domain=domain,
                            target_column='income', steps=3, sum_order=10, product_redraws=2,
                            batch_size=64, generator_dims=(32,), latent_dim=8, verbose=False)
    synth.fit({'adult': data})
    page = build_report(synth, real=data, classifiers=['GaussianNB'], worst_columns=15,
                        worst_pairs=1)
    assert NASTY not in page and '<b ' not in page and 'onmouseover="' not in page
    assert '&lt;b onmouseover=&quot;x()&quot;&gt;race&lt;/b&gt;' in page
    parser = ReportParser()
    parser.feed(page)
    assert any(columns == NASTY for _, _, columns in parser.figures)  # attribute round-trips
    assert parser.scripts == 0


def test_issue20_report_without_matplotlib_says_what_to_install(monkeypatch, capsys, tmp_path):
    import importlib.util

    from sdv_dpkme.cli import main

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec',
                        lambda name, *a: None if name == 'matplotlib' else real_find_spec(name, *a))
    (tmp_path / 'synth.pkl').write_bytes(b'unused: the check comes first')
    with pytest.raises(SystemExit) as exit_info:
        main(['report', str(tmp_path / 'synth.pkl'), '-o', str(tmp_path / 'r.html')])
    assert exit_info.value.code == 2
    assert "pip install 'sdv-dpkme[report]'" in capsys.readouterr().err
    assert not (tmp_path / 'r.html').exists()
