"""Calibrating the trained generator's categorical heads to the released pair tables (issue 16)."""

import numpy as np
import pytest
import torch

from sdv_dpkme.engines import calibration
from sdv_dpkme.engines.generator import Objective, TabularGenerator
from tests.engines.test_link_structure import BLOCKS, released, table


def two_class_table(n=6000):
    """``table``'s rows (b = 3 - a, c independent) in two classes, and their labels."""
    return table(n), np.arange(n) % 2


def pair_objective(x, labels, noise_std):
    fmap, target, cell_noise = released(x, labels, 2, noise_std)
    return Objective('Pairs', fmap, target.float(), noise_std=cell_noise / fmap.n_pairs ** 0.5)


def generated_tv(generator, x, labels, rows=20000):
    """Total variation of the generated (a, b) table from the rows', per class."""
    out = []
    for c in (0, 1):
        s = torch.from_numpy(generator.sample(torch.full((rows,), c), torch.Generator()
                                              .manual_seed(5))).double()
        real = x[labels == c]
        gap = s[:, 0:5].T @ s[:, 10:15] / rows - real[:, 0:5].T @ real[:, 10:15] / len(real)
        out.append(float(gap.abs().sum() / 2))
    return np.array(out)


def untrained():
    torch.manual_seed(0)
    return TabularGenerator(BLOCKS, 15, 2)  # independent heads: b does not follow a


@pytest.mark.slow
def test_exact_tables_are_fitted():
    x, labels = two_class_table()
    gen = untrained()
    before = generated_tv(gen, x, labels)
    pairs = calibration.calibrate(gen, [pair_objective(x, labels, 0.0)], np.array([0.5, 0.5]),
                                  torch.Generator().manual_seed(1), rounds=12)
    assert ('a', 'b') in pairs
    assert (before > 0.6).all()
    assert (generated_tv(gen, x, labels) < 0.05).all()


@pytest.mark.slow
def test_a_table_below_its_noise_calibrates_no_pair():
    x, labels = two_class_table()
    gen = untrained()
    pairs = calibration.calibrate(gen, [pair_objective(x, labels, 0.5)], np.array([0.5, 0.5]),
                                  torch.Generator().manual_seed(1))
    assert pairs == []  # no pair's association stands out of the noise
    assert all(parent is None for v in gen.calibration.values() for parent, _ in v)


def test_moves_are_soft_thresholded_at_the_noise():
    target = torch.tensor([0.50, 0.30, 0.20])
    generated = torch.tensor([0.46, 0.20, 0.34])
    # noise std 0.05: only the third cell differs by more than 2 stds (0.1); it moves by the rest
    moved = calibration._moved(target, generated, torch.tensor(0.05), 0.0, 2.0)
    torch.testing.assert_close(moved, torch.tensor([0.46, 0.20, 0.30]), atol=1e-4, rtol=0)
    exact = calibration._moved(target, generated, torch.tensor(0.0), 0.0, 2.0)
    torch.testing.assert_close(exact, target, atol=1e-3, rtol=0)
    below = calibration._moved(torch.tensor([-0.3, 1.3]), generated[:2], torch.tensor(0.0),
                               0.0, 2.0)
    assert float(below.min()) == 0.0  # a noisy negative cell asks for nothing below 0
    step = calibration._log_step(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]), 0.01)
    assert float(step.abs().max()) == calibration.MAX_STEP


def test_raking_keeps_the_association_and_takes_the_margins():
    table = torch.tensor([[0.4, 0.1], [0.1, 0.4]])
    raked = calibration._rake(table, torch.tensor([0.5, 0.5]), torch.tensor([0.3, 0.7]))
    torch.testing.assert_close(raked.sum(0), torch.tensor([0.3, 0.7]))
    torch.testing.assert_close(raked.sum(1), torch.tensor([0.5, 0.5]), atol=1e-4, rtol=0)
    odds = lambda t: float(t[0, 0] * t[1, 1] / (t[0, 1] * t[1, 0]))  # noqa: E731
    assert odds(raked) == pytest.approx(odds(table))
    empty = calibration._rake(torch.tensor([[0.0, 0.0], [0.5, 0.5]]), torch.tensor([0.5, 0.5]),
                              torch.tensor([0.5, 0.5]))
    assert float(empty[0].sum()) == 0.0  # a parent row without mass stays without


