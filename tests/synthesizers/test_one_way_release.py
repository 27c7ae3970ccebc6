"""The pooled 'one_way' release in the fit, the ledger, the plan and the reports (issue 42)."""

import math

import pytest

from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer
from sdv_dpkme.evaluation.html_report import _plan
from sdv_dpkme.features import OneWayMap
from tests.conftest import SYNTHESIZERS
from tests.privacy import attack
from tests.privacy.test_adversarial import build, fit


@pytest.mark.parametrize('cls', [DPHPSynthesizer, DPMERFSynthesizer])
def test_one_way_is_one_pooled_release_in_the_ledger_plan_and_report(cls):
    synth = build(cls, 'one_way')
    releases = fit(synth, attack.table())
    # the adversarial suite (same builder) walks it: a neighbour's release moves within its bound
    assert 'one_way' in [name for name, *_ in releases]
    report = synth.get_privacy_report()
    (entry,) = [r for r in report.releases if r.name == 'one_way']
    fmap = OneWayMap(synth._layout(synth._data_processor.transform(attack.table()))[0])
    n = len(attack.table())
    assert entry.dimension == fmap.dim  # (1, P): not P x classes
    assert entry.sensitivity == pytest.approx(fmap.replace_bound / n)
    (planned,) = [p for p in report.plan if p['group'] == 'one_way']
    assert planned['dimension'] == fmap.dim and planned['releases'] == 1
    assert math.isclose(planned['expected_noise_norm'],
                        planned['noise_multiplier'] * planned['sensitivity'] * fmap.dim ** 0.5)
    assert 'one_way' in str(report) and 'one_way' in _plan(report.plan)
    assert synth.get_parameters()['kernel'].one_way is True
    assert 'One-way loss' in synth.get_loss_values().columns


def test_one_way_auto_needs_a_target_of_three_classes_and_false_turns_it_off():
    synth = build(DPHPSynthesizer, 'one_way', one_way=False)
    assert 'one_way' not in [name for name, *_ in fit(synth, attack.table())]
    synth = build(DPHPSynthesizer, 'default')  # 'auto', the attack table's 2-class label
    assert synth.kernel.one_way == 'auto'
    assert 'one_way' not in [name for name, *_ in fit(synth, attack.table())]
    synth = build(DPHPSynthesizer, 'default', target_column='city')  # 3 declared categories
    assert 'one_way' in [name for name, *_ in fit(synth, attack.table())]
    synth = build(DPHPSynthesizer, 'default', target_column=None)
    assert 'one_way' not in [name for name, *_ in fit(synth, attack.table())]
    synth = build(DPHPSynthesizer, 'default', target_column=None, one_way=True)
    assert 'one_way' in [name for name, *_ in fit(synth, attack.table())]


def test_one_way_option_is_checked():
    from sdv.errors import SynthesizerInputError

    from sdv_dpkme import DPHPKernel
    with pytest.raises(SynthesizerInputError, match='one_way'):
        DPHPKernel(one_way='yes')
