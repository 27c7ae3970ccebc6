"""Wide numeric tables (issue 42, item 5): the 'pairs' structure scales with the width, and no
column leaves it without a reason in both reports; steps='auto' has an absolute cap."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sdv.metadata import Metadata

from sdv_dpkme import DPHPSynthesizer
from sdv_dpkme.evaluation.html_report import _ledger
from sdv_dpkme.features import PairwiseKernelMap
from sdv_dpkme.synthesizers import kme_base
from tests.conftest import make

COLUMNS = [f'f{i}' for i in range(74)]  # the protein table's shape: 74 numeric + a binary target


def _protein_like(n=120, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, len(COLUMNS))), columns=COLUMNS)
    frame['target'] = (rng.random(n) < 0.3).astype(int)
    columns = {c: {'sdtype': 'numerical'} for c in COLUMNS}
    columns['target'] = {'sdtype': 'categorical'}
    return frame, Metadata.load_from_dict({'tables': {'protein': {'columns': columns}}})


def _fit(monkeypatch, **flat):
    frame, metadata = _protein_like()
    seen = []
    original = kme_base.shared_terms
    monkeypatch.setattr(kme_base, 'shared_terms',
                        lambda *a, **k: seen.append(original(*a, **k)) or seen[-1])
    synth = make(DPHPSynthesizer, metadata, epsilon=1.0, target_column='target', random_state=0,
                 known_min_max_values={c: (-5, 5) for c in COLUMNS},
                 known_categories={'target': [0, 1]}, steps=2, batch_size=32, sum_order=5,
                 product_order=2, product_redraws=1, calibration_parents=0,
                 marginal_length_scale=None, selected_pairs=0, verbose=False,
                 plan='fixed', **flat)  # 120 rows: the noise-aware plan would drop 'pairs'
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        synth.fit({'protein': frame})
    ((pairs,),) = [[t.feature_map for t in terms if isinstance(t.feature_map, PairwiseKernelMap)]
                   for terms in seen]
    report = synth.get_privacy_report()
    html = _ledger(report)
    return synth, pairs, report, html, [str(w.message) for w in caught]


def _paired(fmap):
    return {name for pair in fmap.pair_names() for name in pair}


def test_default_cap_keeps_every_pair_of_the_protein_shape_and_reports_the_narrowing(
        monkeypatch):
    synth, pairs, report, html, caught = _fit(monkeypatch)
    assert _paired(pairs) == set(COLUMNS) and pairs.n_pairs == 74 * 73 // 2
    assert pairs.dim <= synth.kernel.max_pair_features
    notes = [n for n in report.notes if "'pairs'" in n]
    assert len(notes) == 1 and 'every pair' in notes[0]
    assert f'{pairs.n_frequencies} of ' in notes[0] and notes[0].replace("'", '&#x27;') in html
    assert not any('leaves out' in m for m in caught)  # nothing left out: no warning


@pytest.mark.parametrize('cap', [40_000, 2_000, 500])  # fewer pairs, then fewer columns
def test_no_column_leaves_the_pairs_without_a_reason_in_both_reports(monkeypatch, cap):
    synth, pairs, report, html, caught = _fit(monkeypatch, max_pair_features=cap)
    assert pairs.dim <= cap
    notes = ' '.join(n for n in report.notes if "'pairs'" in n)
    missing = set(COLUMNS) - _paired(pairs)
    for name in missing:  # every column with no pair is named, with why
        assert f"'{name}': " in notes
    if pairs.n_pairs < len(_paired(pairs)) * (len(_paired(pairs)) - 1) // 2:
        assert 'cyclic design' in notes  # a subset of pairs says how it was chosen
    assert notes and all(n.replace("'", '&#x27;') in html for n in report.notes
                         if "'pairs'" in n)
    assert any("'pairs'" in m for m in caught)  # and the user is warned


def test_auto_steps_have_an_absolute_cap_whatever_the_width():
    frame, metadata = _protein_like()
    synth = make(DPHPSynthesizer, metadata, epsilon=1.0, max_auto_steps=10, auto_steps_columns=2)
    assert synth._steps(10**6, range(10)) == 30  # grows with the width, up to 3x by default
    assert synth._steps(10**6, range(10**4)) == 30
    capped = make(DPHPSynthesizer, metadata, epsilon=1.0, max_auto_steps=10,
                  auto_steps_columns=2, auto_steps_limit=12)
    assert capped._steps(10**6, range(10**4)) == 12 and capped._steps(10**6, range(2)) == 10
    assert 'auto_steps_limit' in capped.get_parameters()['training'].__repr__()
