"""Issue 42 items 2 and 6: the noise-aware release plan, decided from public facts only."""

import math
import warnings

import pytest
import torch

from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer, NoiseDominatedWarning
from sdv_dpkme.engines import kme_plan
from sdv_dpkme.engines.kernel_terms import dphp_terms, shared_terms
from sdv_dpkme.engines.kme import PairSelection
from sdv_dpkme.engines.noise_plan import PlanEntry, choose_releases
from sdv_dpkme.engines.plan_warning import warn_if_weak, weak_signal
from sdv_dpkme.features import Block
from sdv_dpkme.privacy import PrivacyAccountant
from sdv_dpkme.privacy.recorder import recording
from tests.conftest import make_table
from tests.synthesizers.test_contract import build

# a public layout: 3 numeric columns (one nullable) and 3 categorical ones, 3 classes
BLOCKS = [Block('x', 'numeric', (0,)), Block('y', 'numeric', (1, 2)), Block('z', 'numeric', (3,)),
          Block('a', 'categorical', tuple(range(4, 12))),
          Block('b', 'categorical', tuple(range(12, 22))),
          Block('c', 'categorical', tuple(range(22, 28)))]
SHARES = {'class_proportions': 0.01, 'sum_kernel': 0.3, 'product_kernel': 0.19,
          'marginals': 0.2, 'pairs': 0.3, 'selected_pairs': 0.1}
STEPS = 200


def _terms(redraws=20):
    terms = dphp_terms(BLOCKS, sum_order=20, sum_sigma2=0.05, product_order=3,
                       product_sigma2=0.05, product_columns=3, product_redraws=redraws,
                       max_product_features=8192, product_weight=0.1, product_schedule='cycle',
                       steps=STEPS, rng=torch.Generator().manual_seed(0))
    return terms + shared_terms(BLOCKS, 0.01, 1.0, 0.1, 4.0, 10**6)


def _plan(n, epsilon=1.0, max_ratio=5.0, terms=None):
    accountant = PrivacyAccountant(epsilon, 1e-5)
    kept, selects, plan, sigmas, entries = choose_releases(
        terms or _terms(), SHARES, True, n, 3, accountant.calibrate, max_ratio,
        PairSelection(None, 1.0, True), STEPS)
    return accountant, kept, selects, plan, sigmas, {e.group: e for e in entries}


def _key(terms):
    return [(t.group, t.feature_map.describe(), t.period, t.phase, t.first_step, t.last_step)
            for t in terms]


def _precision(plan, sigmas):
    return sum(count / sigmas[group] ** 2 for group, (_, count) in plan.items())


def test_tiny_n_drops_the_noise_dominated_terms_and_moves_their_budget():
    accountant, kept, selects, plan, sigmas, entries = _plan(50)
    groups = {t.group for t in kept}
    assert not selects and 'product_kernel' not in groups
    assert entries['product_kernel'].decision == 'dropped'
    assert entries['pairs'].decision == 'narrowed'  # a narrower map exists (not dropped)
    assert entries['selected_pairs'].decision == 'dropped'
    # the method's own kernel always stays (narrowed to a lower order, its noise above its bound)
    assert entries['sum_kernel'].decision in ('kept', 'narrowed')
    assert entries['sum_kernel'].releases == 1
    # the kept terms are less noisy than under the fixed plan, at the same total spend
    _, _, _, fixed_plan, fixed_sigmas, _ = _plan(50, max_ratio=None)
    assert sigmas['sum_kernel'] < fixed_sigmas['sum_kernel']
    total = accountant.total_precision()
    assert math.isclose(_precision(plan, sigmas), total, rel_tol=1e-9)
    assert math.isclose(_precision(fixed_plan, fixed_sigmas), total, rel_tol=1e-9)
    for entry in entries.values():  # every kept term is within the threshold, but the core
        if entry.decision != 'dropped' and entry.group not in ('sum_kernel', 'class_proportions'):
            assert entry.ratio <= 5.0


def test_large_n_keeps_the_fixed_plan():
    _, kept, selects, plan, sigmas, entries = _plan(10**6, epsilon=0.3)
    _, fixed, fixed_selects, fixed_plan, fixed_sigmas, _ = _plan(10**6, epsilon=0.3,
                                                                max_ratio=None)
    assert _key(kept) == _key(fixed) and selects and fixed_selects
    assert plan == fixed_plan and sigmas == fixed_sigmas
    assert all(e.decision == 'kept' for e in entries.values())
    assert weak_signal(list(entries.values())) is None


def test_the_fixed_plan_keeps_every_term_even_at_tiny_n():
    _, kept, selects, _, _, entries = _plan(50, max_ratio=None)
    assert _key(kept) == _key(_terms()) and selects
    assert all(e.decision == 'kept' for e in entries.values())
    assert weak_signal(list(entries.values())) is not None  # but the numbers say it is noise


def _entry(group, ratio, decision='kept'):
    return PlanEntry(group, decision, int(decision != 'dropped'), 1, 10, 0.1, 1.0, ratio, 1.0,
                     ratio, '')


def _warning(entries):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        warn_if_weak(entries, 215, 0.3)
    return [str(w.message) for w in caught if issubclass(w.category, NoiseDominatedWarning)]


