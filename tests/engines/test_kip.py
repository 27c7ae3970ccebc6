"""The DP-KIP engine: KRR loss, per-example clipped gradients, their sensitivity, DP-SGD loop."""

import contextlib
import math

import numpy as np
import pytest
import torch

from sdv_dpkme.engines import kip
from sdv_dpkme.features import Block
from sdv_dpkme.features.ntk import FCNTK
from sdv_dpkme.privacy import Ledger
from sdv_dpkme.privacy.testing import fixed_noise

KERNEL = FCNTK()


def _linear(x, y):
    return x.double() @ y.double().T


def _data(n=40, d=5, classes=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, d, generator=g, dtype=torch.float64)
    labels = torch.randint(0, classes, (n,), generator=g)
    return x, labels


def test_centred_labels_sum_to_zero():
    y = kip.centred_one_hot([0, 2, 1], 3)
    assert torch.allclose(y.sum(1), torch.zeros(3, dtype=torch.float64), atol=1e-15)
    assert torch.allclose(y[0], torch.tensor([2 / 3, -1 / 3, -1 / 3], dtype=torch.float64))


def test_krr_prediction_matches_a_direct_solve():
    x, labels = _data()
    support = torch.rand(6, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    sy = kip.centred_one_hot([0, 0, 0, 1, 1, 1], 2)
    lam = 1e-3
    k_ss = (support @ support.T).numpy()
    ridge = lam * np.trace(k_ss) / 6
    expected = (x @ support.T).numpy() @ np.linalg.solve(k_ss + ridge * np.eye(6), sy.numpy())
    got = kip.krr_predict(_linear, support, sy, x, lam)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)
    loss = kip.krr_loss(_linear, support, sy, x, kip.centred_one_hot(labels, 2), lam)
    assert float(loss) == pytest.approx(
        0.5 * np.mean((expected - kip.centred_one_hot(labels, 2).numpy()) ** 2))


def test_per_example_gradients_are_clipped_and_summed():
    x, labels = _data(n=12)
    y = kip.centred_one_hot(labels, 2)
    support = torch.rand(4, 5, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    sy = kip.centred_one_hot([0, 0, 1, 1], 2)
    clip = 1e-3
    expected = torch.zeros_like(support)
    for i in range(len(x)):  # one autograd call per row: the reference for vmap
        s = support.clone().requires_grad_(True)
        kip.krr_loss(KERNEL, s, sy, x[i:i + 1], y[i:i + 1], 1e-6).backward()
        g = s.grad
        expected += g / max(1.0, float(g.norm()) / clip)
    got = kip.clipped_gradient_sum(KERNEL, support, sy, x, y, 1e-6, clip, max_chunk=5)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-12)  # an ill-conditioned solve


@pytest.mark.parametrize('clip', [1e-6, 0.1, 10.0])
def test_replacing_one_row_moves_the_clipped_sum_by_at_most_2c(clip):
    # at any common support (each DP-SGD step's state), whatever the replacing row holds
    x, labels = _data(n=30)
    y = kip.centred_one_hot(labels, 2)
    sy = kip.centred_one_hot([0, 0, 1, 1], 2)
    worst = 0.0
    for seed in range(5):
        support = torch.rand(4, 5, generator=torch.Generator().manual_seed(seed),
                             dtype=torch.float64) * 3 - 1
        base = kip.clipped_gradient_sum(KERNEL, support, sy, x, y, 1e-6, clip, 64)
        for row in (torch.zeros(5), torch.ones(5), support[0].clone(), x[1].clone()):
            for label in (0, 1):
                x2, y2 = x.clone(), y.clone()
                x2[0], y2[0] = row, kip.centred_one_hot([label], 2)[0]
                other = kip.clipped_gradient_sum(KERNEL, support, sy, x2, y2, 1e-6, clip, 64)
                moved = float((base - other).norm())
                assert math.isfinite(moved) and moved <= 2 * clip * (1 + 1e-9)
                worst = max(worst, moved)
    if clip < 1:  # gradients are clipped: a label flip moves the sum by more than C
        assert worst > clip