def test_marginals_pool_every_pair_by_inverse_variance():
    x, labels = two_class_table()
    fmap, target, cell_noise = released(x, labels, 2, 0.0)
    marginals = calibration.released_marginals([(fmap, target, cell_noise + 0.01)],
                                               ['a', 'b', 'c'])
    for name, cols in (('a', slice(0, 5)), ('c', slice(6, 10)), ('b', slice(10, 15))):
        freq, noise = marginals[name]
        for c in (0, 1):
            torch.testing.assert_close(freq[c], x[labels == c][:, cols].mean(0))
        # two tables hold each column: a's row sums over c (4 cells) and b (5 cells)
        widths = {'a': (4, 5), 'c': (5, 5), 'b': (5, 4)}[name]
        expected = (sum(1 / (0.01 ** 2 * w) for w in widths)) ** -0.5
        torch.testing.assert_close(noise[:, 0], torch.full((2,), expected, dtype=torch.float64))


def test_sampling_applies_the_offsets_by_parent_in_every_class():
    gen = untrained()
    offsets = torch.zeros(5, 5)
    offsets[1, 2] = 15.0  # a = 1 -> b = 2
    gen.calibration = {2: [(0, offsets)]}  # head 2 (b) by head 0 (a)
    rows = gen.sample(torch.arange(4000) % 2, torch.Generator().manual_seed(0))
    a, b = rows[:, 0:5].argmax(1), rows[:, 10:15].argmax(1)
    assert (b[a == 1] == 2).all()  # both classes: the offsets are shared
    assert (b[a != 1] != 2).any()
    gen.calibration = {2: [(None, offsets[1])]}  # a marginal offset: every row
    rows = gen.sample(torch.arange(4000) % 2, torch.Generator().manual_seed(0))
    assert (rows[:, 12] == 1).all()
    gen.calibration = {}
    rows = gen.sample(torch.arange(4000) % 2, torch.Generator().manual_seed(0))
    assert not (rows[:, 12] == 1).all()


def test_generators_saved_before_calibration_still_sample():
    gen = untrained()
    reference = gen.sample(torch.arange(100) % 2, torch.Generator().manual_seed(3))
    gen.calibration = {}
    np.testing.assert_array_equal(gen.sample(torch.arange(100) % 2,
                                             torch.Generator().manual_seed(3)), reference)
    del gen.calibration
    np.testing.assert_array_equal(gen.sample(torch.arange(100) % 2,
                                             torch.Generator().manual_seed(3)), reference)


def test_sampling_reports_the_probabilities_it_draws_from():
    gen = untrained()
    probs = {0: None, 2: None}
    rows = gen.sample(torch.zeros(20000, dtype=torch.long), torch.Generator().manual_seed(0),
                      probs)
    assert sorted(probs) == [0, 2]  # the heads asked for, their public categories only
    assert tuple(probs[0].shape) == (20000, 4)
    assert tuple(probs[2].shape) == (20000, 4)
    torch.testing.assert_close(probs[2].sum(1), torch.ones(20000))
    drawn = torch.from_numpy(rows[:, 10:14]).mean(0)
    assert float((drawn - probs[2].mean(0)).abs().max()) < 0.02
    mean, variance = calibration._frequencies(probs[2])
    torch.testing.assert_close(mean, probs[2].mean(0))
    assert (variance < drawn * (1 - drawn) / 20000).all()  # below the draws' own variance
    by_a, _ = calibration._frequencies(probs[2], (torch.from_numpy(rows[:, 0:5].argmax(1)), 5))
    torch.testing.assert_close(by_a.sum(0), mean)
