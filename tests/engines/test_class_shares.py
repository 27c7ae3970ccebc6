"""Class shares from every release that carries them (issue 42: class shares at tiny n)."""

import types

import numpy as np
import pandas as pd
import pytest
import torch

from sdv_dpkme.engines import kme, kme_plan
from sdv_dpkme.engines.class_shares import combined_shares, nonnegative_mean, share_sets
from sdv_dpkme.engines.kernel_terms import shared_terms
from sdv_dpkme.engines.kme_plan import KernelTerm
from sdv_dpkme.features import (
    Block,
    FourierKernelMap,
    FourierMarginalMap,
    OneWayMap,
    PairwiseKernelMap,
    ProductKernelMap,
    SumKernelMap,
)
from sdv_dpkme.privacy import GaussianMechanism, Ledger, NoiseSource, PrivacyAccountant
from sdv_dpkme.privacy.recorder import recording

# encoded layout: target (3 classes + out-of-domain), a (3), b (5) one-hot, c numeric,
# d nullable numeric [value, null]
TARGET = Block('y', 'categorical', (0, 1, 2, 3))
BLOCKS = [Block('a', 'categorical', (4, 5, 6)), Block('b', 'categorical', (7, 8, 9, 10, 11)),
          Block('c', 'numeric', (12,)), Block('d', 'numeric', (13, 14))]
SHARES = {'class_proportions': 0.01, 'sum_kernel': 0.4, 'marginals': 0.2, 'pairs': 0.39}
TRUE = np.array([0.6, 0.3, 0.1])


def table(n, seed=0):
    """(x, labels): a valid encoded table with classes drawn with shares ``TRUE``."""
    g = np.random.default_rng(seed)
    labels = g.choice(3, size=n, p=TRUE)
    x = np.zeros((n, 15))
    x[np.arange(n), labels] = 1.0
    x[np.arange(n), 4 + g.integers(0, 3, n)] = 1.0
    x[np.arange(n), 7 + (labels + g.integers(0, 2, n)) % 5] = 1.0
    x[:, 12] = g.uniform(size=n)
    null = g.uniform(size=n) < 0.3
    x[:, 13] = np.where(null, 0.0, g.uniform(size=n))
    x[:, 14] = null
    return x, labels


def every_map():
    return [SumKernelMap(BLOCKS, 10, 0.05), ProductKernelMap(BLOCKS[:2], 5, 0.05),
            PairwiseKernelMap(BLOCKS, 0.1), FourierMarginalMap(BLOCKS, 0.05),
            OneWayMap(BLOCKS, 0.05), ProductKernelMap(BLOCKS[1:3], 5, 0.05),
            FourierKernelMap(BLOCKS, 20, 0.3, generator=torch.Generator().manual_seed(0))]


@pytest.mark.parametrize('k', range(7))
def test_every_share_set_sums_to_its_constant_times_the_class_count(k):
    fmap = every_map()[k]
    x, labels = table(300)
    y = torch.nn.functional.one_hot(torch.as_tensor(labels), 4).double()
    sums = fmap.class_sums(torch.as_tensor(x), y, project=True)
    counts = np.bincount(labels, minlength=4)
    sets = share_sets(fmap)
    expected = {0: 2, 1: 1, 2: 1, 3: 1, 4: 2, 5: 0, 6: 0}[k]  # which maps carry shares
    assert len(sets) == expected
    covered = torch.cat([index for index, _ in sets]) if sets else torch.zeros(0)
    assert len(set(covered.tolist())) == len(covered)  # disjoint: independent noise
    for index, scale in sets:
        np.testing.assert_allclose(sums[:, index].sum(1).numpy() / scale, counts, rtol=1e-9)


def _ledger(epsilon, seed):
    accountant = PrivacyAccountant(epsilon, 1e-5)
    noise = NoiseSource(seed)
    return Ledger(accountant, noise, GaussianMechanism(accountant, noise))


def _terms():
    return [KernelTerm('sum_kernel', 'Sum kernel', SumKernelMap(BLOCKS, 10, 0.05)),
            *shared_terms(BLOCKS, 0.05, 1.0, 0.1, 1.0, 10**6)]


