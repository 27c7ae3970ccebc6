import math

import numpy as np
import pytest
import torch

from sdv_dpkme.features import Block, FourierMarginalMap, project_unit_ball
from tests.features.neighbours import assert_replace_one_moves_at_most_two_over_n

# a: nullable numeric, b: numeric, c: 3 categories (ignored by the marginal map)
BLOCKS = [Block('a', 'numeric', (0, 1)), Block('b', 'numeric', (2,)),
          Block('c', 'categorical', (3, 4, 5))]
WIDTH = 6


def _rows(n=400, seed=0, null_rate=0.3):
    gen = torch.Generator().manual_seed(seed)
    x = torch.zeros(n, WIDTH, dtype=torch.float64)
    x[:, 0] = torch.rand(n, generator=gen, dtype=torch.float64)
    x[:, 1] = (torch.rand(n, generator=gen, dtype=torch.float64) < null_rate).double()
    x[:, 2] = torch.rand(n, generator=gen, dtype=torch.float64)
    x[torch.arange(n), 3 + torch.arange(n) % 3] = 1
    x[:5, [0, 2]] = torch.tensor([[0, 0], [1, 1], [0, 1], [1, 0], [0.5, 0.5]], dtype=torch.float64)
    return x


def test_norm_bound_on_extreme_and_fractional_rows():
    fmap = FourierMarginalMap(BLOCKS, 0.02)
    x = _rows()
    assert fmap.norm_bound == 1.0
    assert fmap(x).shape == (len(x), fmap.dim)
    # non-null rows of a non-nullable-only map have norm exactly 1
    only_b = FourierMarginalMap(BLOCKS[1:], 0.02)
    assert (only_b(x).norm(dim=1) - 1).abs().max().item() < 1e-12
    norms = fmap(x).norm(dim=1)
    assert norms.max().item() <= 1 + 1e-12
    x[:, 1] = torch.linspace(0, 1, len(x), dtype=torch.float64)  # relaxed null flags
    assert fmap(x).norm(dim=1).max().item() <= 1 + 1e-12


def test_garbage_rows_are_projected_and_move_embedding_by_at_most_two_over_n():
    fmap = FourierMarginalMap(BLOCKS, 0.05)
    raw = fmap(torch.full((1, WIDTH), 1e6, dtype=torch.float64))
    assert raw.norm().item() > 1  # a null flag of 1e6 leaves the ball ...
    assert project_unit_ball(raw).norm().item() <= 1 + 1e-12  # ... and the pass projects it
    assert_replace_one_moves_at_most_two_over_n(
        fmap, _rows(60).numpy(), 2,
        [(np.full(WIDTH, 1e6), 1), (np.full(WIDTH, -1e6), 0), (np.zeros(WIDTH), 1)],
    )


@pytest.mark.parametrize('length', [0.01, 0.02, 0.1])
def test_kernel_is_a_gaussian_in_each_column(length):
    # k(d) = (G(d) - 1) / (G(0) - 1), G the Gaussian of length l periodised with period 2, up to
    # the truncation of the spectrum at 1e-4 of its peak
    fmap = FourierMarginalMap(BLOCKS[1:2], length)
    v = torch.linspace(0.05, 0.95, 40, dtype=torch.float64)
    x = torch.zeros(len(v), WIDTH, dtype=torch.float64)
    x[:, 2] = v
    gram = fmap(x) @ fmap(x).T
    d = v[:, None] - v[None, :]

    def periodised(d):
        shifts = torch.arange(-2, 3, dtype=torch.float64) * 2
        return math.sqrt(2 / math.pi) / length * torch.exp(
            -(d[..., None] - shifts) ** 2 / (2 * length**2)).sum(-1)

    g0 = periodised(torch.zeros(()))
    exact = (periodised(d) - 1) / (g0 - 1)
    assert (gram - exact).abs().max().item() < 1e-3
    # close to the plain Gaussian: the removed constant is 1 / (G(0) - 1), about 1.25 l
    plain = torch.exp(-d**2 / (2 * length**2))
    offset = 1 / (math.sqrt(2 / math.pi) / length - 1)
    assert (gram - plain).abs().max().item() < offset + 1e-3
    # finer than the kernel: two points 3 length scales apart are nearly orthogonal
    far = torch.zeros(2, WIDTH, dtype=torch.float64)
    far[:, 2] = torch.tensor([0.4, 0.4 + 3 * length])
    f = fmap(far)
    assert abs((f[0] @ f[1]).item()) < 0.02 + 1 / (math.sqrt(2 / math.pi) / length - 1)


