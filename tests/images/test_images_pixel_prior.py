"""The pixel prior's release (per-class pixel sums and counts): its sensitivity on extreme and
neighbouring images, its place in the ledger and the privacy report, what a fit keeps of it, and
its settings' errors (issue 43)."""

import math
import pickle
import warnings

import numpy as np
import pytest
import torch

from sdv_dpkme.images import DPKIPScatterNet, ImageInputError, PixelPrior
from sdv_dpkme.images import pixel_prior as pp
from sdv_dpkme.privacy import Ledger
from sdv_dpkme.privacy.testing import fixed_noise

pytestmark = pytest.mark.filterwarnings('ignore::RuntimeWarning')  # autodp's optimiser warnings

FAST = dict(images_per_class=2, moment_steps=5, pixel_range=(0, 16), random_state=0)
WEIGHTS = [0.1, 0.5, pp.PixelPrior().pixel_weight, 0.99]


def _moved(x, y, other_x, other_y, k, weight):
    v = pp.joint_rows(torch.as_tensor(x), y, k, weight)
    w = pp.joint_rows(torch.as_tensor(other_x), other_y, k, weight)
    return float((v - w).norm())


@pytest.mark.parametrize('weight', WEIGHTS)
def test_sensitivity_holds_on_extreme_images_and_is_reached(weight):
    """Max-norm (all ones), all-zero and checkerboard images, replaced within a class and across
    classes: the released vector moves by at most sqrt(2), and exactly sqrt(2) for two max-norm
    images with different labels (so the bound is not loose by a factor)."""
    d = 6
    ones, zeros = torch.ones(1, d, d, dtype=torch.float64), torch.zeros(1, d, d, dtype=torch.float64)
    board = torch.from_numpy(np.indices((d, d)).sum(0) % 2).double()[None]
    rng = np.random.default_rng(0)
    base = torch.from_numpy(rng.random((30, d, d)))
    labels = rng.integers(0, 3, 30)
    worst = 0.0
    for image in (ones, zeros, board, 1 - board):
        for other in (ones, zeros, board, 1 - board):
            for la, lb in ((0, 0), (0, 2)):
                x, y = base.clone(), labels.copy()
                x[0], y[0] = image[0], la
                ox, oy = x.clone(), y.copy()
                ox[0], oy[0] = other[0], lb
                moved = _moved(x, y, ox, oy, 3, weight)
                assert moved <= pp.pixel_sensitivity() * (1 + 1e-12)
                worst = max(worst, moved)
    assert worst == pytest.approx(math.sqrt(2), rel=1e-12)
    # same class: the counts cancel, the pixels move by a |x_a - x_b| / sqrt(d) <= a
    same = _moved(ones, [1], zeros, [1], 3, weight)
    assert same == pytest.approx(math.sqrt(weight), rel=1e-12)


def test_neighbouring_real_images_move_the_release_within_the_sensitivity(digits):
    x, y = digits
    x = torch.from_numpy(x[:200] / 16.0)
    y = np.asarray(y[:200])
    for k in range(20):  # every replacement by another real image, or a relabelling
        other_x, other_y = x.clone(), y.copy()
        other_x[k], other_y[k] = x[199 - k], (y[k] + k) % 10
        assert _moved(x, y, other_x, other_y, 10, 0.9) <= pp.pixel_sensitivity() * (1 + 1e-12)


def test_release_recovers_the_class_means_and_counts_without_noise():
    """Without noise (eps = inf) the post-processing gives back the exact class means: the
    scales a, b and sqrt(d) are undone correctly."""
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.random((50, 1, 4, 5)))
    y = np.repeat([0, 1, 2], [10, 25, 15])
    ledger = Ledger.open(math.inf, 0.0)
    means, sigma = pp.release_class_means(x, y, 4, ledger, PixelPrior(pixel_weight=0.7))
    assert sigma == 0 and means.shape == (4, 1, 4, 5)
    for c in range(3):
        assert torch.allclose(means[c], x[y == c].mean(0), atol=1e-12)
    assert torch.all(means[3] == 0)  # an empty class: count clamped to 1, sum 0


def test_release_refuses_pixels_outside_the_unit_box():
    ledger = Ledger.open(1.0, 1e-5)
    for bad in (torch.full((3, 1, 2, 2), 1.5), torch.full((3, 1, 2, 2), float('nan'))):
        with pytest.raises(ValueError, match='pixels in'):
            pp.release_class_means(bad, [0, 1, 0], 2, ledger, PixelPrior())
    assert not ledger.accountant.releases


