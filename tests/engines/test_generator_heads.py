"""The generator's training schedule and its smoothed categorical heads (issue 16)."""

import math

import numpy as np
import pytest
import torch

from sdv_dpkme.engines.adam import Adam
from sdv_dpkme.engines.generator import Objective, TabularGenerator, train_generator
from sdv_dpkme.engines.generator_training import _lr_factor
from sdv_dpkme.features import Block, SumKernelMap

BLOCKS = [Block('c', 'categorical', (0, 1, 2, 3, 4)), Block('x', 'numeric', (5,))]


def generator_with_logits(bias, smoothing):
    """A generator whose output ignores its input: the logits are ``bias``."""
    gen = TabularGenerator(BLOCKS, n_columns=6, n_classes=1, latent_dim=2, hidden=(4,),
                           category_smoothing=smoothing)
    with torch.no_grad():
        for p in gen.parameters():
            p.zero_()
        gen.net[-1].bias[:] = torch.as_tensor(bias, dtype=torch.float32)
    return gen


def heads(gen, rows=3):
    z = torch.zeros(rows, 2)
    y = torch.ones(rows, 1)
    with torch.no_grad():
        return gen(z, y)[0].numpy()


def test_smoothing_floors_every_public_category_and_keeps_a_distribution():
    # one category takes (almost) everything: the other three public ones get a / 4 each, the
    # out-of-domain bucket gets no share of the uniform part
    gen = generator_with_logits([30.0, 0, 0, 0, -30.0, 0.0], smoothing=0.02)
    row = heads(gen)
    np.testing.assert_allclose(row[:4], [0.98 + 0.005, 0.005, 0.005, 0.005], atol=1e-6)
    assert row[4] < 1e-20
    assert row[:5].sum() == pytest.approx(1.0)
    assert row[5] == pytest.approx(0.5)  # numeric heads untouched
    plain = heads(generator_with_logits([30.0, 0, 0, 0, -30.0, 0.0], smoothing=0.0))
    assert plain[1] < 1e-12  # without smoothing the category is (numerically) impossible


def test_sampled_categories_follow_the_smoothed_heads_without_the_out_of_domain_bucket():
    bias = [2.0, 0.0, -25.0, -25.0, 1.0, 0.0]  # categories 2 and 3 ~impossible before smoothing
    gen = generator_with_logits(bias, smoothing=0.04)
    row = heads(gen)
    expected = row[:4] / row[:4].sum()  # the sampler conditions on the public categories
    draws = gen.sample(torch.zeros(60_000, dtype=torch.long), torch.Generator().manual_seed(1))
    freq = draws[:, :5].mean(axis=0)
    assert freq[4] == 0
    assert (draws[:, :5].sum(axis=1) == 1).all()
    np.testing.assert_allclose(freq[:4], expected, atol=4 * math.sqrt(0.25 / 60_000))
    assert freq[2] > 0.005 and freq[3] > 0.005  # a / K = 0.01 each, before conditioning


def test_cosine_schedule_decays_to_zero_and_constant_does_not():
    steps = 40
    cosine = _lr_factor('cosine', steps)
    assert cosine(0) == 1.0
    assert cosine(steps // 2) == pytest.approx(0.5)
    assert cosine(steps - 1) < 0.01
    assert all(cosine(t + 1) <= cosine(t) for t in range(steps))
    assert {_lr_factor('constant', steps)(t) for t in range(steps)} == {1.0}
    with pytest.raises(ValueError, match='schedule'):
        _lr_factor('linear', steps)


@pytest.mark.parametrize('schedule,last', [('constant', 0.05), ('cosine', 0.0)])
def test_training_applies_the_schedule(schedule, last, monkeypatch):
    rates = []
    original = Adam.step

    def step(self, *args, **kwargs):
        rates.append(self.lr)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Adam, 'step', step)
    gen = TabularGenerator(BLOCKS, n_columns=6, n_classes=1, latent_dim=2, hidden=(8,))
    fmap = SumKernelMap(BLOCKS, 4, 0.1)
    target = torch.zeros(1, fmap.dim)
    train_generator(gen, [Objective('Sum', fmap, target)], [0], steps=20, batch_size=16,
                    learning_rate=0.05, device='cpu', torch_generator=torch.Generator().manual_seed(0),
                    verbose=False, schedule=schedule)
    assert len(rates) == 20 and rates[0] == pytest.approx(0.05)
    assert rates[-1] == pytest.approx(last, abs=1e-3)
