"""The one-way map released pooled over the classes ('one_way', issue 42): norm bound and its
replace-one sensitivity, proven over extreme and garbage rows and tight."""

import itertools

import numpy as np
import pytest
import torch

from sdv_dpkme.engines import class_mean_embeddings
from sdv_dpkme.features import Block, FourierMarginalMap, OneWayMap, replace_sensitivity

BLOCKS = [Block('a', 'numeric', (0, 1)), Block('b', 'numeric', (2,)),
          Block('c', 'categorical', (3, 4, 5)), Block('d', 'categorical', (6, 7))]
WIDTH = 8


def _extreme_rows():
    rows = []
    for va, za, vb, c, d in itertools.product([0, 1, 0.5, 0.013], [0, 1], [0, 1, 0.5],
                                              range(3), range(2)):
        row = np.zeros(WIDTH)
        row[[0, 1, 2]] = [va, za, vb]
        row[3 + c] = 1
        row[6 + d] = 1
        rows.append(row)
    return np.array(rows)


def _pooled(fmap, x, labels, n_classes):
    """The pooled release's statistic: the joint class means of the pass summed over classes."""
    return class_mean_embeddings(x, labels, n_classes, [fmap])[0].sum(0)


def test_one_way_map_is_inside_the_unit_ball_and_its_sums_match_phi():
    fmap = OneWayMap(BLOCKS, 0.05)
    x = torch.tensor(_extreme_rows())
    phi = fmap(x)
    assert phi.shape == (len(x), fmap.dim)
    assert phi.norm(dim=1).max().item() <= 1 + 1e-9
    y = torch.nn.functional.one_hot(torch.arange(len(x)) % 3, 3).double()
    assert torch.allclose(fmap.class_sums(x, y), y.T @ phi, atol=1e-9)
    sums, sq = fmap.class_moments(x, y)
    assert torch.allclose(sums, y.T @ phi, atol=1e-9)
    assert torch.allclose(sq, y.T @ (phi * phi).sum(1), atol=1e-9)
    # its numeric part is the fine-scale marginal map's, scaled to the mean over all columns
    marginal = FourierMarginalMap(BLOCKS, 0.05)(x)
    assert torch.allclose(phi[:, -marginal.shape[1]:], marginal * np.sqrt(2 / 4), atol=1e-12)


def test_pooled_sensitivity_is_proven_over_garbage_rows_and_tight():
    fmap = OneWayMap(BLOCKS, 0.05)
    assert fmap.replace_bound == pytest.approx(np.sqrt((2 * 2 + 4 * 2) / 4))
    assert replace_sensitivity(fmap) == fmap.replace_bound
    assert OneWayMap(BLOCKS[2:], 0.05).replace_bound == pytest.approx(np.sqrt(2))
    x = _extreme_rows()
    n, n_classes = len(x), 3
    labels = np.arange(n) % n_classes
    garbage = [np.full(WIDTH, v) for v in (1e308, -1e308, -1.0, np.nan, np.inf, -np.inf, 0.0)]
    negative = x[0].copy()
    negative[3:6] = [-1.0, 0.0, 0.0]  # a one-hot block pointing away from every valid one
    garbage += [negative, x[-1], x[1]]
    for m in (fmap, OneWayMap(BLOCKS[2:], 0.05), OneWayMap(BLOCKS[:2], 0.01)):
        base = _pooled(m, x, labels, n_classes)
        for row, label, i in itertools.product(garbage, range(n_classes), (0, n - 1)):
            x2, l2 = x.copy(), labels.copy()
            x2[i], l2[i] = row, label
            moved = (_pooled(m, x2, l2, n_classes) - base).norm().item()
            assert moved <= m.replace_bound / n + 1e-12
    # tight for categorical columns: neighbours that differ in every category (other class too)
    cat = OneWayMap(BLOCKS[2:], 0.05)
    rows = np.zeros((5, WIDTH))
    rows[:, [3, 6]] = 1
    moved = rows.copy()
    moved[0, [3, 6]], moved[0, [4, 7]] = 0, 1
    labels = np.array([0, 1, 0, 1, 0])
    other = labels.copy()
    other[0] = 1
    diff = _pooled(cat, moved, other, 2) - _pooled(cat, rows, labels, 2)
    assert diff.norm().item() == pytest.approx(np.sqrt(2) / 5, rel=1e-12)
