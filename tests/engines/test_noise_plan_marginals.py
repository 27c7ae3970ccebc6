"""Issue 42: the plan narrows the Fourier-series marginals ('marginals', 'one_way') to a coarser
length scale before it drops them, from public facts only; the narrowed map keeps its
sensitivity, and every rebuild of it gets the same frequencies."""

import math
import pickle
import warnings

import numpy as np
import pytest
import torch

from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer
from sdv_dpkme.engines.kernel_terms import shared_terms
from sdv_dpkme.engines.noise_plan import MAX_MARGINAL_LENGTH, NARROWED_RATIO, coarser_length
from sdv_dpkme.features import FourierMarginalMap, OneWayMap, replace_sensitivity
from sdv_dpkme.features.marginal import FourierSeries, default_frequencies
from tests.conftest import make_table
from sdv_dpkme.engines.kme import PairSelection
from sdv_dpkme.engines.noise_plan import choose_releases
from sdv_dpkme.privacy import PrivacyAccountant
from tests.engines.test_noise_plan import BLOCKS, SHARES, STEPS, _plan, _precision, _terms
from tests.features.neighbours import assert_replace_one_moves_at_most_two_over_n
from tests.synthesizers.test_contract import build


def _map(terms, group):
    return next(t.feature_map for t in terms if t.group == group)


def _extreme_rows(n=40, seed=0):
    """Rows of the test layout at the box's corners and edges (null flags 0 / 1)."""
    gen = np.random.default_rng(seed)
    x = np.zeros((n, 28))
    x[:, [0, 1, 3]] = gen.choice([0.0, 1.0, 0.5, 1e-3, 1 - 1e-3], size=(n, 3))
    x[:, 2] = gen.integers(0, 2, n)
    for lo, width in ((4, 8), (12, 10), (22, 6)):
        x[np.arange(n), lo + gen.integers(0, width, n)] = 1
    return x


@pytest.mark.parametrize('frequencies', [1, 2, 7, 14, 15, 37, 100, 136])
def test_a_coarser_length_rebuilds_to_at_most_the_frequencies_asked(frequencies):
    length = coarser_length(frequencies)
    assert default_frequencies(length) <= frequencies
    assert default_frequencies(length * 0.99) > default_frequencies(length) - 2  # the finest
    assert float(f'{length:.3g}') == length  # shown exactly in the report


@pytest.mark.parametrize('n', [50, 100])
def test_marginals_are_narrowed_to_a_coarser_length_not_dropped(n):
    full = _map(_terms(), 'marginals')
    accountant, kept, _, plan, sigmas, entries = _plan(n)
    entry = entries['marginals']
    assert entry.decision == 'narrowed' and entry.releases == 1
    fmap = _map(kept, 'marginals')
    assert isinstance(fmap, FourierMarginalMap)
    assert full.length_scale < fmap.length_scale <= MAX_MARGINAL_LENGTH
    assert fmap.n_frequencies == default_frequencies(fmap.length_scale) < full.n_frequencies
    assert entry.dimension == fmap.dim * 3 and entry.ratio <= 5.0
    # the finest length at NARROWED_RATIO: one frequency more would be above it
    finer = FourierMarginalMap(fmap.blocks, fmap.length_scale,
                               fmap.n_frequencies + 1)
    assert fmap.n_frequencies == default_frequencies(MAX_MARGINAL_LENGTH) or (
        entry.ratio <= NARROWED_RATIO
        and entry.ratio * math.sqrt(finer.dim / fmap.dim) > NARROWED_RATIO)
    assert f'length {fmap.length_scale:g}' in entry.reason
    assert f'{fmap.n_frequencies} of {full.n_frequencies} Fourier' in entry.reason
    # the sensitivity of the release is the full map's, and the spend is unchanged
    assert math.isclose(entry.sensitivity, replace_sensitivity(full) / n)
    assert math.isclose(entry.expected_noise_norm,
                        sigmas['marginals'] * entry.sensitivity * math.sqrt(entry.dimension))
    assert math.isclose(_precision(plan, sigmas), accountant.total_precision(), rel_tol=1e-9)


