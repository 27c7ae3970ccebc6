"""Calibration: grouped parents over a discrete number's values, the sum-kernel marginals and the
last marginal pass (issue 16)."""

import warnings

import numpy as np
import pytest
import torch

from sdv_dpkme import DPHPSynthesizer
from sdv_dpkme.engines import calibration, kme_training
from sdv_dpkme.engines.generator import CategoryGroups, Objective, TabularGenerator
from sdv_dpkme.features import PairwiseKernelMap, SumKernelMap
from sdv_dpkme.features.marginal import FourierMarginalMap
from sdv_dpkme.features.blocks import Block
from tests.conftest import make_table
from tests.engines.test_link_structure import BLOCKS, released, table
from tests.synthesizers.test_contract import build

# n: a discrete number over 40 values (+ out-of-domain); b: 1 mostly when n >= 20
WIDE = [Block('n', 'categorical', tuple(range(41))), Block('b', 'categorical', (41, 42, 43))]


def wide_table(rows=20000, seed=0):
    rng = np.random.default_rng(seed)
    n = rng.integers(0, 40, rows)
    b = np.where(rng.random(rows) < 0.8, n >= 20, n < 20).astype(int)
    x = np.zeros((rows, 44))
    x[np.arange(rows), n] = 1
    x[np.arange(rows), 41 + b] = 1
    return torch.as_tensor(x), n, b


def wide_release(x, cell_noise, seed=1):
    fmap = PairwiseKernelMap(WIDE, 0.1)
    y = torch.ones(len(x), 1, dtype=torch.float64)
    means = fmap.class_sums(x, y) / len(x)
    noisy = means + cell_noise * torch.randn(means.shape, generator=torch.Generator()
                                             .manual_seed(seed), dtype=torch.float64)
    return Objective('Pairs', fmap, noisy.float(), noise_std=torch.tensor([cell_noise]))


def test_value_groups_cut_consecutive_categories():
    groups = calibration.value_groups(41, 10)  # 40 values and the out-of-domain bucket
    assert groups[:40] == tuple(np.repeat(np.arange(10), 4))
    assert groups[40] == 9  # out-of-domain: never drawn, joins the last group
    uneven = calibration.value_groups(15, 4)
    assert list(np.bincount(uneven[:14])) == [4, 3, 4, 3]  # near-equal runs
    assert list(uneven[:14]) == sorted(uneven[:14])


@pytest.mark.slow
def test_an_ordered_head_is_a_parent_through_its_value_groups():
    x, n, b = wide_table()
    # per cell (80 of them, 0.005 each) the association is below the noise; per group it is not
    objective = wide_release(x, 0.012)

    def gap(gen):  # P(b = 1 | n >= 20) - P(b = 1 | n < 20): 0.6 in the table
        rows = gen.sample(torch.zeros(20000, dtype=torch.long), torch.Generator().manual_seed(2))
        n, b = rows[:, :40].argmax(1), rows[:, 41:43].argmax(1)
        return b[n >= 20].mean() - b[n < 20].mean()

    torch.manual_seed(0)
    plain = TabularGenerator(WIDE, 44, 1)
    assert calibration.calibrate(plain, [objective], np.array([1.0]),
                                 torch.Generator().manual_seed(0)) == []
    assert abs(gap(plain)) < 0.1
    torch.manual_seed(0)
    gen = TabularGenerator(WIDE, 44, 1)
    pairs = calibration.calibrate(gen, [objective], np.array([1.0]),
                                  torch.Generator().manual_seed(0), ordered=['n'])
    assert pairs == [('n', 'b')]
    parents = [parent for parent, _ in gen.calibration[1] if parent is not None]
    assert parents == [CategoryGroups(0, calibration.value_groups(41, 10))]
    assert gap(gen) > 0.25  # toward 0.6, by what stands out of the noise


def test_sampling_applies_group_offsets_by_the_group_drawn():
    torch.manual_seed(0)
    gen = TabularGenerator(WIDE, 44, 1)
    offsets = torch.zeros(10, 3)
    offsets[9, 1] = 15.0  # n in the last group (36..39) -> b = 1
    offsets[:9, 0] = 15.0
    gen.calibration = {1: [(CategoryGroups(0, calibration.value_groups(41, 10)), offsets)]}
    rows = gen.sample(torch.zeros(5000, dtype=torch.long), torch.Generator().manual_seed(0))
    n, b = rows[:, :40].argmax(1), rows[:, 41:43].argmax(1)
    assert (b[n >= 36] == 1).all() and (b[n < 36] == 0).all()


