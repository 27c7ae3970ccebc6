import numpy as np
import pytest

from sdv_dpkme.images.data import load_digits_images


@pytest.fixture(scope='session')
def digits():
    """scikit-learn's 8x8 digits (real images, ship with sklearn), pixels in [0, 16]."""
    x, y = load_digits_images()
    return x.astype(np.float64), y