def test_the_narrowed_marginal_map_moves_the_embedding_by_at_most_two_over_n():
    fmap = _map(_plan(50)[1], 'marginals')
    assert fmap.length_scale > 0.05
    x = _extreme_rows()
    phi = fmap(torch.as_tensor(x))
    assert phi.norm(dim=1).max().item() <= 1 + 1e-12
    neighbours = [(row, label) for row, label in zip(_extreme_rows(12, seed=1), [0, 1, 2] * 4)]
    neighbours += [(np.full(28, 1e6), 1), (np.full(28, -1e6), 0)]
    assert_replace_one_moves_at_most_two_over_n(fmap, x, 3, neighbours)


def _one_way_plan(n):
    terms = _terms() + shared_terms(BLOCKS, None, 1.0, None, 1.0, 10**6,
                                    one_way_length_scale=0.01)
    accountant = PrivacyAccountant(1.0, 1e-5)
    kept, _, _, _, entries = choose_releases(
        terms, {**SHARES, 'one_way': 0.2}, True, n, 3, accountant.calibrate, 5.0,
        PairSelection(None, 1.0, True), STEPS)
    return terms, kept, {e.group: e for e in entries}


def test_one_way_is_narrowed_on_its_numeric_part_and_keeps_its_pooled_sensitivity():
    for n in (15, 25, 40, 80, 160):  # find an n where 'one_way' is over the threshold
        terms, kept, entries = _one_way_plan(n)
        if entries['one_way'].decision == 'narrowed':
            break
    else:
        pytest.fail("no n narrowed 'one_way'")
    entry, fmap, full = entries['one_way'], _map(kept, 'one_way'), _map(terms, 'one_way')
    assert isinstance(fmap, OneWayMap) and fmap.categorical == full.categorical
    assert fmap.numeric.n_frequencies == default_frequencies(fmap.length_scale)
    assert fmap.numeric.n_frequencies < full.numeric.n_frequencies
    assert entry.dimension == fmap.dim and entry.ratio <= 5.0  # pooled: one row
    assert 'per class' not in entry.reason and f'length {fmap.length_scale:g}' in entry.reason
    assert replace_sensitivity(fmap) == pytest.approx(replace_sensitivity(full))
    x = _extreme_rows()
    labels = np.arange(len(x)) % 3
    tx = torch.as_tensor(x)

    def pooled(rows, classes):
        y = torch.nn.functional.one_hot(torch.as_tensor(classes), 3).double()
        return fmap.class_sums(torch.as_tensor(rows), y).sum(0)

    base = pooled(x, labels)
    for row in [*_extreme_rows(6, seed=2), np.full(28, 1e6), np.full(28, np.nan)]:
        x2, l2 = x.copy(), labels.copy()
        x2[0], l2[0] = row, 2
        assert (pooled(x2, l2) - base).norm().item() <= fmap.replace_bound + 1e-12
    assert torch.allclose(fmap.class_sums(tx, torch.ones(len(x), 1, dtype=torch.float64))[0],
                          fmap(tx).sum(0), atol=1e-9)


def test_marginals_are_dropped_only_when_even_the_coarsest_length_is_noise():
    _, kept, _, _, _, entries = _plan(8)
    entry = entries['marginals']
    assert entry.decision == 'dropped' and 'marginals' not in {t.group for t in kept}
    assert f'coarsest length {MAX_MARGINAL_LENGTH:g}' in entry.reason


def test_the_narrowed_series_is_rebuilt_alike_where_it_is_read_again():
    fmap = _map(_plan(100)[1], 'marginals')
    again = pickle.loads(pickle.dumps(fmap))
    assert again.n_frequencies == fmap.n_frequencies and again.dim == fmap.dim
    x = torch.as_tensor(_extreme_rows())
    assert torch.equal(again(x), fmap(x))
    # the class-share reader and the value calibration rebuild the series from the map
    series = FourierSeries(fmap.length_scale, fmap.n_frequencies)
    assert torch.equal(series._amp, fmap._series._amp)
    assert FourierMarginalMap(fmap.blocks, fmap.length_scale).n_frequencies == fmap.n_frequencies


