"""The training loss: an unbiased batch estimate of ||target - E phi(G)||^2 per class."""

import pytest
import torch

from sdv_dpkme.engines.generator import mmd_to_target
from sdv_dpkme.features import (
    Block,
    FourierKernelMap,
    FourierMarginalMap,
    ProductKernelMap,
    SumKernelMap,
)

BLOCKS = [Block('a', 'numeric', (0, 1)), Block('b', 'numeric', (2,)),
          Block('c', 'categorical', (3, 4, 5))]


def _rows(n, gen):
    x = torch.zeros(n, 6, dtype=torch.float64)
    x[:, 0] = torch.rand(n, generator=gen, dtype=torch.float64) ** 2
    x[:, 1] = torch.rand(n, generator=gen, dtype=torch.float64)  # relaxed null probability
    x[:, 2] = torch.rand(n, generator=gen, dtype=torch.float64)
    x[:, 3:6] = torch.softmax(torch.randn(n, 3, generator=gen, dtype=torch.float64), dim=1)
    return x


MAPS = [
    SumKernelMap(BLOCKS, 8, 0.05),
    ProductKernelMap(BLOCKS, 4, 0.1),
    FourierKernelMap(BLOCKS, 40, 0.3, torch.Generator().manual_seed(0)),
    FourierMarginalMap(BLOCKS, 0.05),
]


@pytest.mark.parametrize('fmap', MAPS, ids=lambda m: type(m).__name__)
def test_class_moments_match_the_dense_features(fmap):
    gen = torch.Generator().manual_seed(1)
    x = _rows(50, gen)
    y = torch.eye(2, dtype=torch.float64)[torch.arange(50) % 2]
    sums, sq = fmap.class_moments(x, y)
    feats = fmap(x)
    assert torch.allclose(sums, y.T @ feats)
    assert torch.allclose(sq, y.T @ (feats**2).sum(1))
    assert torch.allclose(sums, fmap.class_sums(x, y, project=False))


def test_unbiased_estimate_averages_to_the_population_distance_and_plug_in_does_not():
    fmap = FourierMarginalMap(BLOCKS, 0.02)  # fine kernel: large tr Cov(phi)
    gen = torch.Generator().manual_seed(2)
    population = fmap(_rows(50_000, gen)).mean(0, keepdim=True)
    target = population + 0.01 * torch.randn(1, fmap.dim, generator=gen, dtype=torch.float64)
    exact = ((target - population) ** 2).sum().item()
    n, reps = 8, 1000
    y = torch.ones(n, 1, dtype=torch.float64)
    counts = torch.full((1, 1), float(n), dtype=torch.float64)
    unbiased, plug_in = [], []
    for _ in range(reps):
        sums, sq = fmap.class_moments(_rows(n, gen), y)
        unbiased.append(mmd_to_target(target, sums, sq, counts).item())
        plug_in.append(mmd_to_target(target, sums, sq, counts, unbiased=False).item())
    unbiased, plug_in = torch.tensor(unbiased), torch.tensor(plug_in)
    stderr = unbiased.std().item() / reps**0.5
    assert abs(unbiased.mean().item() - exact) < 4 * stderr
    # the plug-in estimate is off by tr Cov(phi) / n, many standard errors
    assert plug_in.mean().item() - exact > 20 * stderr


def test_single_row_classes_fall_back_to_the_plug_in_estimate():
    fmap = FourierMarginalMap(BLOCKS, 0.05)
    x = _rows(3, torch.Generator().manual_seed(3))
    y = torch.tensor([[1, 0], [0, 1], [0, 1]], dtype=torch.float64)
    sums, sq = fmap.class_moments(x, y)
    counts = y.sum(0)[:, None]
    target = torch.zeros(2, fmap.dim, dtype=torch.float64)
    value = mmd_to_target(target, sums, sq, counts)
    assert torch.isfinite(value)
    pairs_1 = ((sums[1] ** 2).sum() - sq[1]) / 2
    assert value.item() == pytest.approx(((sums[0]) ** 2).sum().item() + pairs_1.item())
