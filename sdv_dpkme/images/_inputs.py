"""Checks shared by the image estimators: shapes, the declared pixel range, labels, budgets.

Everything that shapes a fit is public and declared by the user: the pixel range, the number of
classes, the image shape (read off the array, like n under replace-one adjacency). Nothing is
normalised with private statistics: pixels are only mapped from the declared range to [0, 1].
"""

import math
import numbers

import numpy as np
import torch

from sdv_dpkme.privacy import validate_budget


class ImageInputError(ValueError):
    """Images, labels or settings that an image estimator cannot use (the message says why)."""


def check_budget(epsilon, delta):
    try:
        validate_budget(epsilon, delta, calibrated=True)
    except ValueError as error:
        raise ImageInputError(str(error)) from None


def check_pixel_range(pixel_range):
    try:
        low, high = (float(v) for v in pixel_range)
    except (TypeError, ValueError):
        raise ImageInputError(
            f'pixel_range must be a pair (low, high) of numbers, got {pixel_range!r}.'
        ) from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ImageInputError(f'pixel_range must have finite low < high, got {pixel_range!r}.')
    return low, high


def positive_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ImageInputError(f'{name} must be an int >= {minimum}, got {value!r}.')
    return int(value)


def positive_number(value, name, allow_zero=False):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise ImageInputError(f'{name} must be a finite number {">=" if allow_zero else ">"} 0, '
                              f'got {value!r}.')
    return float(value)


def as_images(X, pixel_range, shape=None):
    """(n, H, W) or (n, C, H, W) numbers in ``pixel_range`` -> float32 tensor (n, C, H, W) in
    [0, 1]. ``shape``: the (C, H, W) a fitted model expects."""
    low, high = pixel_range
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ImageInputError('X must be a numeric array of images.') from None
    if arr.ndim == 3:
        arr = arr[:, None]
    if arr.ndim != 4 or min(arr.shape) < 1:
        raise ImageInputError(
            f'X must have shape (n, H, W) or (n, C, H, W) with n, C, H, W >= 1, got '
            f'{np.shape(X)}; flattened images must be reshaped first, e.g. X.reshape(-1, 28, 28).'
        )
    if shape is not None and arr.shape[1:] != tuple(shape):
        raise ImageInputError(f'X has images of shape {arr.shape[1:]}, the model was fitted on '
                              f'{tuple(shape)} (channels, height, width).')
    if not np.isfinite(arr).all():
        raise ImageInputError('X holds NaN or infinite values.')
    if arr.min() < low or arr.max() > high:
        raise ImageInputError(
            f'X has values outside the declared pixel_range [{low:g}, {high:g}]. Declare the '
            'range the pixels can take (a public fact, e.g. (0, 255) for bytes); it is never '
            'read off the data.'
        )
    return torch.from_numpy(((arr - low) / (high - low)).astype(np.float32))


def as_labels(y, n, n_classes, min_per_class=1, what='images'):
    """Integer labels 0..n_classes-1, one per image, every class with >= ``min_per_class``."""
    arr = np.asarray(y)
    if arr.shape != (n,):
        raise ImageInputError(f'y must have shape ({n},) (one label per image), got {arr.shape}.')
    if arr.dtype.kind == 'f' and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in 'iu':
        raise ImageInputError(f'y must hold integer labels 0..{n_classes - 1}, got dtype '
                              f'{arr.dtype}.')
    arr = arr.astype(np.int64)
    if n and (arr.min() < 0 or arr.max() >= n_classes):
        raise ImageInputError(
            f'y must hold labels 0..{n_classes - 1} (n_classes={n_classes}), got values in '
            f'[{arr.min()}, {arr.max()}]; map class names to 0..C-1 and declare n_classes.'
        )
    counts = np.bincount(arr, minlength=n_classes)
    short = np.flatnonzero(counts < min_per_class)
    if len(short):
        raise ImageInputError(
            f'too few {what} for class(es) {short.tolist()}: every class needs at least '
            f'{min_per_class}.'
        )
    return arr
