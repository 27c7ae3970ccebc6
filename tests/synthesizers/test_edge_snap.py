"""Sampled values reach the declared bounds (``edge_snap``): a sigmoid never does, so a column
whose rows sit on a bound (a money column's zeros) came out with no value there."""

import math
import pickle
import warnings

import pandas as pd
import pytest
import torch
from sdv.errors import SynthesizerInputError

from sdv_dpkme import DPHPSynthesizer, DPHPTraining, DPMERFSynthesizer
from sdv_dpkme.engines.generator import TabularGenerator
from tests.conftest import make_table
from tests.synthesizers.test_contract import build

KME = [DPHPSynthesizer, DPMERFSynthesizer]


def _fitted(cls, **kwargs):
    synth = build(cls, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    return synth


def _pin(generator, logit):
    """Every output logit of ``generator`` set to ``logit`` (numeric values at sigmoid(logit),
    never missing when it is negative), as a generator pushed to a box edge; its value maps
    (which may move the edge inward) are cleared."""
    generator.value_maps = {}
    last = generator.net[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.fill_(logit)
    return generator


def _pinned(synth, logit, rows=60):
    """``rows`` sampled by ``synth`` with its generator pinned at ``logit`` (``_pin``)."""
    _pin(synth._model.generator, logit)
    synth.reset_sampling()
    return synth.sample(rows)['t']


def _numeric_values(generator, rows):
    """The encoded numeric values (not null indicators) of ``rows`` drawn from ``generator``."""
    drawn = generator.sample(torch.zeros(rows, dtype=torch.long), torch.Generator().manual_seed(0))
    return drawn[:, [b.columns[0] for b in generator.blocks if b.kind == 'numeric']]


@pytest.mark.parametrize('cls', KME)
def test_values_at_a_box_edge_decode_to_the_declared_bound(cls):
    synth = _fitted(cls)
    assert synth.training.edge_snap == 0.01
    assert synth.get_parameters()['training'].edge_snap == 0.01
    assert synth._model.generator.edge_snap == 0.01
    assert synth.get_privacy_report().parameters['training.edge_snap'] == 0.01
    low = _pinned(synth, -30.0)
    assert (low['income'] == 0.0).all()
    assert (low['age'] == 18).all()
    assert (low['when'] == pd.Timestamp('2020-01-01')).all()
    high = _pinned(synth, 30.0)
    assert (high['age'] == 90).all()
    assert (high['when'] == pd.Timestamp('2021-12-31')).all()
    # values only: a missingness probability of 0.005 (inside the snap) is not set to 0
    inside = _pinned(synth, math.log(0.005 / 0.995), rows=4000)
    assert (inside['income'].dropna() == 0.0).all()
    assert 5 <= inside['income'].isna().sum() <= 60


@pytest.mark.parametrize('cls', KME)
def test_edge_snap_zero_leaves_the_sigmoid_values(cls):
    low = _pinned(_fitted(cls, edge_snap=0), -30.0)
    assert (low['income'] > 0.0).all()
    assert (low['when'] > pd.Timestamp('2020-01-01')).all()


def test_values_inside_the_box_do_not_move():
    generator = _pin(_fitted(DPHPSynthesizer)._model.generator, -4.0)  # 0.018: outside the snap
    values = _numeric_values(generator, 40)
    assert values.size and (abs(values - torch.sigmoid(torch.tensor(-4.0)).item()) < 1e-6).all()


def test_a_generator_pickled_before_the_snap_samples_without_it():
    generator = _pin(_fitted(DPHPSynthesizer)._model.generator, -30.0)
    del generator.edge_snap
    clone = pickle.loads(pickle.dumps(generator))
    assert isinstance(clone, TabularGenerator) and not hasattr(clone, 'edge_snap')
    assert (_numeric_values(clone, 5) > 0).all()  # unsnapped: sigmoid(-30) > 0


@pytest.mark.parametrize('value', [-0.01, 0.5, float('nan'), 'auto', True])
def test_edge_snap_is_validated(value):
    with pytest.raises(SynthesizerInputError, match=r'edge_snap must be a number in \[0, 0.5\)'):
        DPHPTraining(edge_snap=value)
