"""DP-MERF / DP-HP image generators: releases, accounting, samples, saved models, input errors."""

import math
import pickle

import numpy as np
import pytest

from sdv_dpkme.images import DPHPImageGenerator, DPMERFImageGenerator, ImageInputError

pytestmark = pytest.mark.filterwarnings('ignore::RuntimeWarning')

FAST = {
    DPMERFImageGenerator: dict(n_features=64, length_scale=3.0),
    DPHPImageGenerator: dict(order=3, sigma2=0.2),
}
COMMON = dict(steps=5, batch_size=50, latent_dim=4, generator_dims=(16,), pixel_range=(0, 16),
              random_state=0)
GROUP = {DPMERFImageGenerator: 'embedding', DPHPImageGenerator: 'sum_kernel'}


def _make(cls, epsilon=1.0, **kw):
    return cls(epsilon, 1e-5, **{**FAST[cls], **COMMON, **kw})


@pytest.mark.parametrize('cls', [DPMERFImageGenerator, DPHPImageGenerator])
def test_fit_returns_self_and_samples_have_shape_dtype_range(cls, digits):
    x, y = digits
    gen = _make(cls)
    assert gen.fit(x[:400], y[:400]) is gen
    xs, ys = gen.sample(30, random_state=1)
    assert xs.shape == (30, 8, 8) and xs.dtype == np.float32
    assert ys.shape == (30,) and ys.dtype == np.int64 and set(ys) <= set(range(10))
    assert xs.min() >= 0 and xs.max() <= 16
    again, _ = gen.sample(30, random_state=1)
    assert np.array_equal(xs, again)
    x4 = x[:400, None]  # (n, C, H, W) stays 4-D
    xs4, _ = _make(cls).fit(x4, y[:400]).sample(3)
    assert xs4.shape == (3, 1, 8, 8)


@pytest.mark.parametrize('cls', [DPMERFImageGenerator, DPHPImageGenerator])
def test_releases_sensitivities_and_independent_epsilon(cls, digits):
    from autodp import mechanism_zoo  # noqa: F401  (first, autodp #51)
    from autodp import calibrator_zoo  # noqa: F401

    x, y = digits
    n = 400
    gen = _make(cls).fit(x[:n], y[:n])
    report = gen.privacy_report_
    by_name = {r.name: r for r in report.releases}
    assert set(by_name) == {'class_proportions', GROUP[cls]}
    assert by_name['class_proportions'].sensitivity == pytest.approx(math.sqrt(2) / n)
    assert by_name[GROUP[cls]].sensitivity == pytest.approx(2 / n)
    # two plain Gaussian releases compose exactly to one with sigma_eff = (sum sigma^-2)^-1/2
    sigma_eff = sum(r.noise_multiplier ** -2 for r in report.releases) ** -0.5
    eps = mechanism_zoo.ExactGaussianMechanism(sigma=sigma_eff).get_approxDP(1e-5)
    assert eps <= 1.0 * (1 + 1e-6) and eps == pytest.approx(1.0, rel=1e-3)
    assert report.epsilon_spent == pytest.approx(eps, rel=1e-6)


@pytest.mark.parametrize('cls', [DPMERFImageGenerator, DPHPImageGenerator])
def test_saved_generator_holds_no_private_image_or_statistic(cls, digits):
    x, y = digits
    x, y = x[:400].copy(), y[:400].copy()
    canary = np.random.default_rng(3).integers(0, 17, size=(8, 8)).astype(np.float64)
    x[0] = canary
    gen = _make(cls).fit(x, y)
    blob = pickle.dumps(gen)
    for arr in (canary, canary / 16.0):
        for dtype in (np.float64, np.float32):
            assert arr.astype(dtype).tobytes() not in blob
            assert arr.astype(dtype).ravel()[:16].tobytes() not in blob
    counts = np.bincount(y, minlength=10)
    assert (counts / len(y)).astype(np.float64).tobytes() not in blob  # exact proportions
    assert not hasattr(gen, 'embedding_') and '_stats' not in gen.__dict__
    loaded = pickle.loads(blob)
    assert np.array_equal(loaded.sample(5, random_state=2)[0], gen.sample(5, random_state=2)[0])
    state = gen.__getstate__()
    state['_sdv_dpkme_format'] = 0  # another format is refused: no shims, refit
    with pytest.raises(ImageInputError, match='older sdv_dpkme.*Fit it again'):
        cls.__new__(cls).__setstate__(state)


@pytest.mark.parametrize('cls', [DPMERFImageGenerator, DPHPImageGenerator])
@pytest.mark.parametrize('change,match', [
    (dict(X=np.zeros((50, 64))), 'shape'),
    (dict(X=np.where(np.arange(50 * 64).reshape(50, 8, 8) == 77, np.nan, 1.0)), 'NaN'),
    (dict(y=np.arange(50) % 10 + 10), r'labels 0\.\.9'),
    (dict(kw=dict(epsilon=0.0)), 'epsilon must be > 0'),
    (dict(kw=dict(steps=0)), 'steps'),
])
def test_bad_inputs_get_clear_errors(cls, change, match):
    x = change.get('X', np.zeros((50, 8, 8)))
    y = change.get('y', np.arange(50) % 10)
    kw = {'epsilon': 1.0, **change.get('kw', {})}
    with pytest.raises(ImageInputError, match=match):
        _make(cls, **kw).fit(x, y)


@pytest.mark.parametrize('cls', [DPMERFImageGenerator, DPHPImageGenerator])
def test_pixels_outside_the_range_are_clipped_and_an_empty_class_fits(cls):
    x = np.full((50, 8, 8), 8.0)
    x[3] = 16.5  # outside the declared (0, 16)
    y = np.where(np.arange(50) % 10 == 7, 0, np.arange(50) % 10)  # class 7 empty
    with pytest.warns(UserWarning, match='outside the declared pixel_range .* clipped'):
        gen = _make(cls).fit(x, y)
    assert gen.class_weights_.shape == (10,)
    images, _ = gen.sample(20, random_state=0)
    assert images.min() >= 0 and images.max() <= 16


def test_sample_before_fit_is_an_error():
    with pytest.raises(ImageInputError, match='Fit'):
        _make(DPMERFImageGenerator).sample(3)
