"""Issue 42: with a two-class target, one_way='auto' offers the pooled 'one_way' term to the
noise-aware plan, which releases it in place of the class-conditional 'marginals' only where
these are noise-dominated, from public facts only, and says why in the plan."""

import math
import warnings

import pytest

from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer
from sdv_dpkme.engines.kernel_terms import one_way_term
from sdv_dpkme.engines.kme import PairSelection
from sdv_dpkme.engines.noise_plan import POOLED_FALLBACK_RATIO, choose_releases
from sdv_dpkme.privacy import PrivacyAccountant
from tests.conftest import make_table
from tests.engines.test_noise_plan import BLOCKS, SHARES, STEPS, _key, _precision, _terms
from tests.synthesizers.test_contract import build


def _plan(n, fallback=True, max_ratio=5.0):
    accountant = PrivacyAccountant(1.0, 1e-5)
    extra = [one_way_term(BLOCKS, 0.01)] if fallback else []
    kept, selects, plan, sigmas, entries = choose_releases(
        _terms(), {**SHARES, 'one_way': 0.4}, True, n, 2, accountant.calibrate, max_ratio,
        PairSelection(None, 1.0, True), STEPS, extra)
    return accountant, kept, plan, sigmas, {e.group: e for e in entries}


@pytest.mark.parametrize('n', [100, 400])  # narrowed; kept at ratio 1.8
def test_noise_dominated_marginals_are_replaced_by_the_pooled_release_with_the_reason(n):
    accountant, kept, plan, sigmas, entries = _plan(n)
    without = _plan(n, fallback=False)[-1]['marginals']
    assert without.decision != 'kept' or without.ratio > POOLED_FALLBACK_RATIO
    groups = [t.group for t in kept]
    assert 'one_way' in groups and 'one_way' in plan
    assert 'marginals' not in groups and 'marginals' not in plan
    entry = entries['one_way']
    assert entry.releases == 1 and "instead of the class-conditional 'marginals'" in entry.reason
    assert next(t for t in kept if t.group == 'one_way').pooled
    gone = entries['marginals']
    assert gone.decision == 'dropped' and gone.releases == 0 and 'one_way' in gone.reason
    assert list(entries).index('marginals') < list(entries).index('pairs')  # where it stood
    # no finer than the plan without it left the marginals (at full length an 80-row fit
    # parked a column at a box edge: tests/engines/test_edge_collapse.py)
    _, kept0, *_ = _plan(n, fallback=False)
    marginal = next(t.feature_map for t in kept0 if t.group == 'marginals')
    pooled = next(t.feature_map for t in kept if t.group == 'one_way')
    assert pooled.length_scale >= marginal.length_scale
    if pooled.length_scale > 0.01:  # coarser than asked: the entry says so
        assert f'at length {pooled.length_scale:g}' in entry.reason
    # the spend is the budget's, with the pooled release's share taken from the others
    assert math.isclose(_precision(plan, sigmas), accountant.total_precision(), rel_tol=1e-9)


def test_marginals_that_carry_signal_leave_the_plan_as_it_was():
    n = 200_000
    assert _plan(n, fallback=False)[-1]['marginals'].ratio <= POOLED_FALLBACK_RATIO
    _, kept, plan, sigmas, entries = _plan(n)
    _, kept0, plan0, sigmas0, entries0 = _plan(n, fallback=False)
    assert 'one_way' not in entries and 'one_way' not in plan
    assert _key(kept) == _key(kept0) and plan == plan0 and sigmas == sigmas0


def test_with_three_classes_it_stays_beside_marginals_that_carry_signal_and_replaces_noisy_ones():
    def plan(n):
        accountant = PrivacyAccountant(1.0, 1e-5)
        kept, _, plan, sigmas, entries = choose_releases(
            _terms(), {**SHARES, 'one_way': 0.4}, True, n, 3, accountant.calibrate, 5.0,
            PairSelection(None, 1.0, True), STEPS, [one_way_term(BLOCKS, 0.01)], True)
        return kept, plan, sigmas, {e.group: e for e in entries}

    # large n: the plan of both terms, as with one_way=True (the former 'auto' at >= 3 classes)
    kept, planned, sigmas, entries = plan(200_000)
    accountant = PrivacyAccountant(1.0, 1e-5)
    both = choose_releases(_terms() + [one_way_term(BLOCKS, 0.01)], {**SHARES, 'one_way': 0.4},
                           True, 200_000, 3, accountant.calibrate, 5.0,
                           PairSelection(None, 1.0, True), STEPS)
    assert _key(kept) == _key(both[0]) and planned == both[2] and sigmas == both[3]
    assert entries['marginals'].decision == 'kept' and entries['one_way'].decision == 'kept'
    # small n: in place of the noise-dominated marginals
    kept, planned, _, entries = plan(100)
    assert 'marginals' not in planned and 'one_way' in planned
    assert entries['marginals'].decision == 'dropped' and 'one_way' in entries['marginals'].reason


def test_the_fixed_plan_never_adds_it():
    _, kept, plan, _, entries = _plan(100, max_ratio=None)
    assert 'one_way' not in plan and 'one_way' not in {t.group for t in kept}


@pytest.mark.parametrize('cls', [DPHPSynthesizer, DPMERFSynthesizer])
def test_a_small_two_class_fit_releases_one_way_under_auto_only(cls):
    table = make_table(60)
    assert table['label'].nunique() == 2

    def groups(**kwargs):
        synth = build(cls, **{'target_column': 'label', 'plan': 'auto', **kwargs})
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            synth.fit({'t': table})
        report = synth.get_privacy_report()
        return synth, [r.name for r in report.releases], {p['group']: p for p in report.plan}

    synth, releases, plan = groups()
    assert synth.kernel.one_way == 'auto'
    assert releases.count('one_way') == 1 and 'marginals' not in releases
    assert "class-conditional 'marginals'" in plan['one_way']['reason']
    assert plan['marginals']['decision'] == 'dropped' and plan['marginals']['releases'] == 0
    assert 'One-way loss' in synth.get_loss_values().columns
    assert len(synth.sample(10)['t']) == 10
    for kwargs in ({'one_way': False}, {'plan': 'fixed'}):
        releases = groups(**kwargs)[1]
        assert 'one_way' not in releases and 'marginals' in releases
    # on: both, as the option says
    releases = groups(one_way=True)[1]
    assert 'one_way' in releases and 'marginals' in releases
    # three classes ('auto' releases it at any n): in place of the marginals at this n, and
    # beside them under the fixed plan
    releases = groups(target_column='city')[1]
    assert 'one_way' in releases and 'marginals' not in releases
    releases = groups(target_column='city', plan='fixed')[1]
    assert 'one_way' in releases and 'marginals' in releases