def _fit(x, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        with fixed_noise(3):
            return DPKIPScatterNet(1.0, 1e-5, **{**FAST, **kwargs}).fit(x, y)


@pytest.mark.parametrize('mechanism', ['moments', 'dp-sgd'])
def test_the_release_is_in_the_ledger_and_the_report_and_the_budget_is_shared(mechanism,
                                                                               digits):
    x, y = digits
    extra = dict(epochs=1, batch_size=300, clip_norm=1e-2) if mechanism == 'dp-sgd' else {}
    m = _fit(x[:900], y[:900], mechanism=mechanism, pixel_prior=PixelPrior(share=0.2), **extra)
    report = m.privacy_report_
    names = [r.name for r in report.releases]
    assert names[0] == pp.PIXEL_MEANS and len(names) == 2
    pixel = report.releases[0]
    assert pixel.sensitivity == pytest.approx(math.sqrt(2))
    assert pixel.dimension == 10 * (64 + 1)
    assert pixel.details['budget_share'] == 0.2
    # share 0.2 of the Gaussian precision: sigma = sigma_all / sqrt(0.2)
    full = _fit(x[:900], y[:900], mechanism=mechanism, pixel_prior=None, **extra)
    if mechanism == 'moments':
        sigma_all = full.privacy_report_.releases[0].noise_multiplier
        assert pixel.noise_multiplier == pytest.approx(sigma_all / math.sqrt(0.2), rel=1e-6)
        assert report.releases[1].noise_multiplier == pytest.approx(
            sigma_all / math.sqrt(0.8), rel=1e-6)
    assert report.releases[1].noise_multiplier > full.privacy_report_.releases[0].noise_multiplier
    assert 1 - 1e-3 <= report.epsilon_calibrated <= 1.0 * (1 + 1e-9)  # both releases: all of it
    assert any('Pixel prior' in note for note in report.notes)
    assert not any('Pixel prior' in note for note in full.privacy_report_.notes)


def test_init_starts_from_the_released_means(digits):
    """With no distillation step worth the name, the support is the released class means plus
    public noise: its per-class average is close to the (noisy) class mean, not to 0.5."""
    x, y = digits
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        with fixed_noise(3):  # a large epsilon instead of many images: little noise, fast
            m = DPKIPScatterNet(200.0, 1e-5, **{**FAST, 'images_per_class': 20, 'moment_steps': 1},
                                learning_rate=1e-6,
                                pixel_prior=PixelPrior(init_noise=0.05)).fit(x, y)
    support = m.distilled_images_ / 16.0
    for c in range(10):
        true = x[y == c].mean(0) / 16.0
        assert np.abs(support[m.distilled_labels_ == c].mean(0) - true).mean() < 0.05


def test_anchor_pulls_the_support_towards_the_class_means(digits):
    x, y = digits
    kw = dict(moment_steps=40, learning_rate=0.05)
    loose = _fit(x[:900], y[:900], pixel_prior=PixelPrior(init_noise=0.0), **kw)
    tight = _fit(x[:900], y[:900], pixel_prior=PixelPrior(init_noise=0.0, anchor=100.0), **kw)
    # the same release (fixed noise); started at the released means, which the anchor targets
    start = _fit(x[:900], y[:900], pixel_prior=PixelPrior(init_noise=0.0), moment_steps=1,
                 learning_rate=1e-9)

    def drift(m):
        return np.abs(m.distilled_images_ - start.distilled_images_).mean()
    assert drift(tight) < 0.5 * drift(loose)
    assert any('anchor term' in note for note in tight.privacy_report_.notes)


def test_saved_model_holds_no_class_mean_or_private_image(digits):
    x, y = digits
    x, y = x[:900].copy(), y[:900].copy()
    canary = np.random.default_rng(5).integers(0, 17, size=(8, 8)).astype(np.float64)
    x[0] = canary
    m = _fit(x, y, pixel_prior=PixelPrior(anchor=1.0))
    blob = pickle.dumps(m)
    for arr in (canary, canary / 16.0):
        for dtype in (np.float64, np.float32):
            assert arr.astype(dtype).tobytes() not in blob
    for value in m.__dict__.values():  # no per-image array, no (noisy) class-mean table
        assert np.shape(value)[:1] not in ((900,), (10,))


@pytest.mark.parametrize('change, match', [
    (dict(share=0.0), 'share'), (dict(share=1.0), 'share'), (dict(pixel_weight=1.0), 'pixel'),
    (dict(init_noise=-1.0), 'init_noise'), (dict(anchor=float('nan')), 'anchor'),
])
def test_bad_prior_settings_get_clear_errors(change, match):
    with pytest.raises(ImageInputError, match=match):
        PixelPrior(**change)


def test_pixel_prior_must_be_a_prior_or_none(digits):
    x, y = digits
    with pytest.raises(ImageInputError, match='PixelPrior or None'):
        DPKIPScatterNet(1.0, 1e-5, pixel_prior=0.1, **FAST).fit(x[:100], y[:100])


def test_the_fit_releases_within_the_sensitivity_on_extreme_neighbours(digits):
    """End to end through ``fit`` (the recorder keeps the clean released vector): replacing one
    image by a max-norm one, an all-zero one or one far outside the range (clipped), with or
    without a label change, moves the released vector by at most sqrt(2)."""
    from sdv_dpkme.privacy.recorder import recording
    x, y = digits
    x, y = x[:300].copy(), np.asarray(y[:300]).copy()

    def clean(xx, yy):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            with recording(stop_after=1) as rec:
                DPKIPScatterNet(1.0, 1e-5, **FAST).fit(xx, yy)
        (release,) = rec.releases
        assert release.name == pp.PIXEL_MEANS
        return release.clean

    base = clean(x, y)
    moved = []
    for image, label in ((np.full((8, 8), 16.0), y[0]), (np.full((8, 8), 16.0), (y[0] + 1) % 10),
                         (np.zeros((8, 8)), (y[0] + 3) % 10), (np.full((8, 8), -1e9), y[0])):
        other_x, other_y = x.copy(), y.copy()
        other_x[0], other_y[0] = image, label
        moved.append(float(np.linalg.norm(clean(other_x, other_y) - base)))
    assert max(moved) <= pp.pixel_sensitivity() * (1 + 1e-9)
    assert min(moved) > 0  # each neighbour is seen by the release
