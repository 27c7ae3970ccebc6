"""DP-MERF specifics (the shared SDV contract runs in test_contract.py for every synthesizer)."""

import pytest
import torch
from sdv.errors import SynthesizerInputError

from sdv_dpkme import DPMERFSynthesizer
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
