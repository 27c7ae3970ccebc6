"""DP-HP's generator-training defaults of stop 33 (issue 16) and their resolution."""

import warnings
from pathlib import Path

import pytest
from sdv.utils import load_synthesizer

from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer
from tests.conftest import CATEGORIES, make_table
from tests.synthesizers.test_contract import build


@pytest.mark.parametrize('target,expected', [('label', 0.01), (None, 0.0)])
def test_auto_smoothing_is_on_only_for_class_conditional_dphp_fits(target, expected):
    synth = build(DPHPSynthesizer, target_column=target)
    assert synth.category_smoothing == 'auto'
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    assert synth._model.generator.category_smoothing == expected
    assert set(synth.sample(200)['t']['city'].dropna()) <= set(CATEGORIES['city'])


def test_dphp_and_dpmerf_training_defaults():
    hp, merf = build(DPHPSynthesizer), build(DPMERFSynthesizer)
    assert (hp.pair_weight, hp.learning_rate_schedule, hp.max_auto_steps) == (4.0, 'cosine', 800)
    assert (merf.pair_weight, merf.learning_rate_schedule, merf.category_smoothing,
            merf.max_auto_steps) == (1.0, 'constant', 0.0, 500)
    explicit = build(DPHPSynthesizer, target_column='label', category_smoothing=0.0)
    assert explicit._category_smoothing() == 0.0


def test_models_saved_before_the_options_keep_the_training_they_had():
    path = Path(__file__).parent / 'data' / 'DPHPSynthesizer-default.pkl'
    synth = load_synthesizer(str(path))
    assert synth.learning_rate_schedule == 'constant'
    assert synth.category_smoothing == 0.0
    assert synth._category_smoothing() == 0.0
    assert len(synth.sample(20)['t']) == 20
