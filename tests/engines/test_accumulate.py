import pickle

import numpy as np
import pytest
import torch

from sdv_dpkme.engines.accumulate import ArrayRows, ClassSums, class_sums, merge
from sdv_dpkme.features import ProductKernelMap, SumKernelMap

from tests.engines.test_embedding import BLOCKS
from tests.engines.test_embedding import _table as _rows

MAPS = [SumKernelMap(BLOCKS, 20, 0.05), ProductKernelMap(BLOCKS, 4, 0.05)]


def _table(n, seed):
    return _rows(n, seed, n_classes=3)


def test_partial_sums_of_any_split_merge_to_the_sums_of_the_whole():
    x, y = _table(400, 0)
    whole = class_sums(x, y, 3, MAPS)
    rng = np.random.default_rng(1)
    cuts = np.sort(rng.choice(np.arange(1, 400), 6, replace=False))
    parts = [class_sums(xs, ys, 3, MAPS) for xs, ys in zip(np.split(x, cuts), np.split(y, cuts))]
    # an empty partition and a different grouping (a tree) give the same statistic
    parts.insert(2, class_sums(x[:0], y[:0], 3, MAPS))
    tree = merge([merge(parts[:3]), merge(parts[3:])])
    for merged in (merge(parts), tree):
        assert merged.n == 400
        np.testing.assert_array_equal(merged.counts, np.bincount(y, minlength=3))
        for a, b in zip(whole.sums, merged.sums):
            assert torch.allclose(a, b, rtol=0, atol=1e-11)


def test_means_and_proportions_divide_by_n_and_survive_pickling():
    x, y = _table(120, 2)
    stats = pickle.loads(pickle.dumps(ArrayRows(x, y).accumulate(MAPS, 3)))
    assert isinstance(stats.sums[0], torch.Tensor)
    means = stats.means()
    assert torch.allclose(means[0], stats.sums[0] / 120)
    np.testing.assert_allclose(stats.proportions(), np.bincount(y, minlength=3) / 120)
    # every row's features lie in the unit ball, so each class sum's norm is at most its count
    for total in stats.sums:
        assert (total.norm(dim=1).numpy() <= stats.counts + 1e-9).all()


def test_merging_different_statistics_or_nothing_is_an_error():
    x, y = _table(50, 3)
    with pytest.raises(ValueError, match='different feature maps'):
        class_sums(x, y, 3, MAPS) + class_sums(x, y, 3, MAPS[:1])
    with pytest.raises(ValueError, match='empty'):
        merge([None, None])
    with pytest.raises(ValueError, match='empty'):
        ClassSums.zeros(3, MAPS).means()


def test_chunks_follow_the_floats_a_map_builds_per_row_not_its_dim():
    from sdv_dpkme.engines.accumulate import MAX_CHUNK_FLOATS, chunk_rows
    from sdv_dpkme.features import Block, PairwiseKernelMap

    # 60 numeric columns: a pairs map of ~1.5M features per class, but 1,680 floats per row
    fmap = PairwiseKernelMap([Block(f'n{i}', 'numeric', (i,)) for i in range(60)], 0.1)
    assert fmap.dim > MAX_CHUNK_FLOATS // 64
    assert chunk_rows([fmap], 10**6) == MAX_CHUNK_FLOATS // fmap.row_floats > 64
