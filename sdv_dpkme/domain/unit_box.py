"""The unit box: every DP transformer encodes a column into [0, 1], and the feature maps'
norm bounds hold there. Encoded rows that come from a caller (``fit_processed_data``) are
checked and clipped to it before any norm is taken.
"""

import warnings

import numpy as np
from sdv.errors import SynthesizerInputError


def unit_box(processed_data):
    """The encoded table as floats in [0, 1], the range of every DP transformer's output.

    ``fit`` always gives values there; ``fit_processed_data`` takes them from the caller, and a
    huge value (1e300) would overflow the unit-ball projection into NaN. So values outside are
    clipped (with a warning) before any norm, and NaN is refused.
    """
    try:
        x = processed_data.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise SynthesizerInputError(
            'The processed data must be numbers, as returned by preprocess().'
        ) from None
    return unit_box_array(x)


def unit_box_array(x):
    """``unit_box`` of an encoded float64 array (refuses NaN, clips to [0, 1] with a warning)."""
    if np.isnan(x).any():
        raise SynthesizerInputError(
            'The processed data holds NaN; pass the output of preprocess() unchanged.'
        )
    if ((x < 0) | (x > 1)).any():
        warnings.warn(
            'The processed data holds values outside [0, 1], the range of the DP transformers; '
            'they are clipped to it. Pass the output of preprocess() unchanged.'
        )
        x = np.clip(x, 0.0, 1.0)
    return x
