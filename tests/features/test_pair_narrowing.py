"""``narrowed_pair_map``: the noise-aware plan's narrower 'pairs' maps keep the map's bound and
their own sensitivity (issue 42)."""

import numpy as np
import pytest
import torch

from sdv_dpkme.features import PairwiseKernelMap
from sdv_dpkme.features.pairwise import narrowed_pair_map
from tests.features.neighbours import assert_replace_one_moves_at_most_two_over_n
from tests.features.test_pairwise import BLOCKS, WIDTH, _rows


def test_frequencies_go_first_then_the_pairs_with_the_most_cells():
    fmap = PairwiseKernelMap(BLOCKS, 0.1)
    assert narrowed_pair_map(fmap, fmap.dim).dim == fmap.dim
    fewer = narrowed_pair_map(fmap, fmap.dim - 1)
    assert fewer.n_pairs == fmap.n_pairs and fewer.n_frequencies < fmap.n_frequencies
    one = PairwiseKernelMap(BLOCKS, 0.1, 1)  # one frequency: cos and sin per numeric column
    assert narrowed_pair_map(fmap, one.dim).n_frequencies == 1
    assert narrowed_pair_map(fmap, one.dim).n_pairs == fmap.n_pairs
    cut = narrowed_pair_map(fmap, one.dim - 1)
    assert cut.n_frequencies == 1 and cut.n_pairs < fmap.n_pairs and cut.dim <= one.dim - 1
    cells = {(a, b): w for (a, b), w in zip(one.pair_names(), _cells(one))}
    kept = set(cut.pair_names())
    assert max(cells[p] for p in kept) <= min(cells[p] for p in cells if p not in kept)
    assert narrowed_pair_map(fmap, min(cells.values()) - 1) is None
    assert narrowed_pair_map(fmap, min(cells.values())).n_pairs == 1


def _cells(fmap):
    widths = {b.name: fmap._spans[b.name][1] for b in fmap.blocks}
    return [widths[a] * widths[b] for a, b in fmap.pair_names()]


@pytest.mark.parametrize('cut', [0, 1, 9, 13])
def test_narrowed_maps_keep_the_bound_and_their_sensitivity(cut):
    fmap = PairwiseKernelMap(BLOCKS, 0.1)
    one = PairwiseKernelMap(BLOCKS, 0.1, 1)
    narrow = narrowed_pair_map(fmap, one.dim - cut if cut else fmap.dim - 1)
    x = _rows()
    assert narrow(x).norm(dim=1).max().item() <= 1 + 1e-12
    garbage = [np.full(WIDTH, 1e6), np.full(WIDTH, -1e308), np.full(WIDTH, np.inf)]
    negative = x[0].numpy().copy()
    negative[3:6] = -negative[3:6]
    garbage += [negative, np.where(np.arange(WIDTH) == 6, np.nan, negative)]
    assert_replace_one_moves_at_most_two_over_n(
        narrow, _rows(50).numpy(), 2, [(row, label) for row in garbage for label in (0, 1)],
        bound=narrow.replace_bound)
    # the proven bound is attained by a numeric pair's sign flip, or a categorical pair's swap
    assert np.sqrt(2) - 1e-12 <= narrow.replace_bound <= 2 + 1e-12
    # the private pass keeps a narrowed map's sums in its ball too
    y = torch.ones(len(x), 1, dtype=torch.float64)
    assert narrow.class_sums(x, y).norm().item() <= len(x) + 1e-9
