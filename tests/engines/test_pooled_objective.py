"""The pooled ('one_way') objective: ||target - sum_c w_c E phi(G(z, c))||^2 (issue 42).

A class-conditional release pools the noise of C class targets into each column's marginal;
the pooled release measures the marginal once. These tests check that its batch estimate is
unbiased, that its gradient pulls the class mixture (not each class) to the target, and that
with noisy class-conditional targets it brings the generated marginal closer to the truth.
"""

import numpy as np
import pytest
import torch

from sdv_dpkme.engines.generator import (
    Objective,
    class_loss_weights,
    pooled_mmd_to_target,
)
from sdv_dpkme.engines.kme_training import Training, trained_generator
from sdv_dpkme.features import Block, OneWayMap

CATEGORIES = 12
BLOCKS = [Block('c', 'categorical', tuple(range(CATEGORIES + 1)))]  # + out-of-domain bucket
TARGET = Block('y', 'categorical', tuple(range(CATEGORIES + 1, CATEGORIES + 5)))  # 3 + missing
COLUMNS = list(range(CATEGORIES + 5))


def test_pooled_estimate_is_unbiased():
    gen = torch.Generator().manual_seed(0)
    dim, classes = 5, 3
    centres = torch.randn(classes, dim, generator=gen, dtype=torch.float64)
    target = torch.randn(1, dim, generator=gen, dtype=torch.float64)
    mixture = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    exact = ((target[0] - (mixture[:, None] * centres).sum(0)) ** 2).sum()
    per_class = 4  # small batches: the plug-in estimate's bias is large here
    y = torch.nn.functional.one_hot(torch.arange(classes).repeat_interleave(per_class)).double()
    counts = y.sum(0)[:, None]
    unbiased, plugin = [], []
    for _ in range(20_000):
        phi = centres.repeat_interleave(per_class, 0) + torch.randn(
            classes * per_class, dim, generator=gen, dtype=torch.float64)
        sums, sq = y.T @ phi, y.T @ (phi * phi).sum(1)
        unbiased.append(float(pooled_mmd_to_target(target, sums, sq, counts, mixture)))
        plugin.append(float(pooled_mmd_to_target(target, sums, sq, counts, mixture, False)))
    # the plug-in estimate is off by sum_c w_c^2 tr Cov / n_c = 0.38 * 5 / 4
    assert abs(np.mean(unbiased) - float(exact)) < 0.05
    assert np.mean(plugin) - float(exact) > 0.3


def _train(objectives, weights, steps=150, seed=1):
    training = Training(steps=steps, batch_size=240, learning_rate=1e-2, latent_dim=8,
                        generator_dims=(64, 64), numeric_noise=0.0, device='cpu')
    generator, history, _ = trained_generator(BLOCKS, COLUMNS, TARGET, weights, objectives,
                                              training, torch.Generator().manual_seed(seed),
                                              verbose=False)
    return generator, history


def _mixture_shares(generator, weights, rows=30_000):
    labels = torch.multinomial(torch.as_tensor(weights), rows, replacement=True,
                               generator=torch.Generator().manual_seed(2))
    return generator.sample(labels, torch.Generator().manual_seed(3))[:, :CATEGORIES].mean(0)


def _shares(seed):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(CATEGORIES, 0.7))


def test_pooled_gradient_pulls_the_mixture_to_the_target():
    fmap = OneWayMap(BLOCKS)
    weights = np.array([0.6, 0.3, 0.1, 0.0])
    truth = _shares(0)
    target = fmap(torch.as_tensor(np.append(np.eye(CATEGORIES), np.zeros((CATEGORIES, 1)), 1)))
    target = (target * torch.as_tensor(truth)[:, None]).sum(0, keepdim=True)
    objective = Objective('One-way', fmap, target, pooled=True,
                          noise_std=torch.zeros(1, dtype=torch.float64))
    assert class_loss_weights([objective], [0, 1, 2]) is None  # says nothing about classes
    generator, history = _train([objective], weights)
    shares = _mixture_shares(generator, weights)
    assert 0.5 * np.abs(shares - truth).sum() < 0.06, shares.round(3)
    assert 'One-way above noise floor' in history.columns


