"""Neighbouring image sets (one image and/or its label replaced) give the same fitted estimator,
walked in full by the adversarial suite's graph walk, outside the mechanisms' outputs.

The walk includes the neighbours that the input checks could tell apart: a pixel far outside the
declared range, and a class whose count crosses what a check might demand (support images per
class, at least one image). Both datasets of each pair must fit: an estimator that refuses one of
them decides on an exact private fact (issue 40). Every image estimator of ``sdv_dpkme.images``
must be listed here (checked below), so a new one cannot skip the walk.
"""

import traceback
import warnings

import numpy as np
import pytest

import sdv_dpkme.images as images
from sdv_dpkme.images import (DPHPImageGenerator, DPKIPScatterNet, DPMERFImageGenerator,
                               PixelPrior)
from sdv_dpkme.privacy.testing import fixed_noise
from tests.privacy.graph import diff, flatten

pytestmark = pytest.mark.filterwarnings('ignore::RuntimeWarning')

COMMON = dict(pixel_range=(0, 16), random_state=0)
NOISE_SEED = 5  # fixed noise: test only
CASES = {
    DPKIPScatterNet: dict(images_per_class=1, epochs=1, batch_size=100, clip_norm=1e-2,
                          mechanism='dp-sgd'),
    DPMERFImageGenerator: dict(n_features=32, steps=3, batch_size=50, latent_dim=4,
                               generator_dims=(8,)),
    DPHPImageGenerator: dict(order=3, steps=3, batch_size=50, latent_dim=4, generator_dims=(8,)),
}
# DP-KIP's runs walk the default pixel prior (its release, the init); one adds its anchor term
RUNS = [(cls, kwargs) for cls, kwargs in CASES.items()] + [
    (DPKIPScatterNet, dict(images_per_class=1, mechanism='moments', moment_steps=3)),
    (DPKIPScatterNet, dict(images_per_class=1, mechanism='moments', moment_steps=3,
                           pixel_prior=PixelPrior(anchor=1.0))),
]
IDS = [f'{c.__name__}-{k.get("mechanism", "default")}'
       + ('-anchor' if k.get('pixel_prior') else '') for c, k in RUNS]
# DP outputs (and what is trained on them only); the run's wall time is per instance
OUTPUTS = ('.distilled_images_', '._support01', '.history_', '.class_weights_',
           '.loss_history_', '._model.class_weights', '._model.loss_values')
PER_INSTANCE = ('.fit_seconds_',)
# class counts at the thresholds a check could use: 4 support images per class (DP-KIP below),
# one image per class (the generators); the neighbour relabels one image of class 2 as class 0
COUNTS = {'short': (28, 28, 4), 'empty': (29, 28, 1)}


def _graph(model):
    out = flatten(model, exclude=PER_INSTANCE)
    # the generator's structure is compared; only its trained values are outputs
    trained = ('._model.generator', )
    return {p: v for p, v in out.items() if not p.startswith(OUTPUTS) and not (
        p.startswith(trained) and ('._parameters' in p or '._buffers' in p))}


def _fit(cls, x, y, kwargs=None):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        with fixed_noise(NOISE_SEED):
            return cls(1.0, 1e-5, **COMMON, **(CASES[cls] if kwargs is None else kwargs)).fit(x, y)


def _walk(cls, kwargs, base_xy, neighbours):
    """Fit the base and each neighbour (each must fit) and diff the whole fitted objects."""
    base = _graph(_fit(cls, *base_xy, kwargs))
    assert len(base) > 20  # the walk compares something
    for name, (x, y) in neighbours:
        differing = diff(base, _graph(_fit(cls, x, y, kwargs)))
        assert not differing, f'the fitted estimator depends on {name}: {differing}'


def _replaced(x, y, image, label):
    other_x, other_y = x.copy(), y.copy()
    other_x[0], other_y[0] = image, label
    return other_x, other_y


@pytest.mark.parametrize('cls, kwargs', RUNS, ids=IDS)
def test_neighbouring_image_sets_give_the_same_fitted_object(cls, kwargs, digits):
    x, y = digits
    x, y = x[:300].copy(), y[:300].copy()
    _walk(cls, kwargs, (x, y), [
        ('a bright image', _replaced(x, y, np.full((8, 8), 16.0), (y[0] + 1) % 10)),
        # outside the declared range: clipped (with a warning), never an error on one image;
        # clipped, a dark image with a bright diagonal
        ('pixels far outside the range',
         _replaced(x, y, np.where(np.eye(8) > 0, 1e6, -1e6), y[0])),
    ])


@pytest.mark.parametrize('cls, kwargs', RUNS, ids=IDS)
@pytest.mark.parametrize('counts', COUNTS.values(), ids=COUNTS)
def test_a_class_short_of_images_is_decided_by_no_exact_count(cls, kwargs, counts, digits):
    """28/28/4 and 29/28/3 images per class (one relabelled image) both fit, and so do
    29/28/1 and 30/28/0, into the same object outside the DP outputs: no check reads the
    exact class counts (4 support images per class for DP-KIP)."""
    x, y = digits
    kwargs = {**kwargs, 'n_classes': 3}
    if cls is DPKIPScatterNet:
        kwargs['images_per_class'] = 4
    x = x[np.flatnonzero(y < 3)[:sum(counts)]].copy()
    y = np.repeat(np.arange(3), counts)
    other_y = y.copy()
    other_y[-1] = 0  # one image of class 2 relabelled
    assert np.bincount(other_y, minlength=3)[2] == counts[2] - 1
    _walk(cls, kwargs, (x, y), [(f'class counts {np.bincount(other_y).tolist()}', (x, other_y))])


@pytest.mark.parametrize('cls', list(CASES), ids=lambda c: c.__name__)
def test_input_errors_quote_no_private_value(cls, digits):
    """Schema errors (a non-numeric pixel, a label out of range) raise, naming the rule and no
    value, neither in the message nor in its chain or traceback."""
    x, y = digits
    x, y = x[:100].copy(), y[:100].copy()
    canary = 'PIXEL-' + str(4711)  # built at run time: a literal would show in the traceback
    text_x = x.astype(object)
    text_x[3, 2, 2] = canary
    bad_y = y.copy()
    bad_y[5] = 4711 + 90000
    for data, rule in (((text_x, y), 'numeric'), ((x, bad_y), 'labels 0')):
        with pytest.raises(images.ImageInputError, match=rule) as caught:
            _fit(cls, *data)
        err = caught.value
        text = ''.join(traceback.format_exception(err)) + repr(err.__context__) + repr(err)
        assert canary not in text and str(4711 + 90000) not in text


def test_every_image_estimator_is_walked():
    estimators = {getattr(images, name) for name in images.__all__}
    estimators = {c for c in estimators if isinstance(c, type) and hasattr(c, 'fit')}
    assert estimators == set(CASES)


def test_the_walk_sees_a_fact_planted_deep_in_a_fitted_estimator(digits):
    x, y = digits
    x, y = x[:300].copy(), y[:300].copy()
    first, second = (_fit(DPMERFImageGenerator, x, y) for _ in range(2))
    assert not diff(_graph(first), _graph(second))
    second._model.columns = [*second._model.columns[:-1], f'{x[0].sum():g}']
    assert diff(_graph(first), _graph(second)) == ['._model.columns[74]']
