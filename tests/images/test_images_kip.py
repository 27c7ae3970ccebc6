"""DP-KIP-ScatterNet: closed-form per-example gradients, clipping and sensitivity, accounting,
saved models, shapes and input errors."""

import math
import pickle

import numpy as np
import pytest
import torch
from torch.func import grad, vmap

from sdv_dpkme.engines.kip import centred_one_hot, clip_linear_feature_gradients, krr_loss
from sdv_dpkme.images import DPKIPScatterNet, ImageInputError
from sdv_dpkme.privacy.testing import fixed_noise
from tests.privacy.test_pld import _dp_accounting_epsilon
from tests.privacy.test_poisson import _bbghs_conversion, _gdp_epsilon, _schedule_rdp

pytestmark = pytest.mark.filterwarnings('ignore::RuntimeWarning')  # autodp's optimiser warnings

# pixel_prior=None: these tests read DP-SGD's release alone (test_images_pixel_prior: the prior)
TINY = dict(images_per_class=2, epochs=1, batch_size=300, clip_norm=1e-2, learning_rate=0.05,
            pixel_range=(0, 16), random_state=0, mechanism='dp-sgd', pixel_prior=None)


def _problem(seed=0, m=6, p=20, b=7, k=3):
    g = torch.Generator().manual_seed(seed)
    f = torch.randn(m, p, generator=g, dtype=torch.float64)
    phi = torch.randn(b, p, generator=g, dtype=torch.float64)
    ys = centred_one_hot(torch.arange(m) % k, k)
    y = centred_one_hot(torch.randint(0, k, (b,), generator=g), k)
    return f, ys, phi, y


def _autograd(f, ys, phi, y, reg):
    def loss(support, x, yy):
        return krr_loss(lambda a, c: a @ c.T, support, ys, x[None], yy[None], reg)
    return vmap(grad(loss), in_dims=(None, 0, 0))(f, phi, y)


@pytest.mark.parametrize('reg', [0.0, 1e-3, 0.5])
def test_closed_form_gradients_match_autograd(reg):
    f, ys, phi, y = _problem()
    g = _autograd(f, ys, phi, y, reg)
    total, norms = clip_linear_feature_gradients(f, ys, phi, y, reg, clip_norm=1e9)
    assert torch.allclose(norms, g.flatten(1).norm(dim=1), rtol=1e-8, atol=1e-12)
    assert torch.allclose(total, g.sum(0), atol=1e-10)


def test_clipping_bounds_every_contribution_even_for_extreme_inputs():
    f, ys, phi, y = _problem(m=6, p=20, b=5)
    phi = torch.cat([phi * 1e6, torch.zeros(1, 20), phi[:1] * 1e-9])  # huge, zero, tiny
    y = torch.cat([y, y[:2]])
    c = 0.01
    g = _autograd(f, ys, phi, y, 1e-3)
    for i in range(len(phi)):  # each example alone: its clipped contribution
        alone, norm = clip_linear_feature_gradients(f, ys, phi[i:i + 1], y[i:i + 1], 1e-3, c)
        assert float(alone.norm()) <= c * (1 + 1e-9)
        expected = g[i] * min(1.0, c / max(float(g[i].norm()), 1e-300))
        assert torch.allclose(alone, expected, atol=1e-12)
    assert float(g[0].norm()) > c  # the huge one was really clipped


def test_neighbouring_batches_move_the_clipped_sum_by_at_most_2c():
    f, ys, phi, y = _problem(b=50)
    c = 0.05
    base, _ = clip_linear_feature_gradients(f, ys, phi, y, 1e-3, c)
    worst = 0.0
    for scale in (1e-6, 1.0, 1e6):
        other_phi, other_y = phi.clone(), y.clone()
        other_phi[0] = -phi[0] * scale  # replace one example by an adversarial one
        other_y[0] = ys[1]
        moved, _ = clip_linear_feature_gradients(f, ys, other_phi, other_y, 1e-3, c)
        worst = max(worst, float((moved - base).norm()))
    assert 0 < worst <= 2 * c * (1 + 1e-9)


@pytest.fixture(scope='module')
def fitted(digits):
    x, y = digits
    with fixed_noise(3):
        return DPKIPScatterNet(1.0, 1e-5, **TINY).fit(x[:1500], y[:1500])


def test_shapes_dtypes_and_report(fitted, digits):
    m = fitted
    assert m.distilled_images_.shape == (20, 8, 8) and m.distilled_images_.dtype == np.float32
    assert m.distilled_labels_.dtype == np.int64
    lo, hi = TINY['pixel_range']  # projected after every step, as under 'moments'
    assert m.distilled_images_.min() >= lo and m.distilled_images_.max() <= hi
    assert np.array_equal(m.distilled_labels_, np.repeat(np.arange(10), 2))
    (release,) = m.privacy_report_.releases
    assert release.name == 'kip_feature_gradients'
    assert release.sensitivity == pytest.approx(2 * TINY['clip_norm'])
    assert release.count == m.n_steps_ == math.ceil(1 / (300 / 1500))
    assert release.dimension == 20 * 81 * 2 * 2
    assert m.privacy_report_.epsilon_spent == math.inf  # fixed noise seed: reported as void
    pred = m.predict(digits[0][1500:])
    assert pred.shape == (297,) and set(np.unique(pred)) <= set(range(10))


