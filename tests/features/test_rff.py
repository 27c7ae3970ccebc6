import itertools
import math

import numpy as np
import pytest
import torch

from sdv_dpkme.features import Block, FourierKernelMap, project_unit_ball
from tests.features.neighbours import assert_replace_one_moves_at_most_two_over_n

# a: nullable numeric, b: numeric, c: 3 categories, d: nullable numeric, e: 2 categories
BLOCKS = [Block('a', 'numeric', (0, 1)), Block('b', 'numeric', (2,)),
          Block('c', 'categorical', (3, 4, 5)), Block('d', 'numeric', (6, 7)),
          Block('e', 'categorical', (8, 9))]
WIDTH = 10


def _map(blocks=BLOCKS, d=200, length=0.3, seed=0):
    return FourierKernelMap(blocks, d, length, torch.Generator().manual_seed(seed))


def _valid_rows():
    """Every combination of extreme values, null flags and categories."""
    rows = []
    for va, vb, vd, za, zd, c, e in itertools.product([0, 1], [0, 0.5, 1], [0, 1], [0, 1], [0, 1],
                                                      range(3), range(2)):
        row = np.zeros(WIDTH)
        row[[0, 1, 2, 6, 7]] = [va, za, vb, vd, zd]
        row[3 + c] = 1
        row[8 + e] = 1
        rows.append(row)
    return torch.tensor(np.array(rows))


def test_norm_is_exactly_one_on_valid_rows():
    fmap = _map()
    x = _valid_rows()
    feats = fmap(x)
    assert feats.shape == (len(x), fmap.dim)
    assert fmap.dim == 200 + 3 + 2 + 2 + 2  # RFF + c + e + [z, 1-z] for a and d
    assert fmap.norm_bound == 1.0
    assert (feats.norm(dim=1) - 1).abs().max().item() < 1e-12


@pytest.mark.parametrize('blocks', [BLOCKS[2:3] + BLOCKS[4:], [BLOCKS[1]], [BLOCKS[0], BLOCKS[3]]],
                         ids=['categorical-only', 'one-numeric', 'nullable-only'])
def test_tables_without_numeric_or_categorical_blocks(blocks):
    fmap = _map(blocks, d=50)
    feats = fmap(_valid_rows())
    assert feats.shape[1] == fmap.dim
    assert (feats.norm(dim=1) - 1).abs().max().item() < 1e-12
    assert isinstance(fmap.describe(), str) and fmap.describe()


def test_categorical_only_has_no_fourier_part():
    fmap = _map(BLOCKS[2:3] + BLOCKS[4:], d=50)
    assert fmap.dim == 5


def test_fractional_null_flags_stay_inside_ball():
    x = _valid_rows()
    x[:, 1] = 0.3
    x[:, 7] = 0.5
    assert _map()(x).norm(dim=1).max().item() <= 1 + 1e-12


def test_garbage_rows_are_projected_into_ball():
    fmap = _map()
    gen = torch.Generator().manual_seed(1)
    x = (torch.rand(50, WIDTH, generator=gen, dtype=torch.float64) - 0.5) * 2e6
    x[0] = 1e6
    x[1] = -1e6
    raw = fmap(x)
    assert torch.isfinite(raw).all()
    assert raw.norm(dim=1).max().item() > 1  # the one-hot parts are not one-hot any more
    assert project_unit_ball(raw).norm(dim=1).max().item() <= 1 + 1e-12
    y = torch.eye(2, dtype=torch.float64)[torch.arange(50) % 2]
    sums = fmap.class_sums(x, y, project=True)
    assert sums.shape == (2, fmap.dim)
    assert torch.allclose(sums, y.T @ project_unit_ball(raw))


def test_replace_one_row_moves_class_embedding_by_at_most_two_over_n():
    gen = np.random.default_rng(0)
    assert_replace_one_moves_at_most_two_over_n(
        _map(), _valid_rows().numpy(), 3,
        [(np.full(WIDTH, 1e6), 2), (np.full(WIDTH, -1e6), 0),
         (gen.uniform(-1e3, 1e3, WIDTH), 1), (np.zeros(WIDTH), 1)],
    )


def test_gram_approximates_gaussian_kernel():
    # only numeric columns: phi . phi' -> exp(-||u - u'||^2 / (2 l^2)); per-entry std <= 1/sqrt(D)
    blocks = [Block(f'v{j}', 'numeric', (j,)) for j in range(3)]
    length = 0.4
    fmap = FourierKernelMap(blocks, 20_000, length, torch.Generator().manual_seed(3))
    u = torch.rand(15, 3, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    feats = fmap(u)
    exact = torch.exp(-torch.cdist(u, u) ** 2 / (2 * length**2))
    assert (feats @ feats.T - exact).abs().max().item() < 0.05  # about 7 standard deviations


def test_sum_kernel_weights_numeric_group_and_delta_blocks():
    # k = (p * gauss(u, u') + sum of delta kernels) / m with p = 3 numeric, m = 3 + 2 cat + 2 null
    fmap = _map(d=20_000, length=0.5, seed=5)
    x = torch.zeros(2, WIDTH, dtype=torch.float64)
    x[0, [0, 1, 2, 6, 7, 3, 8]] = torch.tensor([0.2, 0.0, 0.4, 0.9, 0.0, 1, 1], dtype=torch.float64)
    x[1, [0, 1, 2, 6, 7, 4, 8]] = torch.tensor([0.7, 0.0, 0.1, 0.9, 1.0, 1, 1], dtype=torch.float64)
    feats = fmap(x)
    dist2 = 0.5**2 + 0.3**2 + 0.0**2
    # c differs (0), e matches (1), a's null flag matches (1), d's differs (0)
    expected = (3 * math.exp(-dist2 / (2 * 0.5**2)) + 0 + 1 + 1 + 0) / 7
    assert (feats[0] @ feats[1]).item() == pytest.approx(expected, abs=0.05)


def test_deterministic_given_seed_and_dtype_follows_input():
    x = _valid_rows()
    a, b, c = _map(seed=7), _map(seed=7), _map(seed=8)
    assert torch.equal(a.frequencies, b.frequencies)
    assert torch.equal(a(x), b(x))
    assert not torch.equal(a.frequencies, c.frequencies)
    out32 = a(x.float())
    assert out32.dtype == torch.float32
    assert a.frequencies.dtype == torch.float64
    assert (out32.double() - a(x)).abs().max().item() < 1e-5
    # frequencies scale as 1 / length_scale for the same draws
    d = FourierKernelMap(BLOCKS, 200, 0.6, torch.Generator().manual_seed(7))
    assert torch.allclose(d.frequencies * 2, a.frequencies)


@pytest.mark.parametrize('kwargs', [
    {'n_features': 0}, {'n_features': 1}, {'n_features': 7}, {'n_features': -2},
    {'n_features': 10.0}, {'n_features': True}, {'n_features': '10'},
    {'length_scale': 0}, {'length_scale': -0.3}, {'length_scale': float('nan')},
    {'length_scale': float('inf')}, {'length_scale': None},
])
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        FourierKernelMap(BLOCKS, **kwargs)


def test_empty_or_unknown_blocks_raise():
    with pytest.raises(ValueError):
        FourierKernelMap([])
    with pytest.raises(ValueError):
        FourierKernelMap([Block('x', 'text', (0,))])


def test_numpy_integer_feature_count_is_accepted():
    assert FourierKernelMap(BLOCKS, np.int64(10)).dim == 10 + 9
