"""get_parameters() of the image estimators: every constructor argument, as given."""
import inspect

import pytest

from sdv_dpkme.images import DPHPImageGenerator, DPKIPScatterNet, DPMERFImageGenerator, PixelPrior


def _arguments(cls):
    return [name for name in inspect.signature(cls.__init__).parameters if name != 'self']


@pytest.mark.parametrize('cls, changed', [
    (DPKIPScatterNet, dict(images_per_class=3, mechanism='dp-sgd', moment_ridge=0.01,
                           pixel_prior=PixelPrior(share=0.2), pixel_range=(0, 255),
                           random_state=7)),
    (DPMERFImageGenerator, dict(n_features=50, steps=5, pixel_range=(0, 16), random_state=3)),
    (DPHPImageGenerator, dict(order=5, steps=5, device='cpu', random_state=1)),
])
def test_get_parameters_holds_every_argument_as_given(cls, changed):
    model = cls(2.5, delta=1e-6, **changed)
    params = model.get_parameters()
    assert list(params) == _arguments(cls)  # every argument, in the signature's order
    assert params['epsilon'] == 2.5 and params['delta'] == 1e-6
    for name, value in changed.items():
        assert params[name] == value
    defaults = {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
                if p.default is not inspect.Parameter.empty}
    for name, value in params.items():
        if name not in changed and name not in ('epsilon', 'delta'):
            assert value == defaults[name], name
    # the parameters rebuild an equal estimator
    assert cls(**params).get_parameters() == params
