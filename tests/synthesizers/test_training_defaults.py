"""DP-HP's generator-training defaults (issue 16: stops 33 and 34) and their resolution."""

import dataclasses
import warnings

import pandas as pd
import pytest
from sdv.utils import load_synthesizer

from sdv.errors import SynthesizerInputError

from sdv_dpkme import DPHPSynthesizer, DPHPTraining, DPMERFSynthesizer
from sdv_dpkme.engines.kme import LINK_NOISE_LIMIT
from sdv_dpkme.engines.link_structure import choose_parents
from sdv_dpkme.privacy.testing import fixed_noise
from tests.conftest import CATEGORIES, make_table
from tests.synthesizers.test_contract import build


@pytest.mark.parametrize('target,expected', [('label', 0.01), (None, 0.0)])
def test_auto_smoothing_is_on_only_for_class_conditional_dphp_fits(target, expected):
    synth = build(DPHPSynthesizer, target_column=target)
    assert synth.training.category_smoothing == 'auto'
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    assert synth._model.generator.category_smoothing == expected
    assert set(synth.sample(200)['t']['city'].dropna()) <= set(CATEGORIES['city'])


def test_dphp_and_dpmerf_training_defaults():
    hp, merf = build(DPHPSynthesizer).training, build(DPMERFSynthesizer).training
    assert (hp.pair_weight, hp.learning_rate_schedule, hp.max_auto_steps) == (4.0, 'cosine', 800)
    # issue 42: DP-MERF shares DP-HP's post-processing defaults (benchmarks/results/dpmerf_parity.md)
    assert (merf.pair_weight, merf.learning_rate_schedule, merf.category_smoothing,
            merf.max_auto_steps) == (4.0, 'cosine', 'auto', 800)
    explicit = build(DPHPSynthesizer, target_column='label', category_smoothing=0.0)
    assert explicit._category_smoothing() == 0.0
    assert (hp.category_links, merf.category_links) == ('auto', 'auto')


def test_dphp_auto_steps_grow_with_the_columns_beyond_fourteen(monkeypatch):
    hp, merf = build(DPHPSynthesizer, steps='auto'), build(DPMERFSynthesizer, steps='auto')
    n = 10**6
    assert [hp._steps(n, [None] * k) for k in (3, 14, 21, 40, 42, 80)] == \
        [800, 800, 1200, 2286, 2400, 2400]
    assert hp._steps(500, [None] * 40) == 500  # still at most one step per row
    assert [merf._steps(n, [None] * k) for k in (3, 40)] == [800, 2286]
    hp.training = dataclasses.replace(hp.training, steps=300)
    assert hp._steps(n, [None] * 40) == 300
    # a fit trains (and plans DP-HP's product cycle for) the steps of its own columns
    seen = []
    original = DPHPSynthesizer._kernel_terms
    monkeypatch.setattr(DPHPSynthesizer, '_kernel_terms',
                        lambda self, blocks, rng, steps: seen.append((len(blocks), steps))
                        or original(self, blocks, rng, steps))
    synth = build(DPHPSynthesizer, steps='auto', auto_steps_columns=2, max_auto_steps=7)
    synth.fit({'t': make_table()})
    ((blocks, steps),) = seen
    assert steps == min(21, round(7 * blocks / 2)) and steps > 7
    assert len(synth.get_loss_values()) == steps


@pytest.mark.parametrize('epsilon,linked', [(float('inf'), True), (1.0, False)])
def test_links_follow_the_parents_chosen_on_the_released_pair_tables(epsilon, linked):
    synth = build(DPHPSynthesizer, target_column='label', epsilon=epsilon, category_links=True)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    gen = synth._model.generator
    history = synth._model.loss_values
    # 240 rows at epsilon = 1: a pair cell's noise std is far above the limit
    assert (history.attrs['pair_cell_noise'] <= LINK_NOISE_LIMIT) == linked
    names = [b.name for b in gen.blocks if b.kind == 'categorical']
    parents = {names[j]: tuple(names[i] for i in ps) for j, ps in enumerate(gen._parents) if ps}
    narrow = {b.name for b in gen.blocks if b.kind == 'categorical'
              and len(b.columns) <= DPHPTraining.max_link_width}
    assert 'label' not in names  # the target is the class input, not a head
    if not linked:
        assert parents == {} and history.attrs['link_scores'] is None
        return
    scores = history.attrs['link_scores']
    assert set(scores.child) | set(scores.parent) == narrow and len(narrow) > 1
    assert parents and parents == choose_parents(scores, names, DPHPTraining.max_link_parents)
    assert all(len(p) <= DPHPTraining.max_link_parents for p in parents.values())
    assert build(DPHPSynthesizer, category_links=False)._category_links(gen.blocks) == ()


def test_auto_links_stay_silent_where_they_do_not_apply():
    synth = build(DPHPSynthesizer, target_column='label')
    with fixed_noise(4), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        synth.fit({'t': make_table()})
    assert synth.training.category_links == 'auto' and not synth._model.generator._linked
    assert not [w for w in caught if 'category_links' in str(w.message)]


