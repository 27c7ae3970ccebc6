"""Issue 42: the noise-aware plan narrows a term (a narrower map, a lower order) before it drops
it, from public facts only, and says so in the privacy report."""

import math
import warnings

from sdv_dpkme import DPHPSynthesizer
from sdv_dpkme.engines.noise_plan import MIN_CORE_ORDER
from sdv_dpkme.features import PairwiseKernelMap, SumKernelMap, replace_sensitivity
from tests.conftest import make_table
from tests.engines.test_noise_plan import _plan, _precision, _terms
from tests.synthesizers.test_contract import build


def _pairs(terms):
    return next(t.feature_map for t in terms if isinstance(t.feature_map, PairwiseKernelMap))


def test_pairs_are_narrowed_where_the_full_map_is_noise_dominated():
    full = _pairs(_terms())
    for n in (50, 300):  # the full map's noise is far above its bound at both sizes
        accountant, kept, _, plan, sigmas, entries = _plan(n)
        entry = entries['pairs']
        assert entry.decision == 'narrowed' and entry.releases == 1
        fmap = _pairs(kept)
        assert fmap.n_frequencies < full.n_frequencies or fmap.n_pairs < full.n_pairs
        assert fmap.dim < full.dim and entry.dimension == fmap.dim * 3
        # the entry's numbers are the released map's, and within the threshold
        assert math.isclose(entry.sensitivity, replace_sensitivity(fmap) / n)
        assert math.isclose(entry.expected_noise_norm,
                            sigmas['pairs'] * entry.sensitivity * math.sqrt(entry.dimension))
        assert entry.ratio <= 5.0
        assert 'max_noise_ratio=5' in entry.reason and f'{fmap.dim:,} features' in entry.reason
        # the total spend is unchanged
        assert math.isclose(_precision(plan, sigmas), accountant.total_precision(), rel_tol=1e-9)
    # at 300 rows fewer frequencies suffice: every pair stays, so the selected pairs can too
    _, kept, selects, _, _, entries = _plan(300)
    assert selects and entries['selected_pairs'].decision == 'kept'
    assert _pairs(kept).n_pairs == full.n_pairs and 'Fourier frequencies' in \
        entries['pairs'].reason


def test_selected_pairs_go_with_the_categorical_pairs_narrowed_out():
    _, kept, selects, _, _, entries = _plan(50)
    fmap = _pairs(kept)
    categorical = [b.name for b in fmap.blocks if b.kind == 'categorical']
    missing = {(a, b) for i, a in enumerate(categorical) for b in categorical[i + 1:]} - \
        {tuple(p) for p in fmap.pair_names()}
    assert missing  # at 50 rows whole pairs go, the widest (categorical) first
    # candidates of the selection were narrowed out: it is not released
    assert not selects and entries['selected_pairs'].decision == 'dropped'
    assert 'narrowed' in entries['selected_pairs'].reason


def test_the_core_sum_kernel_is_narrowed_to_a_lower_order_not_dropped():
    terms = _terms()
    order = terms[0].feature_map.order
    _, kept, _, _, _, entries = _plan(50, terms=terms)
    core = kept[0].feature_map
    assert isinstance(core, SumKernelMap) and kept[0].group == 'sum_kernel'
    entry = entries['sum_kernel']
    assert entry.decision == 'narrowed' and entry.releases == 1
    assert MIN_CORE_ORDER <= core.order < order
    assert entry.dimension == core.dim * 3
    # the highest order within the bound, or the floor order
    assert entry.ratio <= 1.0 or core.order == MIN_CORE_ORDER
    assert f'Hermite order {core.order}' in entry.reason
    # a fixed plan keeps the order the options ask for
    _, fixed, _, _, _, _ = _plan(50, terms=_terms(), max_ratio=None)
    assert fixed[0].feature_map.order == order


def test_a_215_row_fit_keeps_a_narrowed_pair_release_in_its_report():
    synth = build(DPHPSynthesizer, target_column='label', plan='auto')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table(215)})
    report = synth.get_privacy_report()
    plan = {p['group']: p for p in report.plan}
    assert plan['pairs']['decision'] == 'narrowed'
    assert plan['pairs']['ratio'] <= 5.0
    release = next(r for r in report.releases if r.name == 'pairs')
    assert math.isclose(release.sensitivity, plan['pairs']['sensitivity'])
    assert 'plan: pairs narrowed' in str(report)
    assert '"narrowed"' in report.to_json()
    synth.sample(10)