def test_marginals_pool_the_sum_kernel_release_with_the_pair_tables():
    x = table()
    labels = np.arange(len(x)) % 2
    fmap, target, cell_noise = released(x, labels, 2, 0.0)
    sums = SumKernelMap(BLOCKS, 3, 0.05)
    y = torch.nn.functional.one_hot(torch.as_tensor(labels), 2).double()
    sum_target = sums.class_sums(x, y, project=False) / y.sum(0)[:, None]
    scale = len(BLOCKS) ** 0.5  # a block is its one-hot mean / sqrt(number of blocks)
    objective = Objective('Sum kernel', sums, sum_target.float(),
                          noise_std=torch.full((2,), 0.004 / scale))
    marginals = calibration.released_marginals([(fmap, target, cell_noise + 0.01)],
                                               ['a', 'b', 'c'], [objective])
    freq, noise = marginals['a']
    for c in (0, 1):
        torch.testing.assert_close(freq[c], x[labels == c][:, 0:5].mean(0), atol=1e-6, rtol=0)
    pairs_only = calibration.released_marginals([(fmap, target, cell_noise + 0.01)],
                                                ['a', 'b', 'c'])
    expected = (1 / 0.004 ** 2 + 1 / pairs_only['a'][1][0, 0] ** 2) ** -0.5
    torch.testing.assert_close(noise[:, 0], torch.full((2,), float(expected),
                                                       dtype=torch.float64))
    assert float(expected) < 0.004  # the pair tables still add precision


def test_newton_steps_reach_a_marginal_that_certain_rows_hold_back():
    # 90% of rows are certain of category 0; the target asks for 40% of category 1
    probs = np.concatenate([np.tile([[1 - 1e-9], [1e-9]], 900),
                            np.tile([[0.5], [0.5]], 100)], axis=1)
    target = np.array([0.6, 0.4])
    logits = np.log(probs)

    def marginal(shift):
        p = np.exp(logits + shift[:, None])
        return (p / p.sum(0)).mean(1)

    shift = np.zeros(2)
    for _ in range(8):
        p = np.exp(logits + shift[:, None])
        shift = shift + calibration._newton_step(p / p.sum(0), target)
    assert np.abs(marginal(shift) - target).max() < 1e-3
    multiplicative = np.zeros(2)
    for _ in range(8):
        multiplicative += np.log(target / marginal(multiplicative))
    assert np.abs(marginal(multiplicative) - target).max() > 0.01  # why Newton: 8 were not enough


def test_sampling_adjusts_a_head_before_drawing_it():
    torch.manual_seed(0)
    gen = TabularGenerator(WIDE, 44, 1)
    target = np.array([0.1, 0.9])
    seen = []

    def adjust(probs):
        seen.append(probs.mean(1))
        return calibration._newton_step(probs, target)

    rows = gen.sample(torch.zeros(20000, dtype=torch.long), torch.Generator().manual_seed(0),
                      adjust={1: adjust})
    assert len(seen) > 1 and abs(seen[0][1] - 0.9) > 0.2  # it started far off
    assert abs(rows[:, 42].mean() - 0.9) < 0.01


def test_the_last_pass_meets_every_marginal_target():
    x, labels = table(6000), np.arange(6000) % 2
    fmap, target, cell_noise = released(x, labels, 2, 0.0)
    objective = Objective('Pairs', fmap, target.float(), noise_std=cell_noise / fmap.n_pairs ** 0.5)
    torch.manual_seed(0)
    gen = TabularGenerator(BLOCKS, 15, 2)
    calibration.calibrate(gen, [objective], np.array([0.5, 0.5]), torch.Generator().manual_seed(1),
                          rounds=1)
    rows = gen.sample(torch.arange(40000) % 2, torch.Generator().manual_seed(4))
    for cols in (slice(0, 4), slice(6, 9), slice(10, 14)):
        real = x[:, cols].double().mean(0)
        assert float((torch.from_numpy(rows[:, cols]).double().mean(0) - real).abs().sum()) < 0.02


@pytest.mark.parametrize('integer', [True, False])
def test_discrete_numbers_are_the_ordered_heads(monkeypatch, integer):
    seen = {}

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return []

    monkeypatch.setattr(kme_training, 'calibrate', spy)
    synth = build(DPHPSynthesizer, domain={'columns': {'age': {'integer': integer}}},
                  calibration_rows='auto')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    # age in [18, 90], integer: one-hot over its 73 values, so its categories are ordered
    assert seen['ordered'] == (('age',) if integer else ())
    assert seen['rows'] == calibration.ROWS[0]  # 240 rows: the fewest generated rows per round


def test_calibration_rows_set_in_training_reach_every_calibration_round(monkeypatch):
    seen = {}

    def spy(name):
        def record(*args, **kwargs):
            seen[name] = kwargs.get('rows', args[4] if len(args) > 4 else None)
            return []
        return record

    monkeypatch.setattr(kme_training, 'calibrate', spy('pairs'))
    monkeypatch.setattr(kme_training, 'calibrate_values', spy('values'))
    synth = build(DPHPSynthesizer, calibration_rows=700)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    assert seen == {'pairs': 700, 'values': 700}
    assert synth.get_parameters()['training'].calibration_rows == 700


def test_generated_rows_follow_the_table_within_bounds():
    # as many as the table has, from a floor for small tables; the same as before from 30,000
    assert [calibration.generated_rows(n) for n in (10, 215, 12_000, 30_000, 30162, 199523)] == [
        5000, 5000, 12_000, 30_000, 30162, 50000]


