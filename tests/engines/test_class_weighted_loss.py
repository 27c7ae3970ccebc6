"""The generator's loss weights each class by the public noise of its targets (issue 42).

A class-conditional target is the noisy joint release divided by the class's proportion p_c, so
its noise has std sigma / p_c. On FARS (8 classes, one of about 1 row in 8,000 that the proportion
noise lifted to p = 0.003) the unweighted sum over classes let that class's pure-noise target
drive the layers every class shares: RACE 'White' came out at 0.6 % instead of 19 %.
"""

import numpy as np
import pytest
import torch

from sdv_dpkme.engines.generator import Objective, class_loss_weights, mmd_to_target
from sdv_dpkme.engines.kme_training import Training, trained_generator
from sdv_dpkme.features import Block, SumKernelMap

CATEGORIES = 8
BLOCKS = [Block('c', 'categorical', tuple(range(CATEGORIES + 1)))]  # + out-of-domain bucket
TARGET = Block('y', 'categorical', (CATEGORIES + 1, CATEGORIES + 2, CATEGORIES + 3))
SHARES = np.array([0.6, 0.3, 0.1] + [0.0] * (CATEGORIES - 3))


def _embedding(fmap, shares):
    rows = torch.zeros(CATEGORIES, CATEGORIES + 1, dtype=torch.float64)
    rows[:, :CATEGORIES] = torch.eye(CATEGORIES, dtype=torch.float64)
    weights = torch.as_tensor(shares, dtype=torch.float64)[:, None]
    return (fmap(rows) * weights).sum(0)


def test_a_rare_noisy_class_does_not_drive_the_shared_generator_issue42():
    fmap = SumKernelMap(BLOCKS, 4, 0.05)
    clean = _embedding(fmap, SHARES)
    # released proportions: class 0 holds nearly every row, class 1 is a handful of rows; the
    # joint release's noise (std 0.01 per feature) is 1 / p_c larger in each class's target
    weights = np.array([0.997, 0.003, 0.0])
    noise = 0.01 / torch.as_tensor(np.where(weights > 0, weights, 1.0))
    gen = torch.Generator().manual_seed(0)
    target = torch.stack([clean + noise[c] * torch.randn(fmap.dim, generator=gen,
                                                         dtype=torch.float64)
                          for c in range(3)])
    objective = Objective('Sum kernel', fmap, target, noise_std=noise)
    training = Training(steps=150, batch_size=256, learning_rate=1e-2, latent_dim=8,
                        generator_dims=(64, 64), numeric_noise=0.0, device='cpu')
    generator, _, _ = trained_generator(BLOCKS, list(range(CATEGORIES + 4)), TARGET, weights,
                                        [objective], training, torch.Generator().manual_seed(1),
                                        verbose=False)
    rows = generator.sample(torch.zeros(20_000, dtype=torch.long), torch.Generator().manual_seed(2))
    shares = rows[:, :CATEGORIES].mean(0)
    # class 0's own target is accurate (noise 0.01 per feature): its shares follow it; before
    # issue 42 they were all on the category where class 1's noise peaked (TV 1.0)
    assert 0.5 * np.abs(shares - SHARES).sum() < 0.1, shares.round(3)


def test_class_weights_scale_each_class_term():
    target = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    sums = torch.tensor([[0.0, 0.0], [0.0, 0.0]])
    counts = torch.ones(2, 1)
    sq = torch.zeros(2)
    plain = mmd_to_target(target, sums, sq, counts, unbiased=False)
    weighted = mmd_to_target(target, sums, sq, counts, unbiased=False,
                             class_weights=torch.tensor([0.25, 0.0]))
    assert plain.item() == 2.0 and weighted.item() == 0.25


def test_a_well_measured_minority_class_keeps_its_weight():
    # Adult-like: two classes, 24 % minority, noise small next to the signal bound. Weighting by
    # p_c^2 (the first fix) gave the minority a tenth of the majority's pull and cost TSTR.
    fmap = SumKernelMap(BLOCKS, 4, 0.05)
    p = torch.tensor([0.76, 0.24, 1.0], dtype=torch.float64)  # last: unsampled bucket
    noise = 1e-3 / p
    objective = Objective('Sum kernel', fmap, torch.zeros(3, fmap.dim), noise_std=noise)
    weights = class_loss_weights([objective], [0, 1])
    assert weights[0] == 1.0 and weights[1] > 0.99
    # a class of a few rows: its target is nearly all noise, its weight about S / N_c
    noisy = Objective('Sum kernel', fmap, torch.zeros(3, fmap.dim),
                      noise_std=torch.tensor([0.01 / 0.997, 0.01 / 0.003, 1.0]))
    weights = class_loss_weights([noisy], [0, 1])
    energy = fmap.dim * (0.01 / 0.003) ** 2
    assert weights[0] == 1.0 and weights[1] == pytest.approx(1 / (1 + energy), rel=0.05)


def test_without_known_noise_every_class_weighs_the_same():
    fmap = SumKernelMap(BLOCKS, 4, 0.05)
    assert class_loss_weights([Objective('Sum kernel', fmap, lambda step: None)], [0, 1]) is None