def test_a_data_row_equal_to_a_support_row_gives_finite_gradients():
    support = torch.rand(4, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    x = torch.cat([support[:2], torch.zeros(1, 5)])
    y = kip.centred_one_hot([0, 1, 0], 2)
    got = kip.clipped_gradient_sum(KERNEL, support, kip.centred_one_hot([0, 0, 1, 1], 2), x, y,
                                   1e-6, 1.0, 64)
    assert torch.isfinite(got).all()


def _settings(**kw):
    args = dict(steps=6, sampling_rate=0.25, clip_norm=0.1, learning_rate=0.05,
                regularization=1e-6, device=torch.device('cpu'))
    args.update(kw)
    return kip.KIPSettings(**args)


def _fit(x, labels, seed=0, noise_seed=4, epsilon=1.0, **kw):
    with fixed_noise(noise_seed) if noise_seed is not None else contextlib.nullcontext():
        ledger = Ledger.open(epsilon, 1e-5)
    out = kip.fit(x.numpy(), labels.numpy(), 2, [2, 3], KERNEL, _settings(**kw), ledger,
                  torch.Generator().manual_seed(seed))
    return out, ledger


def test_support_starts_from_public_noise_not_from_the_rows():
    # a learning rate of ~0 leaves the support where it started: the same for any table
    x, labels = _data()
    (a, a_labels, _), _ = _fit(x, labels, learning_rate=1e-300)
    (b, _, _), _ = _fit(1 - x, 1 - labels, learning_rate=1e-300)
    start, start_labels = kip.initial_support([2, 3], 5, torch.Generator().manual_seed(0))
    torch.testing.assert_close(a, start, rtol=0, atol=1e-12)
    torch.testing.assert_close(b, start, rtol=0, atol=1e-12)
    assert list(a_labels) == list(start_labels) == [0, 0, 1, 1, 1]


def test_centre_init_starts_every_value_undecided_and_rows_distinct():
    start, labels = kip.initial_support([3, 4], 6, torch.Generator().manual_seed(0), 'centre')
    assert ((start - 0.5).abs() <= kip.CENTRE_JITTER / 2).all()
    assert len(torch.unique(start, dim=0)) == 7 and list(labels) == [0] * 3 + [1] * 4
    again, _ = kip.initial_support([3, 4], 6, torch.Generator().manual_seed(0), 'centre')
    torch.testing.assert_close(start, again, rtol=0, atol=0)  # model RNG only
    with pytest.raises(ValueError, match='support_init'):
        kip.initial_support([3], 6, torch.Generator(), 'zeros')


def test_every_step_is_one_accounted_release_even_with_empty_batches():
    x, labels = _data(n=5)
    (support, _, history), ledger = _fit(x, labels, sampling_rate=0.01, steps=7)
    (release,) = ledger.accountant.releases
    assert release.count == 7 and len(history) == 7
    assert release.sensitivity == pytest.approx(0.2) and release.sampling_probability == 0.01
    assert release.dimension == support.numel()
    assert torch.isfinite(support).all()
    # the history holds norms of noisy gradients only, never a loss on private rows
    assert list(history.columns) == ['Step', 'Noisy gradient norm']


def test_fixed_noise_reproduces_and_secret_noise_differs():
    x, labels = _data()
    (a, _, _), _ = _fit(x, labels, noise_seed=4)
    (b, _, _), _ = _fit(x, labels, noise_seed=4)
    (c, _, _), _ = _fit(x, labels, noise_seed=None)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert not torch.equal(a, c)


def test_non_private_fit_learns_the_labels():
    # epsilon=inf: no noise; the distilled support must predict the labels of a separable table
    g = torch.Generator().manual_seed(5)
    x = torch.rand(200, 2, generator=g, dtype=torch.float64)
    labels = (x[:, 0] > 0.5).long()
    (support, support_labels, _), _ = _fit(x, labels, epsilon=math.inf, noise_seed=None,
                                           steps=150, sampling_rate=0.5, learning_rate=0.05)
    sy = kip.centred_one_hot(support_labels, 2)
    pred = kip.krr_predict(KERNEL, support, sy, x, 1e-6).argmax(1)
    assert (pred == labels).double().mean() > 0.8  # chance is 0.5; rounding moves it by a row or two


def test_encoded_rows_are_valid_layout_rows():
    blocks = [Block('a', 'numeric', (0,)), Block('c', 'categorical', (1, 2, 3))]
    target = Block('t', 'categorical', (4, 5, 6))
    support = np.array([[1.7, 0.1, 0.2, 9.0], [-3.0, 0.5, 0.1, 0.0]])
    rows = kip.encoded_rows(support, [1, 0], blocks, target, 7)
    np.testing.assert_array_equal(rows[:, 0], [1.0, 0.0])  # clamped to the unit box
    np.testing.assert_array_equal(rows[:, 1:4], [[0, 1, 0], [1, 0, 0]])  # never out-of-domain
    np.testing.assert_array_equal(rows[:, 4:], [[0, 1, 0], [1, 0, 0]])  # the support's labels


def test_each_step_draws_fresh_noise(monkeypatch):
    # the research code reused one step's noise in every epoch (fold_in with a reset counter)
    from sdv_dpkme.privacy import PoissonSubsampledGaussianMechanism as Mechanism

    noises = []
    release = Mechanism.release

    def spy(self, value):
        out = release(self, value)
        noises.append((out - value).flatten())
        return out

    monkeypatch.setattr(Mechanism, 'release', spy)
    x, labels = _data()
    _fit(x, labels, steps=8)
    assert len(noises) == 8
    assert all(not torch.allclose(noises[i], noises[j])
               for i in range(8) for j in range(i + 1, 8))


@pytest.mark.parametrize('clip', [1e-6, 0.1])
def test_class_weighted_sums_still_move_by_at_most_2c(clip):
    # the replacing row may change class, and with it its weight: still <= 2C
    x, labels = _data(n=30)
    y = kip.centred_one_hot(labels, 2)
    sy = kip.centred_one_hot([0, 0, 1, 1], 2)
    class_weights = torch.tensor([0.3, 1.0], dtype=torch.float64)
    support = torch.rand(4, 5, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    base = kip.clipped_gradient_sum(KERNEL, support, sy, x, y, 1e-6, clip, 64,
                                    class_weights[labels])
    plain = kip.clipped_gradient_sum(KERNEL, support, sy, x, y, 1e-6, clip, 64)
    assert not torch.allclose(base, plain)  # the weights do act
    for row in (torch.zeros(5), torch.ones(5), support[2].clone()):
        for label in (0, 1):
            x2, y2, l2 = x.clone(), y.clone(), labels.clone()
            x2[0], y2[0], l2[0] = row, kip.centred_one_hot([label], 2)[0], label
            other = kip.clipped_gradient_sum(KERNEL, support, sy, x2, y2, 1e-6, clip, 64,
                                             class_weights[l2])
            assert float((base - other).norm()) <= 2 * clip * (1 + 1e-9)


def test_row_weights_above_one_are_refused():
    x, labels = _data(n=4)
    with pytest.raises(ValueError, match=r'\[0, 1\]'):
        kip.clipped_gradient_sum(KERNEL, x[:2], kip.centred_one_hot([0, 1], 2), x,
                                 kip.centred_one_hot(labels, 2), 1e-6, 0.1, 64,
                                 torch.full((4,), 1.5, dtype=torch.float64))


def test_balance_weights_are_capped_and_scaled_by_the_supported_buckets():
    # buckets: common, rare, out-of-domain (no support rows, noisy count may be negative)
    w = kip.balance_weights([900.0, 100.0, -3.0], [True, True, False], 1.0)
    np.testing.assert_allclose(w, [100 / 900, 1.0, 1.0])
    w = kip.balance_weights([900.0, 100.0, 50.0], [True, True, False], 0.5)
    np.testing.assert_allclose(w, [(100 / 900) ** 0.5, 1.0, 1.0])
    assert np.all(kip.balance_weights([5.0, -2.0], [True, True], 1.0) <= 1.0)
    np.testing.assert_allclose(kip.balance_weights([900.0, 100.0], [True, True], 0.0), [1, 1])


def test_class_counts_are_one_gaussian_release_before_the_dp_sgd_group():
    x, labels = _data(n=200)
    labels = (torch.rand(200, generator=torch.Generator().manual_seed(9)) < 0.2).long()
    (_, _, history), ledger = _fit(x, labels, class_balance=1.0, epsilon=50.0)
    counts, steps = ledger.accountant.releases
    assert counts.name == 'kip_class_counts' and steps.name == 'kip_gradients'
    assert counts.sensitivity == pytest.approx(math.sqrt(2)) and counts.dimension == 2
    # neighbouring tables (one row changes class) move the count vector by exactly sqrt(2)
    flipped = labels.clone()
    flipped[0] = 1 - flipped[0]
    assert np.linalg.norm(np.bincount(labels, minlength=2) - np.bincount(flipped, minlength=2)) \
        == pytest.approx(math.sqrt(2))
    weights = history.attrs['class_weights']
    n1 = int(labels.sum())
    assert weights[1] == 1.0 and weights[0] == pytest.approx(n1 / (200 - n1), rel=0.3)
    assert ledger.accountant.epsilon_spent() <= 50.0 * (1 + 1e-9)