def numeric_generator():
    torch.manual_seed(0)
    return TabularGenerator([Block('v', 'numeric', (0,)), Block('c', 'categorical', (1, 2, 3))],
                            4, 1)


def marginal_release(values, noise):
    fmap = FourierMarginalMap([Block('v', 'numeric', (0,))])
    x = torch.as_tensor(values, dtype=torch.float64)[:, None]
    means = fmap(x).mean(0, keepdim=True)
    noisy = means + noise * torch.randn(means.shape, generator=torch.Generator().manual_seed(3),
                                        dtype=torch.float64)
    return Objective('Marginals', fmap, noisy.float(), noise_std=torch.tensor([noise]))


def ks(a, b):
    grid = np.linspace(0.05, 1, 951)  # the release resolves about 0.02 (its kernel length)
    return np.abs(np.searchsorted(np.sort(a), grid, 'right') / len(a)
                  - np.searchsorted(np.sort(b), grid, 'right') / len(b)).max()


def test_value_maps_move_a_numeric_column_to_its_released_distribution():
    rng = np.random.default_rng(0)
    # a spike at 0 (70%) and a bump at 0.7: a zero-inflated money column on a log scale
    real = np.where(rng.random(20000) < 0.7, 0.0, rng.normal(0.7, 0.03, 20000).clip(0, 1))
    gen = numeric_generator()
    before = gen.sample(torch.zeros(20000, dtype=torch.long), torch.Generator().manual_seed(1))
    assert ks(before[:, 0], real) > 0.3
    names = calibration.calibrate_values(gen, [marginal_release(real, 1e-4)], np.array([1.0]),
                                         torch.Generator().manual_seed(2))
    assert names == ['v'] and list(gen.value_maps) == [0]
    after = gen.sample(torch.zeros(20000, dtype=torch.long), torch.Generator().manual_seed(1))
    assert ks(after[:, 0], real) < 0.05
    # ranks are kept: the map is monotone
    assert (np.diff(after[np.argsort(before[:, 0]), 0]) >= 0).all()
    assert after[:, 0].min() >= 0 and after[:, 0].max() <= 1


@pytest.mark.slow
def test_value_maps_barely_move_a_column_the_noise_cannot_tell_apart():
    gen = numeric_generator()
    rows = gen.sample(torch.zeros(50000, dtype=torch.long), torch.Generator().manual_seed(9))
    before = gen.sample(torch.zeros(20000, dtype=torch.long), torch.Generator().manual_seed(1))
    # a release of the generator's own distribution under large noise: what passes the
    # threshold is noise, and its excess moves the values little
    calibration.calibrate_values(gen, [marginal_release(rows[:, 0], 0.05)], np.array([1.0]),
                                 torch.Generator().manual_seed(2))
    after = gen.sample(torch.zeros(20000, dtype=torch.long), torch.Generator().manual_seed(1))
    assert ks(after[:, 0], before[:, 0]) < 0.02
    del gen.value_maps  # generators saved before value maps sample as before
    np.testing.assert_array_equal(
        gen.sample(torch.zeros(20000, dtype=torch.long), torch.Generator().manual_seed(1)),
        before)


def test_value_maps_move_a_nullable_column_s_present_values_to_their_release():
    # a nullable column (30% missing) whose present values sit in a sliver near the low edge,
    # as a salary under a loose public cap does; the null share is not the map's to move
    blocks = [Block('v', 'numeric', (0, 1)), Block('c', 'categorical', (2, 3, 4))]
    torch.manual_seed(0)
    gen = TabularGenerator(blocks, 5, 1)
    rng = np.random.default_rng(0)
    rows = 20000
    z = (rng.random(rows) < 0.3).astype(float)
    v = np.where(z > 0, 0.0, rng.uniform(0.02, 0.1, rows))
    fmap = FourierMarginalMap([blocks[0]])
    x = torch.as_tensor(np.stack([v, z], 1), dtype=torch.float64)
    means = fmap(x).mean(0, keepdim=True)
    release = Objective('Marginals', fmap, means.float(), noise_std=torch.tensor([1e-4]))
    before = gen.sample(torch.zeros(rows, dtype=torch.long), torch.Generator().manual_seed(1))
    present = v[z == 0]
    assert ks(before[before[:, 1] < 0.5, 0], present) > 0.5
    names = calibration.calibrate_values(gen, [release], np.array([1.0]),
                                         torch.Generator().manual_seed(2))
    assert names == ['v'] and list(gen.value_maps) == [0]
    after = gen.sample(torch.zeros(rows, dtype=torch.long), torch.Generator().manual_seed(1))
    kept = after[:, 1] < 0.5
    grid = np.linspace(0.0, 1.0, 1001)  # over the whole box: the sliver is the point
    gap = np.abs(np.searchsorted(np.sort(after[kept, 0]), grid, 'right') / kept.sum()
                 - np.searchsorted(np.sort(present), grid, 'right') / len(present)).max()
    assert gap < 0.1
    # the null draws are untouched: the same rows are missing before and after
    np.testing.assert_array_equal(after[:, 1], before[:, 1])
