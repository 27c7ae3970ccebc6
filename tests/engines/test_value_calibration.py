"""Numeric value maps: each numeric column's generated values quantile-mapped to a shape estimated
from every additive release (``engines.value_calibration``), post-processing only."""

import numpy as np
import pytest
import torch

from sdv_dpkme.engines import value_calibration as vc
from sdv_dpkme.engines.generator import Objective, TabularGenerator
from sdv_dpkme.features import OneWayMap, SumKernelMap
from sdv_dpkme.features.blocks import Block
from sdv_dpkme.features.marginal import FourierMarginalMap

V = Block('v', 'numeric', (0,))


def numeric_generator(blocks=(V, Block('c', 'categorical', (1, 2, 3))), columns=4, edge=None):
    torch.manual_seed(0)
    gen = TabularGenerator(list(blocks), columns, 1)
    if edge is not None:  # every value near sigmoid(edge): a column parked at its box's edge
        with torch.no_grad():
            gen.net[-1].weight[0] *= 0.01
            gen.net[-1].bias[0] = edge
    return gen


def release(fmap, x, noise, seed=3, name='Marginals'):
    """A noisy release of the mean of ``fmap`` over the encoded rows ``x``."""
    means = fmap(torch.as_tensor(x, dtype=torch.float64)).mean(0, keepdim=True)
    noisy = means + noise * torch.randn(means.shape, generator=torch.Generator().manual_seed(seed),
                                        dtype=torch.float64)
    return Objective(name, fmap, noisy.float(), noise_std=torch.tensor([noise]))


def sample(gen, rows=20000, seed=1):
    return gen.sample(torch.zeros(rows, dtype=torch.long), torch.Generator().manual_seed(seed))


def ks(a, b, start=0.05):
    grid = np.linspace(start, 1, 951)  # the release resolves about 0.02 (its kernel length)
    return np.abs(np.searchsorted(np.sort(a), grid, 'right') / len(a)
                  - np.searchsorted(np.sort(b), grid, 'right') / len(b)).max()


def test_value_maps_move_a_numeric_column_to_its_released_distribution():
    rng = np.random.default_rng(0)
    # a spike at 0 (70%) and a bump at 0.7: a zero-inflated money column on a log scale
    real = np.where(rng.random(20000) < 0.7, 0.0, rng.normal(0.7, 0.03, 20000).clip(0, 1))
    gen = numeric_generator()
    before = sample(gen)
    assert ks(before[:, 0], real) > 0.3
    names = vc.calibrate_values(gen, [release(FourierMarginalMap([V]), real[:, None], 1e-4)],
                                np.array([1.0]), torch.Generator().manual_seed(2))
    assert names == ['v'] and list(gen.value_maps) == [0]
    after = sample(gen)
    assert ks(after[:, 0], real) < 0.05
    # ranks are kept: the map is monotone
    assert (np.diff(after[np.argsort(before[:, 0]), 0]) >= 0).all()
    assert after[:, 0].min() >= 0 and after[:, 0].max() <= 1
    del gen.value_maps  # generators saved before value maps sample as before
    np.testing.assert_array_equal(sample(gen), before)


def test_a_column_at_its_box_edge_is_spread_when_the_releases_are_noise():
    # at small n the generator, trained against noise, can park a column at an edge of its box;
    # releases that are mostly noise must not keep it there (the old soft threshold did)
    rng = np.random.default_rng(1)
    real = rng.normal(0.5, 0.1, 200).clip(0, 1)
    gen = numeric_generator(edge=-9.0)  # the lower edge: float32 resolves values there
    before = sample(gen)[:, 0]
    assert np.mean(before < 0.01) > 0.99
    fmap = FourierMarginalMap([V], length_scale=0.25)
    vc.calibrate_values(gen, [release(fmap, real[:, None], 0.2)], np.array([1.0]),
                        torch.Generator().manual_seed(2))
    after = sample(gen)[:, 0]
    assert np.mean(after < 0.01) < 0.1 and after.std() > 0.1
    assert ks(after, real, start=0.0) < ks(before, real, start=0.0) - 0.4