@pytest.mark.parametrize('cls, n', [(DPHPSynthesizer, 60), (DPMERFSynthesizer, 150)],
                         ids=['DPHP', 'DPMERF'])
def test_a_small_fit_releases_the_narrowed_marginals_and_reports_why(cls, n):
    # one_way off: with 'auto' this two-class fit releases its marginals pooled instead
    # (tests/engines/test_one_way_fallback.py)
    synth = build(cls, target_column='label', plan='auto', one_way=False)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table(n)})
    report = synth.get_privacy_report()
    plan = {p['group']: p for p in report.plan}
    assert plan['marginals']['decision'] == 'narrowed', plan['marginals']
    release = next(r for r in report.releases if r.name == 'marginals')
    assert math.isclose(release.sensitivity, plan['marginals']['sensitivity'])
    assert 'plan: marginals narrowed' in str(report)
    assert 'coarser length' in report.to_json()
    assert len(synth.sample(10)['t']) == 10


def test_tiny_n_plans_report_the_selected_pairs_whose_candidates_were_narrowed_out():
    # at n <= 18 on this layout the narrowed 'pairs' map kept fewer than two categorical
    # columns, and the plan raised a KeyError instead of reporting the selected pairs
    for n in range(5, 40):
        entries = _plan(n)[-1]
        entry = entries['selected_pairs']
        assert entry.decision == 'dropped' or entries['pairs'].decision != 'dropped'
        assert "'pairs' release" in entry.reason or entry.decision == 'kept'


@pytest.mark.parametrize('n', [50, 100])
def test_a_narrowed_marginal_map_goes_down_to_where_its_noise_is_at_most_its_signal(n):
    # narrowed to just below max_noise_ratio (stop 49) the low frequencies, which carry a
    # column's shape, were still noise; the map now goes to NARROWED_RATIO or the coarsest
    full = _map(_terms(), 'marginals')
    _, kept, *_, entries = _plan(n)
    entry, fmap = entries['marginals'], _map(kept, 'marginals')
    coarsest = FourierMarginalMap(full.blocks, MAX_MARGINAL_LENGTH)
    assert fmap.n_frequencies == coarsest.n_frequencies == 6
    at_coarsest = entry.expected_noise_norm / entry.signal_bound
    assert at_coarsest > NARROWED_RATIO or fmap.length_scale < MAX_MARGINAL_LENGTH
    assert f'towards a ratio of {NARROWED_RATIO:g}' in entry.reason


def test_a_map_just_above_the_threshold_is_narrowed_only_as_far_as_its_noise_needs():
    # with a lower max_noise_ratio the map stops above the coarsest length once its noise is
    # at most NARROWED_RATIO x its signal bound
    for n in range(300, 5000, 100):
        _, kept, *_, entries = _plan(n, max_ratio=1.5)
        entry = entries['marginals']
        if entry.decision == 'narrowed' and \
                _map(kept, 'marginals').length_scale < MAX_MARGINAL_LENGTH:
            break
    else:
        pytest.fail('no n narrowed the marginals above the coarsest length')
    fmap = _map(kept, 'marginals')
    finer = FourierMarginalMap(fmap.blocks, fmap.length_scale, fmap.n_frequencies + 1)
    assert entry.ratio <= NARROWED_RATIO < entry.ratio * math.sqrt(finer.dim / fmap.dim)


@pytest.mark.parametrize('n', [300, 600, 1200])
def test_marginals_below_the_threshold_are_kept_whole(n):
    # a spiky column (a money column's zeros) nearly reaches the signal bound: kept at a ratio
    # below max_noise_ratio, the fine map keeps its shape (narrowing these did not help on Adult)
    full = _map(_terms(), 'marginals')
    _, kept, *_, entries = _plan(n)
    assert entries['marginals'].decision == 'kept' and entries['marginals'].ratio <= 5.0
    assert _map(kept, 'marginals').n_frequencies == full.n_frequencies
