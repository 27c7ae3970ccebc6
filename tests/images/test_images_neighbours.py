"""Neighbouring image sets (one image and its label replaced) give the same fitted estimator,
walked in full by the adversarial suite's graph walk, outside the mechanisms' outputs."""

import warnings

import numpy as np
import pytest

from sdv_dpkme.images import DPHPImageGenerator, DPKIPScatterNet, DPMERFImageGenerator
from tests.privacy.graph import diff, flatten

pytestmark = pytest.mark.filterwarnings('ignore::RuntimeWarning')

COMMON = dict(pixel_range=(0, 16), random_state=0, noise_seed=5)  # fixed noise: test only
CASES = {
    DPKIPScatterNet: dict(images_per_class=1, epochs=1, batch_size=100, clip_norm=1e-2,
                          mechanism='dp-sgd'),
    DPMERFImageGenerator: dict(n_features=32, steps=3, batch_size=50, latent_dim=4,
                               generator_dims=(8,)),
    DPHPImageGenerator: dict(order=3, steps=3, batch_size=50, latent_dim=4, generator_dims=(8,)),
}
RUNS = [(cls, kwargs) for cls, kwargs in CASES.items()] + [
    (DPKIPScatterNet, dict(images_per_class=1, mechanism='moments', moment_steps=3)),
]
# DP outputs (and what is trained on them only); the run's wall time is per instance
OUTPUTS = ('.distilled_images_', '._support01', '.history_', '.class_weights_',
           '.loss_history_', '._model.class_weights', '._model.loss_values')
PER_INSTANCE = ('.fit_seconds_',)


def _graph(model):
    out = flatten(model, exclude=PER_INSTANCE)
    # the generator's structure is compared; only its trained values are outputs
    trained = ('._model.generator', )
    return {p: v for p, v in out.items() if not p.startswith(OUTPUTS) and not (
        p.startswith(trained) and ('._parameters' in p or '._buffers' in p))}


def _fit(cls, x, y, kwargs=None):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return cls(1.0, 1e-5, **COMMON, **(CASES[cls] if kwargs is None else kwargs)).fit(x, y)


@pytest.mark.parametrize('cls, kwargs', RUNS,
                         ids=[f'{c.__name__}-{k.get("mechanism", "default")}' for c, k in RUNS])
def test_neighbouring_image_sets_give_the_same_fitted_object(cls, kwargs, digits):
    x, y = digits
    x, y = x[:300].copy(), y[:300].copy()
    base = _graph(_fit(cls, x, y, kwargs))
    assert len(base) > 20  # the walk compares something
    for image, label in ((np.full((8, 8), 16.0), (y[0] + 1) % 10), (np.zeros((8, 8)), y[0])):
        other_x, other_y = x.copy(), y.copy()
        other_x[0], other_y[0] = image, label
        differing = diff(base, _graph(_fit(cls, other_x, other_y, kwargs)))
        assert not differing, f'the fitted estimator depends on the image: {differing}'


def test_the_walk_sees_a_fact_planted_deep_in_a_fitted_estimator(digits):
    x, y = digits
    x, y = x[:300].copy(), y[:300].copy()
    first, second = (_fit(DPMERFImageGenerator, x, y) for _ in range(2))
    assert not diff(_graph(first), _graph(second))
    second._model.columns = [*second._model.columns[:-1], f'{x[0].sum():g}']
    assert diff(_graph(first), _graph(second)) == ['._model.columns[74]']