def test_pooled_release_lowers_the_marginal_error_of_noisy_class_targets():
    """Three classes with their own shares; class targets carry noise std s / p_c (the joint
    release divided by the class share), the pooled one std s. Same seeds with and without
    it: the generated marginal is closer to the truth with it."""
    fmap = OneWayMap(BLOCKS)
    weights = np.array([0.5, 0.3, 0.2, 0.0])
    per_class = np.stack([_shares(s) for s in (1, 2, 3)])
    eye = torch.as_tensor(np.append(np.eye(CATEGORIES), np.zeros((CATEGORIES, 1)), 1))
    clean = torch.as_tensor(per_class) @ fmap(eye)  # (3, P)
    s = 0.02
    gen = torch.Generator().manual_seed(4)
    noise_std = torch.tensor([s / w for w in weights[:3]] + [s], dtype=torch.float64)
    noisy = torch.cat([clean + noise_std[:3, None] * torch.randn(clean.shape, generator=gen,
                                                                   dtype=torch.float64),
                       torch.zeros(1, fmap.dim, dtype=torch.float64)])
    pooled_clean = (torch.as_tensor(weights[:3])[:, None] * clean).sum(0, keepdim=True)
    pooled = pooled_clean + s * torch.randn(pooled_clean.shape, generator=gen, dtype=torch.float64)
    truth = weights[:3] @ per_class
    conditional = Objective('Sum', fmap, noisy, noise_std=noise_std)
    one_way = Objective('One-way', fmap, pooled, pooled=True,
                        noise_std=torch.full((1,), s, dtype=torch.float64))
    errors = []
    for objectives in ([conditional], [conditional, one_way]):
        generator, _ = _train(objectives, weights)
        errors.append(0.5 * np.abs(_mixture_shares(generator, weights) - truth).sum())
    assert errors[1] < 0.8 * errors[0], errors


def test_calibration_reads_the_one_way_tables_and_weighs_them_by_their_noise():
    from sdv_dpkme.engines.calibration import one_way_marginals, with_one_way

    blocks = BLOCKS + [Block('v', 'numeric', (CATEGORIES + 5,))]
    fmap = OneWayMap(blocks)
    truth = _shares(5)
    x = torch.zeros(CATEGORIES, CATEGORIES + 6, dtype=torch.float64)
    x[:, :CATEGORIES] = torch.eye(CATEGORIES, dtype=torch.float64)
    target = (fmap(x) * torch.as_tensor(truth)[:, None]).sum(0, keepdim=True)
    objective = Objective('One-way', fmap, target, pooled=True,
                          noise_std=torch.full((1,), 0.01, dtype=torch.float64))
    (table, noise), = one_way_marginals([objective], {'c'}).values()
    assert np.allclose(table.numpy(), truth, atol=1e-6)  # the out-of-domain bucket left out
    assert noise == pytest.approx(0.01 * 2 ** 0.5)  # two columns: each block is phi / sqrt(2)
    other = torch.full((CATEGORIES,), 1 / CATEGORIES)
    combined, std = with_one_way({'c': (other, 3 * noise)}, {'c': (table, noise)})['c']
    # inverse variance: the one-way table (9x the precision) has 0.9 of the weight
    assert np.allclose(combined.numpy(), 0.1 * other.numpy() + 0.9 * truth, atol=1e-6)
    assert std == pytest.approx(noise * 0.9 ** 0.5)
    # noise-free releases (epsilon=inf): a finite mean, no overflow
    combined, std = with_one_way({'c': (other, 0.0)}, {'c': (table, 0.0)})['c']
    assert torch.isfinite(combined).all() and np.isfinite(std)
