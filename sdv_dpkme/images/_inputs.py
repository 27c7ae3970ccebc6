"""Checks shared by the image estimators: shapes, the declared pixel range, labels, budgets.

Everything that shapes a fit is public and declared by the user: the pixel range, the number of
classes, the image shape (read off the array, like n under replace-one adjacency). Nothing is
normalised with private statistics: pixels are only mapped from the declared range to [0, 1].

No check decides on a private fact that a neighbouring dataset may flip: pixels outside the
declared range are clipped to it (with a warning, as the tables clip numbers to their declared
bounds), and a class may hold any number of images, none included (how many each class holds is
only known to an estimator through its releases). What raises is a schema error, the same for
every dataset of the declared domain: a shape, non-numeric or missing (NaN) pixels, labels that
are not integers in 0..n_classes-1. Those messages quote no value.
"""

import inspect
import math
import numbers
import warnings

import numpy as np
import torch

from sdv_dpkme.privacy import validate_budget


class ImageInputError(ValueError):
    """Images, labels or settings that an image estimator cannot use (the message says why)."""


#: the layout of a pickled image estimator; another is refused (refit instead)
FORMAT_VERSION = 1


def stamped(state):
    """A pickled estimator's state with its format version."""
    return {**state, '_sdv_dpkme_format': FORMAT_VERSION}


def check_format(state, name):
    """Refuse the state of an estimator pickled in another format (no shims: refit it)."""
    saved = state.get('_sdv_dpkme_format')
    if saved != FORMAT_VERSION:
        raise ImageInputError(
            f'This {name} was saved by an older sdv_dpkme (file format {saved}; this version '
            f'reads format {FORMAT_VERSION}). Fit it again with this version.'
        )


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
    except (TypeError, ValueError):  # numpy's message quotes the value: not even as context
        arr = None
    if arr is None:
        raise ImageInputError('X must be a numeric array of images.')
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
    if np.isnan(arr).any():
        raise ImageInputError('X holds missing (NaN) pixel values; fill or drop those images '
                              'before the fit (pixels have no missing-value encoding).')
    if (arr < low).any() or (arr > high).any():
        warnings.warn(
            f'X has values outside the declared pixel_range [{low:g}, {high:g}]; they are '
            'clipped to it. Declare the range the pixels can take (a public fact, e.g. (0, 255) '
            'for bytes); it is never read off the data.', stacklevel=4)
        arr = np.clip(arr, low, high)
    return torch.from_numpy(((arr - low) / (high - low)).astype(np.float32))


def as_labels(y, n, n_classes):
    """Integer labels 0..n_classes-1, one per image. How many images a class holds is private:
    it is never checked (a class may be empty)."""
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
            f'y must hold labels 0..{n_classes - 1} (n_classes={n_classes}), and some labels '
            'are outside that range; map class names to 0..C-1 and declare n_classes.'
        )
    return arr


def constructor_parameters(estimator):
    """Every constructor argument by name, as the instance holds it (like SDV's
    ``get_parameters``): the settings that reproduce the estimator, none of them private."""
    names = [name for name, param in inspect.signature(type(estimator).__init__).parameters.items()
             if name != 'self' and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)]
    return {name: getattr(estimator, name) for name in names}