def test_where_the_pair_tables_are_too_noisy_the_fit_is_the_unlinked_one_and_says_so():
    tables = []
    for links in (True, False):
        synth = build(DPHPSynthesizer, target_column='label', category_links=links)
        with fixed_noise(4), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            synth.fit({'t': make_table()})
        said = [str(w.message) for w in caught if 'category_links=True was not applied' in
                str(w.message)]
        assert len(said) == links and (not links or 'noise std' in said[0])
        tables.append(synth.sample(100)['t'])
    pd.testing.assert_frame_equal(*tables)


def test_links_without_a_pairs_release_warn():
    synth = build(DPHPSynthesizer, target_column='label', epsilon=float('inf'),
                  category_links=True, pair_length_scale=None)
    with pytest.warns(UserWarning, match="no 'pairs' release"):
        synth.fit({'t': make_table()})
    assert not synth._model.generator._linked


def test_dphp_releases_a_spanning_tree_of_selected_pairs_by_default():
    table = make_table()
    synth = build(DPHPSynthesizer)
    assert (synth.kernel.selected_pairs, synth.kernel.selected_pairs_spanning) == ('auto', True)
    synth.fit({'t': table})
    chosen = synth._model.loss_values.attrs['selected_pairs']
    columns = {c for pair in chosen for c in pair}
    assert {'city', 'flag'} <= columns and len(chosen) == len(columns) - 1  # a spanning tree
    assert 'Selected pairs loss' in synth.get_loss_values()
    report = str(synth.get_privacy_report())
    assert 'selected_pairs' in report and 'spent epsilon=1 ' in report
    synth = build(DPHPSynthesizer, selected_pairs=0)
    synth.fit({'t': table})
    assert synth._model.loss_values.attrs['selected_pairs'] is None
    report = synth.get_privacy_report()
    assert 'selected_pairs' not in set(report.to_frame()['name'])
    assert report.parameters['kernel.selected_pairs'] == 0
    merf = build(DPMERFSynthesizer).kernel
    assert (merf.selected_pairs, merf.selected_pairs_spanning) == ('auto', True)


@pytest.mark.slow
@pytest.mark.parametrize('cls', [DPHPSynthesizer, DPMERFSynthesizer])
@pytest.mark.parametrize('attribute,value', [
    ('selected_pairs', 'all'), ('selected_pairs', -1), ('selected_pairs', 2.5),
    ('selected_pair_weight', 0), ('selected_pair_weight', float('nan')),
    ('selected_pairs_spanning', 'yes'), ('selected_pairs_score', 'l2'),
])
def test_bad_selected_pair_settings_fail_with_a_clear_error(cls, attribute, value):
    with pytest.raises(SynthesizerInputError, match=attribute):
        build(cls, **{attribute: value})


def test_dphp_calibrates_its_heads_by_default_without_changing_the_releases(tmp_path):
    table = make_table()
    on = build(DPHPSynthesizer)
    assert on.training.calibration_parents == 2
    assert build(DPMERFSynthesizer).training.calibration_parents == 2
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # fixed noise: not private, as the test wants
        with fixed_noise(3):
            on.fit({'t': table})
        off = build(DPHPSynthesizer, calibration_parents=0)
        with fixed_noise(3):
            off.fit({'t': table})
    attrs = on._model.loss_values.attrs
    assert attrs['calibration_seconds'] > 0 and isinstance(attrs['calibrated_pairs'], list)
    # 240 rows: no numeric column's release stands 3 noise stds from the generated one
    assert attrs['calibrated_values'] == [] and on._model.generator.value_maps == {}
    offsets = on._model.generator.calibration
    assert offsets and any((t != 0).any() for v in offsets.values() for _, t in v)
    assert not getattr(off._model.generator, 'calibration', None)
    assert 'calibrated_pairs' not in off._model.loss_values.attrs
    assert 'calibrated_values' not in off._model.loss_values.attrs
    assert not getattr(off._model.generator, 'value_maps', None)
    # post-processing: the same releases, the same report
    def releases(synth):  # the report without its options (calibration_parents differs)
        return str(dataclasses.replace(synth.get_privacy_report(), parameters={}))

    assert releases(on) == releases(off)
    assert on.get_privacy_report().parameters['training.calibration_parents'] == 2
    on.save(tmp_path / 'on.pkl')
    loaded = load_synthesizer(tmp_path / 'on.pkl')
    pd.testing.assert_frame_equal(loaded.sample(50)['t'], on.sample(50)['t'])


@pytest.mark.parametrize('value', [-1, 1.5, 'auto', None])
def test_bad_calibration_parents_fail_with_a_clear_error(value):
    with pytest.raises(SynthesizerInputError, match='calibration_parents'):
        build(DPHPSynthesizer, calibration_parents=value)