def _fit_weights(x, labels, epsilon, seed, monkeypatch):
    """(weights the fit trains and samples with, weights from the lone class release)."""
    seen = {}

    def no_training(blocks, columns, target, weights, objectives, training, rng, verbose):
        seen['weights'] = weights
        return types.SimpleNamespace(loss_values=pd.DataFrame())

    monkeypatch.setattr(kme, 'train', no_training)
    training = kme.Training(3, 64, 1e-2, 4, (8,), 0.0, torch.device('cpu'))
    with recording() as recorder:
        model = kme.fit(x, labels, BLOCKS, TARGET, [f'c{i}' for i in range(15)],
                        _ledger(epsilon, seed), _terms(), SHARES, training,
                        torch.Generator().manual_seed(0), False)
    lone = kme_plan.class_weights(recorder.releases[0].noisy)[0]
    # no release beyond those the plan made: the combination is post-processing
    assert [r.name for r in recorder.releases] == ['class_proportions', 'sum_kernel',
                                                   'marginals', 'pairs']
    return seen['weights'], lone, model


def test_the_fit_combines_the_class_shares_closer_to_the_truth_than_the_lone_release(
        monkeypatch):
    x, labels = table(200)
    truth = np.append(np.bincount(labels, minlength=3) / len(labels), 0.0)
    fit_err, lone_err = [], []
    for seed in range(40):
        weights, lone, _ = _fit_weights(x, labels, 0.3, seed, monkeypatch)
        fit_err.append(((weights - truth) ** 2).sum())
        lone_err.append(((lone - truth) ** 2).sum())
    # the sum kernel's two one-hot blocks and the categorical pair hold far more precision
    # than the 1 % share of 'class_proportions'
    assert np.mean(fit_err) < 0.5 * np.mean(lone_err)


def test_the_plan_entry_says_how_the_shares_were_estimated(monkeypatch):
    x, labels = table(200)
    _, _, model = _fit_weights(x, labels, 1.0, 0, monkeypatch)
    entry = next(e for e in model.release_plan if e.group == 'class_proportions')
    assert 'combined by inverse variance with 4 per-class totals' in entry.reason
    combined_std, lone_std = (float(v) for v in
                              entry.reason.split('noise std per share ')[1]
                              .split(';')[0].split(' instead of '))
    assert combined_std < 0.5 * lone_std


def test_combined_shares_weigh_by_inverse_variance():
    fmap = SumKernelMap(BLOCKS[:1], 10, 0.05)  # one block of width 3: sum = p_c
    noisy = torch.tensor([[0.3, 0.2, 0.1], [0.1, 0.1, 0.2]], dtype=torch.float64)
    est, std, count = combined_shares([0.2, 0.8], 0.1 * 3 ** 0.5, [(fmap, noisy, 0.1, False)])
    # two estimates of equal variance 0.03: their mean
    np.testing.assert_allclose(est, [(0.2 + 0.6) / 2, (0.8 + 0.4) / 2])
    assert std == pytest.approx((0.03 / 2) ** 0.5) and count == 2
    pooled = combined_shares([0.2, 0.8], 0.1, [(fmap, noisy[:1], 0.1, True)])
    np.testing.assert_allclose(pooled[0], [0.2, 0.8])  # a pooled release carries no share
    exact = combined_shares([0.2, 0.8], 0.0, [(fmap, noisy, 0.1, False)])
    np.testing.assert_allclose(exact[0], [0.2, 0.8])  # a noiseless release is exact


def test_a_declared_class_is_never_dropped_while_its_estimate_is_within_the_noise():
    std = 0.05
    weights = kme_plan.noisy_class_weights(np.array([0.7, 0.35, -0.03]), std=std)
    assert weights[2] > 0.01  # kept near the noise level, not at 0
    assert weights[2] < 0.05
    # a share far above its noise is left as it is (up to the renormalisation)
    shifted = nonnegative_mean(np.array([0.7, 0.35, -0.03]), std)
    np.testing.assert_allclose(shifted[:2], [0.7, 0.35], atol=1e-9)
    assert nonnegative_mean(np.array([0.0]), std)[0] == pytest.approx(0.8 * std, rel=0.01)
    assert np.all(np.isfinite(nonnegative_mean(np.array([-50.0, 1e-9]), 1e-3)))
    # without noise, or when the noise is negligible, the old clip-and-drop holds
    np.testing.assert_allclose(kme_plan.noisy_class_weights(np.array([0.3, -0.1, 0.1])),
                               [0.75, 0, 0.25])
    np.testing.assert_allclose(
        kme_plan.noisy_class_weights(np.array([0.3, -0.1, 0.1]), std=1e-6), [0.75, 0, 0.25])


def test_the_privacy_report_says_how_the_class_shares_were_estimated():
    from tests.conftest import KME_CLASSES, make_table
    from tests.synthesizers.test_contract import build

    synth = build(KME_CLASSES[0], target_column='label')
    synth.fit({'t': make_table()})
    entry = next(e for e in synth.get_privacy_report().plan if e['group'] == 'class_proportions')
    assert 'combined by inverse variance' in entry['reason']
    assert 'noise std per share' in entry['reason']