def test_epsilon_recomputed_independently(digits):
    x, y = digits
    m = DPKIPScatterNet(1.0, 1e-5, **{**TINY, 'epochs': 2}).fit(x[:1500], y[:1500])
    report = m.privacy_report_
    (r,) = report.releases
    assert r.noise_std == pytest.approx(r.noise_multiplier * 2 * TINY['clip_norm'])
    assert r.sampling_probability == pytest.approx(300 / 1500)
    # dp-accounting's PLD (REPLACE_ONE) built here from the release row; the old accountant's
    # RDP (min of Theorem 9 and the triangle bound, numpy) and the exact Gaussian bound are above
    eps = _dp_accounting_epsilon(report.releases, report.gaussian_delta)
    alphas, rdp = _schedule_rdp(r.noise_multiplier, r.sampling_probability, r.count)
    exact = _gdp_epsilon(math.sqrt(r.count) / r.noise_multiplier, 1e-5)
    assert eps < min(_bbghs_conversion(alphas, rdp, 1e-5), exact)
    assert report.epsilon_calibrated == pytest.approx(eps, rel=1e-9)
    assert 1 - 1e-3 <= eps <= 1.0  # calibrated to spend the budget, not below it
    assert report.bound_used == 'PLD'


def test_saved_model_holds_no_private_image_or_statistic(digits):
    x, y = digits
    x, y = x[:1500].copy(), y[:1500].copy()
    rng = np.random.default_rng(7)
    canary = rng.integers(0, 17, size=(8, 8)).astype(np.float64)
    canary[0, :4] = [16, 0, 16, 0]
    x[0] = canary
    m = DPKIPScatterNet(1.0, 1e-5, **TINY).fit(x, y)
    blob = pickle.dumps(m)
    scaled = canary / 16.0
    for arr in (canary, scaled):
        for dtype in (np.float64, np.float32):
            assert arr.astype(dtype).tobytes() not in blob
            assert arr.astype(dtype)[2:4].tobytes() not in blob  # any two full rows
    # nothing with one entry per private image or the private feature matrix
    for value in m.__dict__.values():
        assert np.shape(value)[:1] not in ((1500,),)
    loaded = pickle.loads(blob)
    assert np.array_equal(loaded.predict(x[:50]), m.predict(x[:50]))


def test_non_private_reference_learns(digits):
    x, y = digits
    m = DPKIPScatterNet(math.inf, 1e-5, **{**TINY, 'epochs': 4, 'batch_size': 500,
                                           'learning_rate': 0.05}).fit(x[:1500], y[:1500])
    init = DPKIPScatterNet(math.inf, 1e-5, **{**TINY, 'learning_rate': 1e-12}).fit(
        x[:1500], y[:1500])
    assert m.score(x[1500:], y[1500:]) > init.score(x[1500:], y[1500:]) + 0.2


def test_device_auto_runs_on_what_torch_sees(digits):
    x, y = digits
    m = DPKIPScatterNet(1.0, 1e-5, device='auto', **{**TINY, 'epochs': 0.2}).fit(x[:600], y[:600])
    assert m.distilled_images_.shape == (20, 8, 8)


@pytest.mark.parametrize('change,match', [
    (dict(X=np.zeros((10, 64))), 'shape'),
    (dict(X=np.full((100, 8, 8), np.nan)), 'NaN'),
    (dict(y=np.arange(100) % 11), r'labels 0\.\.9'),
    (dict(y=-(np.arange(100) % 10)), r'labels 0\.\.9'),
    (dict(y=np.arange(100) % 10 + 0.5), 'integer labels'),
    (dict(y=np.arange(99) % 10), 'one label per image'),
    (dict(kw=dict(epsilon=0)), 'epsilon must be > 0'),
    (dict(kw=dict(epsilon=-1)), 'epsilon must be > 0'),
    (dict(kw=dict(images_per_class=0)), 'images_per_class'),
    (dict(kw=dict(pixel_range=(1, 0))), 'pixel_range'),
    (dict(kw=dict(clip_norm=0)), 'clip_norm'),
])
def test_bad_inputs_get_clear_errors(change, match):
    x = change.get('X', np.zeros((100, 8, 8)))
    y = change.get('y', np.arange(100) % 10)
    kw = {**TINY, 'epsilon': 1.0, **change.get('kw', {})}
    with pytest.raises(ImageInputError, match=match):
        DPKIPScatterNet(**kw).fit(x, y)


def test_classes_with_fewer_images_than_the_support_fit():
    """3 images a class (class 3 none) and 4 support images a class: the support size is public
    and every class gets its support, whatever the private counts (issue 40)."""
    x, y = np.zeros((30, 8, 8)), np.where(np.arange(30) % 10 == 3, 4, np.arange(30) % 10)
    m = DPKIPScatterNet(1.0, **{**TINY, 'images_per_class': 4}).fit(x, y)
    assert np.bincount(m.distilled_labels_).tolist() == [4] * 10


@pytest.mark.parametrize('value', [17.0, -1.0, np.inf])
def test_pixels_outside_the_range_are_clipped_with_a_warning(value):
    x, y = np.full((100, 8, 8), 3.0), np.arange(100) % 10
    x[5, 2, 2] = value
    with pytest.warns(UserWarning, match=r'outside the declared pixel_range \[0, 16\]; they are '
                                         'clipped'):
        DPKIPScatterNet(1.0, **TINY).fit(x, y)


def test_label_errors_quote_no_label():
    y = np.arange(100) % 10
    y[7] = 4711  # a private label out of range
    with pytest.raises(ImageInputError, match=r'labels 0\.\.9') as caught:
        DPKIPScatterNet(1.0, **TINY).fit(np.zeros((100, 8, 8)), y)
    assert '4711' not in str(caught.value)


def test_predict_checks_the_fitted_shape(fitted):
    with pytest.raises(ImageInputError, match='fitted on'):
        fitted.predict(np.zeros((3, 28, 28)))
