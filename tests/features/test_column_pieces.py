"""Issue 42 item 7: a training step reads column blocks of one split of its rows
(``features.columns.split_columns``), the selected pairs gather their sums from the pairs map's,
and a sorted batch's class rows are pieces of one split. Each gives the same values, and the same
gradients to rounding, as the slices and gathers it replaces."""

import math

import pytest
import torch

from sdv_dpkme.features import (
    Block,
    FourierKernelMap,
    FourierMarginalMap,
    OneWayMap,
    PairwiseKernelMap,
    ProductKernelMap,
    SumKernelMap,
)
from sdv_dpkme.features.columns import column_gather, column_slice, split_columns
from sdv_dpkme.features.pairwise import _row_blocks

# a nullable numeric, a categorical, a plain numeric, a non-consecutive categorical, and a
# column outside every block (the target's)
BLOCKS = [Block('a', 'numeric', (0, 1)), Block('b', 'categorical', (2, 3, 4)),
          Block('c', 'numeric', (5,)), Block('d', 'categorical', (6, 8)),
          Block('e', 'categorical', (9, 10, 11, 12))]
WIDTH = 14


def _rows(n=30, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(n, WIDTH, generator=gen, dtype=torch.float64)
    x[:, 1] = (x[:, 1] > 0.7).double()
    return x


def _maps():
    pairs = PairwiseKernelMap(BLOCKS, length_scale=0.2)
    return [SumKernelMap(BLOCKS, 6, 0.1), ProductKernelMap(BLOCKS[:3], 4, 0.2),
            FourierMarginalMap(BLOCKS, 0.05), OneWayMap(BLOCKS, 0.05), pairs,
            pairs.restricted([('a', 'b'), ('b', 'e'), ('c', 'd')]),
            FourierKernelMap(BLOCKS, 40, 0.3, generator=torch.Generator().manual_seed(2))]


def test_column_reads_inside_a_split_equal_the_slices_issue42():
    x = _rows()
    with split_columns(x, BLOCKS):
        for start, stop in [(0, 2), (0, 1), (1, 2), (2, 5), (3, 4), (6, 7), (8, 9), (9, 13),
                            (13, 14), (4, 7)]:  # the last spans a cut: read from x itself
            assert torch.equal(column_slice(x, start, stop), x[:, start:stop])
        assert torch.equal(column_gather(x, [0, 5, 6, 8, 13]), x[:, [0, 5, 6, 8, 13]])
        # a map whose columns are all nullable gathers none (was a torch.cat error in training)
        assert column_gather(x, []).shape == (len(x), 0)
    other = _rows(seed=1)  # a tensor that was not split reads as before
    with split_columns(x, BLOCKS):
        assert torch.equal(column_slice(other, 2, 5), other[:, 2:5])


@pytest.mark.parametrize('index', range(7))
def test_maps_inside_a_split_give_the_same_moments_and_gradients_issue42(index):
    fmap = _maps()[index]
    x = _rows().requires_grad_()
    labels = torch.tensor([0] * 12 + [1] * 18)
    y = torch.nn.functional.one_hot(labels, 2).double()
    weights = torch.randn(2, fmap.dim, generator=torch.Generator().manual_seed(4),
                          dtype=torch.float64)

    def loss():
        sums, sq = fmap.class_moments(x, y)
        return (sums * weights).sum() + sq.sum(), sums, sq

    plain, sums, sq = loss()
    (expected,) = torch.autograd.grad(plain, x)
    with split_columns(x, BLOCKS):
        split, sums_split, sq_split = loss()
        (grad,) = torch.autograd.grad(split, x)
    assert torch.equal(sums, sums_split) and torch.equal(sq, sq_split)
    torch.testing.assert_close(grad, expected, rtol=1e-12, atol=1e-12)


def test_restricted_sums_equal_the_joint_tables_issue42():
    fmap = PairwiseKernelMap(BLOCKS, length_scale=0.2)
    sub = fmap.restricted([('e', 'b'), ('a', 'c'), ('d', 'e')])
    x = _rows()
    y = torch.nn.functional.one_hot(torch.arange(30) % 3, 3).double()
    sums = fmap.class_sums(x, y)
    tables = fmap.joint_tables(sums, sub.pair_names()).values()
    reference = torch.cat([t.reshape(3, -1) for t in tables], 1) / math.sqrt(sub.n_pairs)
    assert torch.equal(fmap.restrict_sums(sums, sub), reference)
    torch.testing.assert_close(fmap.restrict_sums(sums, sub), sub.class_sums(x, y))
    stranger = PairwiseKernelMap(BLOCKS[:3], length_scale=0.3)
    with pytest.raises(ValueError, match='subset'):
        fmap.restrict_sums(sums, stranger)


def test_class_rows_are_pieces_only_for_runs_issue42():
    feats = torch.arange(20.0).reshape(10, 2)
    runs = {0: torch.arange(0, 4), 1: torch.arange(4, 10)}
    pieces = _row_blocks(feats, runs)
    assert all(torch.equal(pieces[c], feats[rows]) for c, rows in runs.items())
    assert _row_blocks(feats, {0: torch.tensor([0, 2, 3]), 1: torch.tensor([1])}) is None
    assert _row_blocks(feats, {0: torch.arange(0, 6), 1: torch.arange(4, 10)}) is None


def test_one_way_reuses_the_marginal_moments_within_a_step_issue42(monkeypatch):
    marginal, one_way = FourierMarginalMap(BLOCKS, 0.05), OneWayMap(BLOCKS, 0.05)
    x = _rows()
    y = torch.nn.functional.one_hot(torch.arange(30) % 2, 2).double()
    expected = one_way.class_moments(x, y)
    calls = []
    original = FourierMarginalMap._class_parts
    monkeypatch.setattr(FourierMarginalMap, '_class_parts',
                        lambda self, *a: calls.append(1) or original(self, *a))
    with split_columns(x, BLOCKS):
        first = marginal.class_moments(x, y)
        got = one_way.class_moments(x, y)
        other_y = y.clone()  # other labels: computed again
        marginal.class_moments(x, other_y)
    assert len(calls) == 2
    assert all(torch.equal(a, b) for a, b in zip(got, expected))
    assert all(torch.equal(a, b) for a, b in zip(first, marginal.class_moments(x, y)))
    other = FourierMarginalMap(BLOCKS, 0.1)  # another kernel: its own moments
    with split_columns(x, BLOCKS):
        marginal.class_moments(x, y)
        assert not torch.equal(other.class_moments(x, y)[0][:, :4],
                               marginal.class_moments(x, y)[0][:, :4])
