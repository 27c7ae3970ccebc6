"""Choosing the linked heads from the released pair tables (issue 16)."""

import numpy as np
import pytest
import torch

from sdv_dpkme.engines.generator import TabularGenerator
from sdv_dpkme.engines.link_structure import choose_parents, pair_scores
from sdv_dpkme.features import Block, PairwiseKernelMap

# a (4 categories) and b = a one-to-one; c (3) independent of both; x numeric; last bucket of
# each categorical block is the out-of-domain one
BLOCKS = [Block('a', 'categorical', (0, 1, 2, 3, 4)), Block('x', 'numeric', (5,)),
          Block('c', 'categorical', (6, 7, 8, 9)), Block('b', 'categorical', (10, 11, 12, 13, 14))]
NAMES = ['a', 'c', 'b']


def table(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    c = rng.integers(0, 3, n)
    x = np.zeros((n, 15))
    x[np.arange(n), a] = 1
    x[:, 5] = rng.uniform(size=n)
    x[np.arange(n), 6 + c] = 1
    x[np.arange(n), 10 + (3 - a)] = 1  # b = 3 - a
    return torch.as_tensor(x)


def released(x, labels, n_classes, noise_std=0.0, seed=1):
    """Class-conditional 'pairs' means, plus Gaussian noise of ``noise_std`` per cell (in
    probability units), as the release gives them."""
    fmap = PairwiseKernelMap(BLOCKS, 0.1)
    y = torch.nn.functional.one_hot(torch.as_tensor(labels), n_classes).double()
    means = fmap.class_sums(x, y) / y.sum(0)[:, None]
    per_cell = torch.full((n_classes,), noise_std / fmap.n_pairs ** 0.5, dtype=torch.float64)
    gen = torch.Generator().manual_seed(seed)
    noisy = means + per_cell[:, None] * torch.randn(means.shape, generator=gen,
                                                    dtype=torch.float64)
    return fmap, noisy, per_cell * fmap.n_pairs ** 0.5


def test_joint_tables_are_the_class_joint_frequencies_in_either_order():
    x = table(2000)
    labels = np.arange(2000) % 2
    fmap, target, _ = released(x, labels, 2)
    tables = fmap.joint_tables(target, [('a', 'b'), ('b', 'a'), ('c', 'x')])
    ab = tables['a', 'b']
    assert ab.shape == (2, 5, 5)
    for c in range(2):
        rows = x[labels == c]
        expected = rows[:, 0:5].T @ rows[:, 10:15] / len(rows)
        torch.testing.assert_close(ab[c], expected)
    torch.testing.assert_close(tables['b', 'a'], ab.transpose(1, 2))
    assert tables['c', 'x'].shape[1] == 4  # c before x: c's rows


def test_the_one_to_one_pair_is_linked_and_the_independent_column_is_not():
    x = table()
    labels = np.arange(len(x)) % 2
    fmap, target, noise = released(x, labels, 2, noise_std=0.01)
    scores = pair_scores(fmap, target, noise, np.array([0.5, 0.5]), NAMES)
    by_pair = scores.set_index(['child', 'parent'])
    assert set(by_pair.index) == {('c', 'a'), ('b', 'a'), ('b', 'c')}  # parents come first
    # one-to-one over 4 uniform categories: ||P - r q^T||^2 = 4 (1/4 - 1/16)^2 + 12/256
    assert by_pair.loc[('b', 'a'), 'signal'] == pytest.approx(0.1875, abs=0.01)
    assert abs(by_pair.loc[('c', 'a'), 'signal']) < 0.003
    assert by_pair.loc[('c', 'a'), 'signal'] < by_pair.loc[('c', 'a'), 'noise']
    assert choose_parents(scores, NAMES, max_parents=2) == {'b': ('a',)}
    assert choose_parents(scores, NAMES, max_parents=2, min_ratio=10**6) == {}


def test_noise_that_swamps_the_tables_links_nothing():
    x = table()
    labels = np.zeros(len(x), dtype=int)
    fmap, target, noise = released(x, labels, 1, noise_std=0.3)
    scores = pair_scores(fmap, target, noise, np.array([1.0]), NAMES)
    assert choose_parents(scores, NAMES, max_parents=2) == {}


def test_classes_without_weight_do_not_count():
    x = table()
    labels = np.arange(len(x)) % 2
    fmap, target, noise = released(x, labels, 2, noise_std=0.01)
    target[1] = 1e6  # a class the generator does not train (released weight 0)
    scores = pair_scores(fmap, target, noise, np.array([1.0, 0.0]), NAMES)
    assert choose_parents(scores, NAMES, max_parents=1) == {'b': ('a',)}


def test_generator_parents_from_a_mapping_must_come_earlier():
    gen = TabularGenerator(BLOCKS, 15, 1, latent_dim=2, hidden=(4,),
                           category_links={'b': ('a',)})
    assert gen._parents == [[], [], [0]] and gen._linked
    assert tuple(gen.links[2].shape) == (5, 5)
    with pytest.raises(ValueError, match='drawn before'):
        TabularGenerator(BLOCKS, 15, 1, latent_dim=2, hidden=(4,), category_links={'a': ('b',)})
