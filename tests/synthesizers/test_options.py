"""The options objects and ``build_kwargs``: flat settings to constructor arguments."""

import dataclasses
import json

import pytest
from sdv.errors import SynthesizerInputError

from sdv_dpkme import (
    DPHPKernel,
    DPHPSynthesizer,
    DPHPTraining,
    DPMERFKernel,
    DPMERFSynthesizer,
    DPMERFTraining,
)
from sdv_dpkme.synthesizers.options import build_kwargs


def test_flat_settings_become_config_objects_and_the_domain_shorthand():
    kwargs = build_kwargs(DPHPSynthesizer, {
        'epsilon': 2.0, 'sum_order': 10, 'steps': 5, 'kernel.selected_pairs': 0,
        'known_categories': {'city': ['Lima']}, 'nullable_columns': ['income'],
        'metadata_is_public': True})
    assert kwargs['epsilon'] == 2.0
    assert kwargs['kernel'] == dataclasses.replace(DPHPKernel(), sum_order=10, selected_pairs=0)
    assert kwargs['training'] == dataclasses.replace(DPHPTraining(), steps=5)
    assert kwargs['domain'] == {'known_categories': {'city': ['Lima']},
                                'nullable_columns': ['income'], 'metadata_is_public': True}


def test_qualified_names_and_a_base_object_combine():
    base = DPMERFTraining(latent_dim=4)
    kwargs = build_kwargs(DPMERFSynthesizer, {'training': base, 'training.steps': 7,
                                              'releases': 'minibatch'})
    assert kwargs['training'] == DPMERFTraining(latent_dim=4, steps=7)
    assert kwargs['kernel'] == DPMERFKernel(releases='minibatch')
    assert base.steps == 'auto'  # frozen: the base is not changed


@pytest.mark.parametrize('name', ['stepz', 'kernel.steps', 'training.sum_order', 'n_features'])
def test_unknown_names_list_the_valid_ones(name):
    with pytest.raises(SynthesizerInputError, match=f"no parameter '{name}'") as err:
        build_kwargs(DPHPSynthesizer, {name: 1})
    assert 'sum_order' in str(err.value) and 'known_categories' in str(err.value)


@pytest.mark.parametrize('name', ['noise_seed', 'training.noise_seed'])
def test_the_noise_seed_is_refused(name):
    with pytest.raises(SynthesizerInputError, match='voids the guarantee.*fixed_noise'):
        build_kwargs(DPHPSynthesizer, {name: 1})


def test_the_shorthand_merges_into_a_spec_and_refuses_a_second_differing_fact(tmp_path):
    spec = {'columns': {'age': {'min_value': 0, 'max_value': 9}},
            'known_categories': {'city': ['Lima']}}
    path = tmp_path / 'domain.json'
    path.write_text(json.dumps(spec))
    for domain in (spec, str(path)):
        kwargs = build_kwargs(DPHPSynthesizer, {'domain': domain,
                                                'known_categories': {'flag': [True, False]}})
        assert kwargs['domain']['known_categories'] == {'city': ['Lima'], 'flag': [True, False]}
        assert kwargs['domain']['columns'] == spec['columns']
    assert spec['known_categories'] == {'city': ['Lima']}  # the caller's spec is not changed
    with pytest.raises(SynthesizerInputError, match='declare each fact once'):
        build_kwargs(DPHPSynthesizer, {'domain': spec, 'known_categories': {'city': ['Oslo']}})
    with pytest.raises(SynthesizerInputError, match="'age'.*declare each fact once"):
        build_kwargs(DPHPSynthesizer, {'domain': spec, 'known_min_max_values': {'age': (1, 9)}})
    # None declares nothing: a path stays a path
    assert build_kwargs(DPHPSynthesizer, {'domain': str(path),
                                          'nullable_columns': None}) == {'domain': str(path)}


def test_options_are_frozen_validated_and_keep_each_class_default():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DPHPTraining().steps = 3
    with pytest.raises(SynthesizerInputError, match='product_schedule'):
        DPHPTraining(product_schedule='random')
    assert DPHPTraining(generator_dims=[8, 8]).generator_dims == (8, 8)
    hp, merf = DPHPTraining(), DPMERFTraining()
    assert (hp.pair_weight, hp.calibration_parents, hp.max_auto_steps) == (4.0, 2, 800)
    assert (merf.pair_weight, merf.calibration_parents, merf.max_auto_steps) == (4.0, 2, 800)
    assert (DPHPKernel().selected_pairs, DPMERFKernel().selected_pairs) == ('auto', 'auto')
    assert (DPHPKernel().marginal_length_scale, DPMERFKernel().marginal_length_scale) == (
        0.01, 0.01)


def test_a_wrong_option_object_is_a_clear_error():
    from tests.conftest import make_metadata

    with pytest.raises(SynthesizerInputError, match='kernel must be a sdv_dpkme.DPHPKernel'):
        DPHPSynthesizer(make_metadata(), epsilon=1.0, kernel=DPMERFKernel())
    with pytest.raises(SynthesizerInputError, match="DPHPTraining has no field \\['sum_order'\\]"):
        DPHPSynthesizer(make_metadata(), epsilon=1.0, training={'sum_order': 3})


def test_the_cli_param_parser_takes_bare_and_qualified_names_and_refuses_the_noise_seed():
    from sdv_dpkme.cli import UsageError
    from sdv_dpkme.cli.params import _parameters

    params = _parameters(['steps=5', 'training.batch_size=64', 'selected_pairs=0',
                          'generator_dims=[32]', 'category_links=auto'], DPHPSynthesizer)
    kwargs = build_kwargs(DPHPSynthesizer, params)
    assert (kwargs['training'].steps, kwargs['training'].batch_size) == (5, 64)
    assert kwargs['training'].generator_dims == (32,)
    assert kwargs['kernel'].selected_pairs == 0
    for bad, match in (('noise_seed=1', 'voids the guarantee'),
                       ('training.noise_seed=1', 'voids the guarantee'),
                       ('stepz=3', "no parameter 'stepz'"), ('steps=0', 'steps'),
                       ('epsilon=3', 'its own option')):
        with pytest.raises(UsageError, match=match):
            _parameters([bad], DPHPSynthesizer)
