"""Distilled images are images: whatever the noise, the mechanism or the declared range, every
released pixel lies in the declared pixel range (issue 43)."""

import numpy as np
import pytest

from sdv_dpkme.images import DPKIPScatterNet, PixelPrior
from sdv_dpkme.privacy.testing import fixed_noise

pytestmark = pytest.mark.filterwarnings('ignore::RuntimeWarning')  # autodp's optimiser warnings

#: ends that float32 cannot hold exactly (float32(-0.3) < -0.3, float32(0.1) > 0.1), and 0..255
RANGES = [(-0.3, 0.1), (0, 255)]
#: a tiny epsilon (huge noise) and large Adam steps: the support is pushed hard against both ends
LOUD = dict(images_per_class=2, learning_rate=2.0, random_state=0)
MECHANISMS = {
    'dp-sgd': dict(mechanism='dp-sgd', epochs=2, batch_size=300, clip_norm=1e-2),
    'moments': dict(mechanism='moments', moment_steps=15),
    # both start from the released class means (the default pixel prior); this one adds the
    # anchor term, and one starts from public uniform noise as before
    'moments-anchor': dict(mechanism='moments', moment_steps=15,
                           pixel_prior=PixelPrior(anchor=1.0)),
    'moments-uniform': dict(mechanism='moments', moment_steps=15, pixel_prior=None),
}


@pytest.mark.parametrize('pixel_range', RANGES)
@pytest.mark.parametrize('mechanism', sorted(MECHANISMS))
def test_released_images_stay_in_the_declared_range_whatever_the_noise(mechanism, pixel_range,
                                                                       digits):
    x, y = digits
    low, high = pixel_range
    x = np.clip(low + (high - low) * x[:600] / 16.0, low, high)  # on the declared scale
    with fixed_noise(1):
        m = DPKIPScatterNet(1e-3, 1e-5, pixel_range=pixel_range, **LOUD,
                            **MECHANISMS[mechanism]).fit(x, y[:600])
    images = m.distilled_images_.astype(np.float64)  # float32 may round past an end
    assert m.distilled_images_.dtype == np.float32 and np.isfinite(images).all()
    assert images.min() >= low and images.max() <= high
    # the noise really pushed pixels to both ends (else the test shows nothing)
    span = high - low
    assert images.min() <= low + 0.01 * span and images.max() >= high - 0.01 * span
    assert any('projected to the pixel range' in note for note in m.privacy_report_.notes)
