"""Kernel matrices of the KME feature maps from per-column kernels (used by the reweighting of
generated rows): they must equal phi(a) phi(b)^T of the materialised features exactly."""

import numpy as np
import pytest
import torch

from sdv_dpkme.engines import simplex_weights
from sdv_dpkme.features import (
    Block,
    FourierMarginalMap,
    PairwiseKernelMap,
    ProductKernelMap,
    SumKernelMap,
)

# a: nullable numeric, b: numeric, c: 3 categories, d: 2 categories, e: numeric
BLOCKS = [Block('a', 'numeric', (0, 1)), Block('b', 'numeric', (2,)),
          Block('c', 'categorical', (3, 4, 5)), Block('d', 'categorical', (6, 7)),
          Block('e', 'numeric', (8,))]
WIDTH = 9


def _rows(n, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.zeros(n, WIDTH, dtype=torch.float64)
    x[:, [0, 2, 8]] = torch.rand(n, 3, generator=gen, dtype=torch.float64)
    x[:, 1] = (torch.rand(n, generator=gen, dtype=torch.float64) < 0.3).double()
    x[torch.arange(n), 3 + torch.randint(3, (n,), generator=gen)] = 1
    x[torch.arange(n), 6 + torch.randint(2, (n,), generator=gen)] = 1
    x[:3, [0, 2, 8]] = torch.tensor([[0.0, 1.0, 0.5], [1.0, 0.0, 0.0], [0.5, 0.5, 1.0]],
                                    dtype=torch.float64)
    return x


MAPS = {
    'sum': lambda: SumKernelMap(BLOCKS, 20, 0.05),
    'product': lambda: ProductKernelMap(BLOCKS[:4], 4, 0.05),
    'marginal': lambda: FourierMarginalMap(BLOCKS, 0.05),
    'pairs': lambda: PairwiseKernelMap(BLOCKS, 0.1),
}


@pytest.mark.parametrize('name', sorted(MAPS))
def test_gram_equals_the_materialised_inner_products(name):
    fmap = MAPS[name]()
    a, b = _rows(40, 0), _rows(25, 1)
    expected = fmap(a) @ fmap(b).T
    got = fmap.gram(a, b)
    assert got.shape == (40, 25)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    # and it is a kernel: symmetric on one set, diagonal = ||phi||^2 <= 1
    k = fmap.gram(a, a)
    torch.testing.assert_close(k, k.T)
    assert float(k.diagonal().max()) <= 1 + 1e-12


@pytest.mark.parametrize('shape', [(), (3,)])
def test_pairwise_dot_equals_the_materialised_product(shape):
    fmap = PairwiseKernelMap(BLOCKS, 0.1)
    x = _rows(30, 2)
    target = torch.randn(fmap.dim, *shape, generator=torch.Generator().manual_seed(3),
                         dtype=torch.float64)
    got = fmap.dot(x, target)
    assert got.shape == (30, *shape)
    torch.testing.assert_close(got, fmap(x) @ target, rtol=1e-10, atol=1e-12)


def _materialised_weights(points, terms):
    """The weights from the (M, dim) feature matrices, as the reweighting computed them before."""
    gram = torch.zeros(len(points), len(points), dtype=torch.float64)
    linear = torch.zeros(len(points), dtype=torch.float64)
    for fmap, target, weight in terms:
        phi = simplex_weights.features_of(fmap, points)
        gram += weight * phi @ phi.T
        linear += weight * phi @ target
    return simplex_weights.quadratic_simplex(gram, linear)


def test_reweighting_matches_the_materialised_features_and_never_builds_the_pair_features(
        monkeypatch):
    private, points = _rows(200, 4), _rows(60, 5).numpy()
    maps = [MAPS['sum'](), MAPS['product'](), ProductKernelMap(BLOCKS[1:], 4, 0.05),
            MAPS['marginal'](), MAPS['pairs']()]
    terms = [(fmap, fmap(private).mean(0), weight)
             for fmap, weight in zip(maps, (1.0, 0.1, 0.1, 1.0, 1.0))]
    expected = _materialised_weights(points, terms)

    def refuse(self, x):
        raise AssertionError('the pairwise features were materialised')

    # the pair map's dense phi has dim = sum of W_i W_j columns per row; the weights need none
    monkeypatch.setattr(PairwiseKernelMap, '__call__', refuse)
    got = simplex_weights.simplex_weights_for_terms(points, terms)
    torch.testing.assert_close(got, expected, rtol=1e-8, atol=1e-10)
    assert abs(float(got.sum()) - 1) < 1e-9 and float(got.min()) >= 0


def test_product_maps_share_their_block_kernels_through_the_cache():
    a = _rows(30, 6)
    first, second = ProductKernelMap(BLOCKS[:4], 4, 0.05), ProductKernelMap(BLOCKS[1:], 4, 0.05)
    cache = {}
    for fmap in (first, second):
        torch.testing.assert_close(fmap.gram(a, a, cache=cache).double(), fmap(a) @ fmap(a).T,
                                   rtol=1e-5, atol=1e-6)
    assert len(cache) == len(BLOCKS)  # 4 + 4 blocks, 3 shared
    other = ProductKernelMap(BLOCKS[:2], 6, 0.05)  # another order: its own entries
    torch.testing.assert_close(other.gram(a, a, cache=cache).double(), other(a) @ other(a).T,
                               rtol=1e-5, atol=1e-6)
    assert len(cache) == len(BLOCKS) + 2


def test_simplex_solve_bounds_its_step_without_an_eigendecomposition(monkeypatch):
    points = _rows(300, 7)
    fmap = MAPS['pairs']()
    gram = fmap.gram(points, points)
    linear = fmap(points) @ fmap(_rows(500, 8)).mean(0)
    top = float(torch.linalg.eigvalsh(gram)[-1])
    assert float(torch.linalg.matrix_norm(gram)) >= top  # the bound the solver uses is safe

    def refuse(*args, **kwargs):
        raise AssertionError('an O(m^3) eigendecomposition in the simplex solve')

    # the step size comes from ||G||_F: O(m^2), not eigvalsh's O(m^3) (3 s of the 6 s solve at
    # m = 4000 before)
    monkeypatch.setattr(torch.linalg, 'eigvalsh', refuse)
    w = simplex_weights.quadratic_simplex(gram, linear)
    long = simplex_weights.quadratic_simplex(gram, linear, iterations=5000)

    def objective(v):
        return float(v @ gram @ v - 2 * v @ linear)

    assert abs(float(w.sum()) - 1) < 1e-9 and float(w.min()) >= 0
    assert objective(w) <= objective(torch.full_like(w, 1 / len(w)))
    assert objective(w) - objective(long) <= 1e-6 * abs(objective(long))
