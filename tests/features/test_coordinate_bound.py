"""``coordinate_bound``: no coordinate of a valid row's features exceeds it, for every map the
generator trains on. The training's noise weights (``objective_noise_weights``) measure a
release's noise per coordinate against it, so a bound below the true range would cut the
weight of a term whose noise sits inside its range."""

import itertools

import numpy as np
import pytest
import torch

from sdv_dpkme.features import (
    Block, FourierKernelMap, FourierMarginalMap, OneWayMap, PairwiseKernelMap, ProductKernelMap,
    SumKernelMap)

# a: nullable numeric, b: numeric, c: 3 categories, d: 2 categories, e: 5 categories
BLOCKS = [Block('a', 'numeric', (0, 1)), Block('b', 'numeric', (2,)),
          Block('c', 'categorical', (3, 4, 5)), Block('d', 'categorical', (6, 7)),
          Block('e', 'categorical', (8, 9, 10, 11, 12))]
WIDTH = 13


def _rows():
    """Every combination of box corners, the middle, null flags and categories, plus relaxed
    rows (fractional null flags, soft categories) as the generator emits while training."""
    rows = []
    for va, za, vb, c, d, e in itertools.product([0, 0.25, 0.5, 1], [0, 1], [0, 0.5, 1],
                                                 range(3), range(2), range(5)):
        row = np.zeros(WIDTH)
        row[[0, 1, 2]] = [va, za, vb]
        row[3 + c], row[6 + d], row[8 + e] = 1, 1, 1
        rows.append(row)
    x = torch.tensor(np.array(rows))
    gen = torch.Generator().manual_seed(0)
    soft = x[:200].clone()
    soft[:, 1] = torch.rand(len(soft), generator=gen, dtype=torch.float64)
    for lo, hi in ((3, 6), (6, 8), (8, 13)):
        soft[:, lo:hi] = torch.softmax(3 * torch.randn(len(soft), hi - lo, generator=gen,
                                                       dtype=torch.float64), 1)
    return torch.cat([x, soft])


MAPS = {
    'sum kernel': lambda: SumKernelMap(BLOCKS, 10, 0.2),
    'product kernel': lambda: ProductKernelMap(BLOCKS[1:4], 4, 0.2),
    'marginals': lambda: FourierMarginalMap(BLOCKS, 0.02),
    'one-way': lambda: OneWayMap(BLOCKS, 0.05),
    'pairs': lambda: PairwiseKernelMap(BLOCKS, 0.1),
    'selected pairs': lambda: PairwiseKernelMap(BLOCKS, 0.1, pairs=[('a', 'e'), ('c', 'd')]),
    'one-frequency pairs': lambda: PairwiseKernelMap(BLOCKS, 1.37),
    'rff': lambda: FourierKernelMap(BLOCKS, 200, 0.3, torch.Generator().manual_seed(0)),
    # few RFF features: the joint numeric part, not a delta block, holds the largest entry
    'rff, D = 2': lambda: FourierKernelMap(BLOCKS, 2, 0.3, torch.Generator().manual_seed(0)),
}


@pytest.mark.parametrize('name', sorted(MAPS))
def test_no_coordinate_exceeds_the_bound_and_the_bound_is_reached(name):
    fmap = MAPS[name]()
    feats = fmap(_rows())
    largest = feats.abs().max().item()
    assert largest <= fmap.coordinate_bound + 1e-12
    # not a loose bound: the corners reach most of it (a one-hot entry, a cos(0) term)
    assert largest >= 0.5 * fmap.coordinate_bound


def test_multi_block_maps_are_bounded_tighter_than_their_norm():
    for name in ('sum kernel', 'marginals', 'one-way', 'pairs', 'rff'):
        fmap = MAPS[name]()
        assert fmap.coordinate_bound < fmap.norm_bound, name
    assert MAPS['pairs']().coordinate_bound == pytest.approx(1 / np.sqrt(10))
