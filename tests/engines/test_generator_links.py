"""Linked categorical heads: each head sees the categories drawn before it (issue 16)."""

import numpy as np
import pytest
import torch

from sdv_dpkme.engines.generator import LINK_SCALE, TabularGenerator, linked_blocks
from sdv_dpkme.features import Block

# two 4-category columns (+ their out-of-domain buckets), a numeric one, then a 2-category one
BLOCKS = [Block('a', 'categorical', (0, 1, 2, 3, 4)), Block('x', 'numeric', (5,)),
          Block('b', 'categorical', (6, 7, 8, 9, 10)), Block('c', 'categorical', (11, 12, 13))]
PERMUTATION = [2, 0, 3, 1]  # a = i  ->  b = PERMUTATION[i]


def generator(links=('a', 'b', 'c'), bias=None, seed=0):
    torch.manual_seed(seed)
    gen = TabularGenerator(BLOCKS, n_columns=14, n_classes=1, latent_dim=3, hidden=(8,),
                           category_links=links)
    if bias is not None:  # the MLP's output ignores its input: the logits are ``bias``
        with torch.no_grad():
            gen.net[-1].weight.zero_()
            gen.net[-1].bias[:] = torch.as_tensor(bias, dtype=torch.float32)
    return gen


def one_to_one(gen, strength=2.0):
    """Set b's link so that a = i makes b = PERMUTATION[i] (logit gap strength * LINK_SCALE)."""
    with torch.no_grad():
        link = gen.links[1]  # b's weights on a's 5 buckets
        link.zero_()
        for i, j in enumerate(PERMUTATION):
            link[j, i] = strength


def joint(rows):
    a, b = rows[:, 0:5].argmax(1), rows[:, 6:11].argmax(1)
    table = np.zeros((5, 5))
    np.add.at(table, (a, b), 1)
    return table / len(rows)


def test_only_linked_heads_see_the_heads_before_them():
    gen = generator(links=('a', 'c'))
    # head order a, b, c: b is not linked, so c sees a only, and b sees nothing
    assert gen._parents == [[], [], [0]]
    assert [tuple(p.shape) for p in gen.links] == [(5, 0), (5, 0), (3, 5)]
    assert not generator(links=())._linked
    assert not generator(links=('b',))._linked  # one linked head has no one to see


def test_sampling_carries_a_one_to_one_map_and_unlinked_heads_do_not():
    labels = torch.zeros(4000, dtype=torch.long)
    bias = [0.0] * 14
    bias[4] = bias[10] = -30.0  # out-of-domain buckets
    linked = generator(bias=bias)
    one_to_one(linked)
    rows = linked.sample(labels, torch.Generator().manual_seed(1))
    table = joint(rows)
    diagonal = sum(table[i, j] for i, j in enumerate(PERMUTATION))
    assert diagonal > 0.99
    np.testing.assert_allclose(table.sum(1)[:4], 0.25, atol=0.03)  # a's own distribution kept
    plain = joint(generator(links=(), bias=bias).sample(labels, torch.Generator().manual_seed(1)))
    assert sum(plain[i, j] for i, j in enumerate(PERMUTATION)) < 0.35  # independent: ~1/4


def test_training_rows_are_draws_with_the_sampled_joint_and_softmax_gradients():
    bias = np.linspace(-1, 1, 14).tolist()
    bias[4] = bias[10] = -30.0
    gen = generator(bias=bias)
    one_to_one(gen, strength=0.15)  # a partial map: the joint is neither diagonal nor independent
    n = 40_000
    sampled = joint(gen.sample(torch.zeros(n, dtype=torch.long), torch.Generator().manual_seed(3)))
    z = torch.randn(n, 3, generator=torch.Generator().manual_seed(4))
    draws = gen._category_draws(n, torch.Generator().manual_seed(5), 'cpu')
    rows = gen(z, torch.ones(n, 1), None, draws)
    hard = rows.detach().numpy()
    for cols in ((0, 5), (6, 11), (11, 14)):
        block = hard[:, cols[0]:cols[1]]
        np.testing.assert_allclose(block.sum(1), 1.0, atol=1e-6)
        assert set(np.unique(np.round(block, 5))) <= {0.0, 1.0}
    np.testing.assert_allclose(joint(hard), sampled, atol=0.012)
    # straight-through: the draws pass the softmax's gradient to the MLP and to the links
    rows[:, 7].sum().backward()
    assert gen.net[-1].bias.grad[6:11].abs().sum() > 0
    assert gen.links[1].grad.abs().sum() > 0


def test_without_draws_the_heads_are_probabilities():
    gen = generator(bias=[0.5] * 14)
    with torch.no_grad():
        rows = gen(torch.zeros(3, 3), torch.ones(3, 1)).numpy()
    assert 0 < rows[0, 0] < 1 and rows[0, 0:5].sum() == pytest.approx(1.0)


def test_zero_links_sample_exactly_as_unlinked_heads():
    labels = torch.zeros(700, dtype=torch.long)
    a = generator(seed=7).sample(labels, torch.Generator().manual_seed(2))
    b = generator(links=(), seed=7).sample(labels, torch.Generator().manual_seed(2))
    np.testing.assert_array_equal(a, b)


def test_generators_pickled_before_links_sample_as_before():
    old = generator(links=(), seed=8)
    del old._modules['links']  # a model saved before the option
    del old._parents
    new = generator(links=(), seed=8)
    labels = torch.zeros(300, dtype=torch.long)
    np.testing.assert_array_equal(old.sample(labels, torch.Generator().manual_seed(1)),
                                  new.sample(labels, torch.Generator().manual_seed(1)))
    with torch.no_grad():
        old(torch.zeros(2, 3), torch.ones(2, 1))


def test_linked_blocks_follow_public_widths_and_caps():
    blocks = [Block('x', 'numeric', (0,)), Block('small', 'categorical', tuple(range(1, 4))),
              Block('mid', 'categorical', tuple(range(4, 14))),
              Block('wide', 'categorical', tuple(range(14, 214)))]
    assert linked_blocks(blocks, max_width=512, max_parameters=10**6) == ('small', 'mid', 'wide')
    assert linked_blocks(blocks, max_width=100, max_parameters=10**6) == ('small', 'mid')
    # 3 * 10 + 3 * 200 + 10 * 200 weights > 1,000: the widest goes first
    assert linked_blocks(blocks, max_width=512, max_parameters=1000) == ('small', 'mid')
    assert linked_blocks(blocks[:2], max_width=512, max_parameters=10**6) == ()
    assert LINK_SCALE > 1
