"""DP-MERF specifics (the shared SDV contract runs in test_contract.py for every synthesizer)."""

import warnings

import pytest
import torch
from sdv.errors import SynthesizerInputError

from sdv_dpkme import DPHPKernel, DPHPTraining, DPMERFKernel, DPMERFSynthesizer, DPMERFTraining
from sdv_dpkme.privacy.testing import fixed_noise
from sdv_dpkme.features import Block, FourierKernelMap
from tests.conftest import make, BOUNDS, CATEGORIES, FAST_MERF, make_metadata


def build(**kwargs):
    args = dict(epsilon=1.0, known_min_max_values=BOUNDS, known_categories=CATEGORIES,
                random_state=0, target_column='label', **FAST_MERF)
    args.update(kwargs)
    return make(DPMERFSynthesizer, make_metadata(), **args)


@pytest.mark.filterwarnings('ignore::RuntimeWarning')
def test_minibatch_mode_accounts_every_step(table):
    synth = build(releases='minibatch', minibatch_size=40)
    synth.fit({'t': table})
    report = synth.get_privacy_report()
    rows = report.to_frame().set_index('name')
    assert rows.loc['embedding_minibatch', 'count'] == FAST_MERF['steps']
    assert rows.loc['embedding_minibatch', 'sampling_probability'] == pytest.approx(40 / len(table))
    assert rows.loc['marginals', 'count'] == 1  # the marginal term is released once, in full
    assert rows.loc['marginals', 'sampling'] == 'none'
    assert rows.loc['pairs', 'count'] == 1
    assert rows.loc['pairs', 'sampling'] == 'none'
    assert 0.98 < report.epsilon_spent <= 1.0
    assert 'without replacement' in report.accountant
    assert len(synth.sample(20)['t']) == 20


@pytest.mark.parametrize('kwargs,match', [
    (dict(releases='many'), 'single'),
])
def test_bad_release_mode(kwargs, match):
    with pytest.raises(SynthesizerInputError, match=match):
        build(**kwargs)


def test_minibatch_larger_than_table_is_a_clear_error(table):
    synth = build(releases='minibatch', minibatch_size=len(table))
    with pytest.raises(SynthesizerInputError, match='minibatch_size'):
        synth.fit({'t': table})


def test_single_release_uses_the_public_length_scale(table):
    synth = build(length_scale=0.7)
    synth.fit({'t': table})
    (release,) = [r for r in synth.get_privacy_report().releases if r.name == 'embedding']
    assert release.sensitivity == pytest.approx(2 / len(table))
    # frequencies depend only on the public length scale and the model seed
    a = FourierKernelMap([Block('a', 'numeric', (0,))], 8, 0.7, torch.Generator().manual_seed(1))
    b = FourierKernelMap([Block('a', 'numeric', (0,))], 8, 0.7, torch.Generator().manual_seed(1))
    assert torch.equal(a.frequencies, b.frequencies)


def test_defaults_round_trip_through_parameters_and_report():
    synth = make(DPMERFSynthesizer, make_metadata(), epsilon=1.0, verbose=False)
    params = synth.get_parameters()
    assert params['kernel'] == DPMERFKernel() and params['training'] == DPMERFTraining()
    merf, hp = DPMERFTraining(), DPHPTraining()
    shared = ('pair_weight', 'learning_rate_schedule', 'category_smoothing', 'category_links',
              'calibration_parents', 'max_auto_steps', 'auto_steps_columns')
    assert [getattr(merf, f) for f in shared] == [getattr(hp, f) for f in shared]
    for field in ('marginal_length_scale', 'selected_pairs', 'selected_pairs_spanning'):
        assert getattr(DPMERFKernel(), field) == getattr(DPHPKernel(), field)
    # DP-MERF's own map and release mode keep their own defaults
    assert (DPMERFKernel().n_features, DPMERFKernel().releases) == (1000, 'single')


@pytest.mark.parametrize('target', ['label', None])
def test_a_fit_with_the_default_post_processing_works_with_and_without_a_target(table, target):
    synth = build(target_column=target)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # fixed noise is not private, as the test wants
        with fixed_noise(1):
            synth.fit({'t': table})
    report = synth.get_privacy_report()
    names = set(report.to_frame()['name'])
    assert {'embedding', 'marginals', 'pairs', 'selected_pairs'} <= names
    assert ('class_proportions' in names) == (target is not None)
    assert report.parameters['training.calibration_parents'] == 2
    assert report.parameters['kernel.selected_pairs'] == 'auto'
    attrs = synth._model.loss_values.attrs
    chosen = attrs['selected_pairs']
    columns = {c for pair in chosen for c in pair}
    assert chosen and len(chosen) == len(columns) - 1  # a spanning tree
    assert attrs['calibration_seconds'] > 0
    expected = 0.01 if target else 0.0  # category_smoothing='auto'
    assert synth._model.generator.category_smoothing == expected
    assert len(synth.get_loss_values()) == FAST_MERF['steps']
    out = synth.sample(50)['t']
    assert len(out) == 50 and set(out['city'].dropna()) <= set(CATEGORIES['city'])
    if target:
        assert set(out['label'].dropna()) <= set(CATEGORIES['label'])


@pytest.mark.filterwarnings('ignore::RuntimeWarning')
def test_minibatch_mode_releases_no_selected_pairs_and_refuses_a_count(table):
    synth = build(releases='minibatch', minibatch_size=40)
    assert synth.kernel.selected_pairs == 'auto'
    synth.fit({'t': table})
    assert 'selected_pairs' not in set(synth.get_privacy_report().to_frame()['name'])
    with pytest.raises(SynthesizerInputError, match="releases='single'"):
        build(releases='minibatch', selected_pairs=2)
    assert build(releases='minibatch', selected_pairs=0).kernel.selected_pairs == 0