def test_the_warning_says_when_every_release_is_mostly_noise():
    # the main kernel above its bound in both; only the second plan has no kept release at or
    # below it (the dropped term and the class proportions do not count)
    proportions = _entry('class_proportions', 0.5)
    some_signal = [_entry('sum_kernel', 4.4), _entry('one_way', 0.8), proportions]
    all_noise = [_entry('sum_kernel', 4.4), _entry('pairs', 4.9), _entry('one_way', 2.2),
                 _entry('product_kernel', 191.0, 'dropped'), proportions]
    (partly,), (wholly,) = _warning(some_signal), _warning(all_noise)
    assert 'n=215' in partly and 'Every release' not in partly
    assert "Every release of the plan is mostly noise (the least noisy, 'one_way', at 2.2" \
        in wholly and 'drawn independently and uniformly from the declared domain' in wholly
    assert _warning([_entry('sum_kernel', 0.9), _entry('pairs', 4.9)]) == []


def test_product_redraws_are_narrowed_and_rescheduled():
    # find, on public numbers only, an n where the product redraws are narrowed, not dropped
    for n in (400, 800, 1600, 3200, 6400):
        _, kept, _, plan, sigmas, entries = _plan(n)
        if entries['product_kernel'].decision == 'narrowed':
            break
    else:
        pytest.fail('no n narrowed the product redraws')
    products = [t for t in kept if t.group == 'product_kernel']
    assert 1 <= len(products) < 20 == entries['product_kernel'].planned
    assert plan['product_kernel'][1] == len(products)
    assert [(t.period, t.phase) for t in products] == [(len(products), r)
                                                       for r in range(len(products))]
    assert entries['product_kernel'].ratio <= 5.0


def test_the_plan_only_reads_public_numbers():
    # the plan is a function of (n, epsilon, layout, options): no data goes in
    a = _plan(300)[-1]
    b = _plan(300)[-1]
    assert {g: (e.decision, e.ratio) for g, e in a.items()} == \
        {g: (e.decision, e.ratio) for g, e in b.items()}


@pytest.mark.parametrize('cls', [DPHPSynthesizer, DPMERFSynthesizer], ids=lambda c: c.__name__)
def test_a_50_row_fit_warns_before_any_release(cls):
    data = make_table(50)
    synth = build(cls, target_column='label', plan='auto')
    with recording() as recorder, warnings.catch_warnings():
        warnings.simplefilter('ignore')
        warnings.simplefilter('error', NoiseDominatedWarning)
        with pytest.raises(NoiseDominatedWarning) as caught:
            synth.fit({'t': data})
    assert recorder.releases == []  # nothing was spent when it warned
    # raised as an error, it keeps its message (public numbers only, written here)
    assert 'n=50' in str(caught.value) and 'withheld' not in str(caught.value)


def test_a_50_row_fit_warns_then_finishes_with_the_plan_in_its_report():
    synth = build(DPHPSynthesizer, target_column='label', plan='auto')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        synth.fit({'t': make_table(50)})
    warned = [w for w in caught if issubclass(w.category, NoiseDominatedWarning)]
    assert len(warned) == 1 and 'n=50' in str(warned[0].message)
    report = synth.get_privacy_report()
    plan = {p['group']: p for p in report.plan}
    assert plan['product_kernel']['decision'] == 'dropped'
    assert plan['pairs']['decision'] == 'narrowed'
    assert plan['sum_kernel']['decision'] == 'kept'
    released = {r.name for r in report.releases}
    assert 'product_kernel' not in released and {'pairs', 'sum_kernel'} <= released
    assert {g for g, p in plan.items() if p['decision'] != 'dropped'} == released
    assert 'plan: product_kernel dropped' in str(report)
    assert 'plan: pairs narrowed' in str(report)
    assert '"plan"' in report.to_json()
    synth.sample(10)


def test_a_large_table_plan_does_not_warn():
    # 3,000 rows, epsilon 3: every planned release is kept and nothing warns
    synth = build(DPHPSynthesizer, target_column='label', plan='auto', epsilon=3.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        synth.fit({'t': make_table(3000)})
    assert not [w for w in caught if issubclass(w.category, NoiseDominatedWarning)]
    assert all(p['decision'] == 'kept' for p in synth.get_privacy_report().plan)


def test_plan_option_is_validated():
    from sdv.errors import SynthesizerInputError

    from sdv_dpkme import DPHPKernel
    with pytest.raises(SynthesizerInputError, match="plan must be 'auto' or 'fixed'"):
        DPHPKernel(plan='smart')
    with pytest.raises(SynthesizerInputError, match='max_noise_ratio'):
        DPHPKernel(max_noise_ratio=0)
    assert DPHPKernel().plan == 'auto'


def test_plan_releases_is_what_the_fixed_plan_calibrates():
    terms = _terms()
    fixed = kme_plan.plan_releases(terms, SHARES, True, ['selected_pairs'])
    assert _plan(50, max_ratio=None)[3] == fixed


def test_minibatch_mode_judges_its_single_releases_only():
    synth = build(DPMERFSynthesizer, target_column='label', plan='auto', releases='minibatch',
                  minibatch_size=32)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table(120)})
    report = synth.get_privacy_report()
    plan = {p['group']: p for p in report.plan}
    assert 'per training step' in plan['embedding']['reason']
    # 120 rows: the full map's noise is far above its signal, a narrower one is released
    assert plan['pairs']['decision'] == 'narrowed' and plan['pairs']['ratio'] <= 5.0
    released = {r.name for r in report.releases}
    assert {'pairs', 'embedding_minibatch'} <= released
    assert report.epsilon_calibrated == pytest.approx(1.0, rel=1e-3)