def test_nullable_block_matches_missingness():
    fmap = FourierMarginalMap(BLOCKS[:1], 0.05)
    x = torch.zeros(3, WIDTH, dtype=torch.float64)
    x[:, 0] = torch.tensor([0.3, 0.3, 0.9])
    x[:, 1] = torch.tensor([0.0, 1.0, 1.0])
    f = fmap(x)
    # null vs non-null: only the indicators could match, and they do not
    assert (f[0] @ f[1]).item() == pytest.approx(0.0, abs=1e-12)
    # two nulls match whatever their (imputed) values
    assert (f[1] @ f[2]).item() == pytest.approx((f[1] @ f[1]).item())


def test_frequencies_follow_length_and_are_deterministic():
    fine, coarse = FourierMarginalMap(BLOCKS, 0.01), FourierMarginalMap(BLOCKS, 0.1)
    assert fine.n_frequencies > coarse.n_frequencies
    assert math.isclose(fine.n_frequencies / coarse.n_frequencies, 10, rel_tol=0.1)
    x = _rows(20)
    assert torch.equal(FourierMarginalMap(BLOCKS, 0.02)(x), FourierMarginalMap(BLOCKS, 0.02)(x))
    assert fine(x.float()).dtype == torch.float32


@pytest.mark.parametrize('length', [0, -0.1, float('nan'), float('inf')])
def test_bad_length_raises(length):
    with pytest.raises(ValueError, match='length_scale'):
        FourierMarginalMap(BLOCKS, length)


def test_needs_a_numeric_column():
    with pytest.raises(ValueError, match='numeric'):
        FourierMarginalMap(BLOCKS[2:], 0.02)


def test_class_sums_and_moments_without_phi_equal_the_dense_ones():
    from sdv_dpkme.features.blocks import dense_class_moments, dense_class_sums

    fmap = FourierMarginalMap(BLOCKS, 0.01)
    x = _rows(300)
    x[:3, 1] = torch.tensor([0.2, 0.5, 0.9], dtype=torch.float64)  # relaxed null flags
    x[3] = 1e6  # a garbage row: projected in the private pass
    gen = torch.Generator().manual_seed(3)
    y = torch.nn.functional.one_hot(torch.randint(3, (len(x),), generator=gen), 3).double()
    for project in (True, False):
        expected = dense_class_sums(fmap, x, y, project=project)
        assert torch.allclose(fmap.class_sums(x, y, project=project), expected,
                              rtol=1e-12, atol=1e-12)
    sums, sq = fmap.class_moments(x[4:], y[4:])
    dense_sums, dense_sq = dense_class_moments(fmap, x[4:], y[4:])
    assert torch.allclose(sums, dense_sums, rtol=1e-12, atol=1e-12)
    assert torch.allclose(sq, dense_sq, rtol=1e-12, atol=1e-12)
    # training differentiates through it like the dense map
    a = x[4:].clone().requires_grad_(True)
    b = x[4:].clone().requires_grad_(True)
    weights = torch.randn(3, fmap.dim, dtype=torch.float64, generator=gen)
    (fmap.class_moments(a, y[4:])[0] * weights).sum().backward()
    (dense_class_moments(fmap, b, y[4:])[0] * weights).sum().backward()
    assert torch.allclose(a.grad, b.grad, rtol=1e-10, atol=1e-10)