def test_the_estimate_pools_every_additive_release_of_a_column():
    # the sum kernel's Hermite features and the one-way map's Fourier series both inform v;
    # exact releases of both recover its histogram on the public bins
    rng = np.random.default_rng(2)
    real = rng.beta(2, 5, 50000)
    blocks = [V, Block('c', 'categorical', (1, 2))]
    x = np.zeros((len(real), 3))
    x[:, 0], x[np.arange(len(real)), 1 + (real > 0.3)] = real, 1.0
    releases = [(fmap, fmap(torch.as_tensor(x)).mean(0).double().numpy(), 1e-3)
                for fmap in (SumKernelMap(blocks, 10, 0.05), OneWayMap(blocks, 0.1))]
    sources = vc.column_releases(releases, x[0], V)
    assert len(sources) == 2  # the categorical column's coordinates do not move with v
    estimate, _ = vc.shape_estimate(sources)
    truth = np.histogram(real, np.linspace(0, 1, vc.BINS + 1))[0] / len(real)
    assert 0.5 * np.abs(estimate - truth).sum() < 0.05
    # either release alone is noisier than both together
    alone, _ = vc.shape_estimate(sources[:1])
    assert np.abs(estimate - truth).sum() <= np.abs(alone - truth).sum() + 1e-6


def test_classes_pool_with_their_weights_and_a_shared_release_counts_once():
    fmap = FourierMarginalMap([V], length_scale=0.25)
    target = torch.tensor(np.random.default_rng(3).normal(size=(2, fmap.dim)))
    o = Objective('Marginals', fmap, target, noise_std=torch.tensor([0.1, 0.2]))
    twice = Objective('Marginals again', fmap, target, noise_std=torch.tensor([0.1, 0.2]))
    w = np.array([0.25, 0.75])
    (got,) = vc.additive_releases([o, twice], w)
    np.testing.assert_allclose(got[1], w @ target.numpy())
    assert got[2] == pytest.approx(np.sqrt(0.25 ** 2 * 0.01 + 0.75 ** 2 * 0.04))
    # a class without rows has no release to pool; a pair map is not additive
    (got,) = vc.additive_releases([o], np.array([0.0, 1.0]))
    np.testing.assert_allclose(got[1], target.numpy()[1])


def test_a_nullable_column_is_mapped_on_its_present_rows():
    nullable = Block('v', 'numeric', (0, 1))
    rng = np.random.default_rng(4)
    present = rng.random(20000) < 0.6
    x = np.zeros((20000, 2))
    x[:, 0] = np.where(present, rng.normal(0.3, 0.05, 20000).clip(0, 1), 0.0)
    x[:, 1] = ~present
    gen = numeric_generator([nullable], 2)
    before = sample(gen)
    names = vc.calibrate_values(gen, [release(FourierMarginalMap([nullable]), x, 1e-4)],
                                np.array([1.0]), torch.Generator().manual_seed(2))
    assert names == ['v']
    after = sample(gen)
    np.testing.assert_array_equal(after[:, 1], before[:, 1])  # who is null does not move
    rows = after[:, 1] < 0.5
    assert ks(after[rows, 0], x[present, 0]) < 0.05 < ks(before[rows, 0], x[present, 0])


def test_target_cdf_reweights_bins_and_keeps_the_shape_inside_a_bin():
    values = np.concatenate([np.zeros(500), np.full(500, 0.6)])  # two spikes
    shares = np.zeros(4)
    shares[[0, 2]] = 0.2, 0.8
    grid = np.linspace(0, 1, 101)
    cdf = vc.target_cdf(values, shares, grid)
    assert cdf[0] == pytest.approx(0.2)  # the spike at 0 stays a spike, with its new share
    assert cdf[60] == pytest.approx(1.0) and cdf[59] == pytest.approx(0.2)
    # a bin with no generated value is filled uniformly
    cdf = vc.target_cdf(values, np.array([0.2, 0.4, 0.4, 0.0]), grid)
    assert cdf[25] == pytest.approx(0.2) and cdf[37] == pytest.approx(0.2 + 0.4 * 12 / 25)


def test_an_exact_release_gives_a_finite_map():
    # epsilon = inf: the release's noise std is 0
    rng = np.random.default_rng(5)
    real = rng.normal(0.4, 0.1, 5000).clip(0, 1)
    gen = numeric_generator()
    vc.calibrate_values(gen, [release(FourierMarginalMap([V]), real[:, None], 0.0)],
                        np.array([1.0]), torch.Generator().manual_seed(2))
    after = sample(gen)[:, 0]
    assert np.isfinite(after).all() and ks(after, real, start=0.0) < 0.05
