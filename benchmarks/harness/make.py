"""The one way a study builds a synthesizer: flat settings, turned into constructor arguments by
the package itself, so a study never reaches into a class."""
from __future__ import annotations

import contextlib
import inspect

_noise_seed = [None]


def _build_kwargs():
    # imported when first used, so a study can put a pinned package first on sys.path
    try:
        from sdv_dpkme.synthesizers.options import build_kwargs
    except ImportError:  # the constructor with kernel/training objects has not landed yet
        return None
    return build_kwargs


def _package_fixed_noise():
    try:
        from sdv_dpkme.privacy.testing import fixed_noise
    except ImportError:  # older package: the noise seed is still a constructor argument
        return None
    return fixed_noise


@contextlib.contextmanager
def fixed_noise(seed):
    """Fix the privacy noise of the fits made (and, on the older package, the synthesizers
    built) inside the block, so that the arms of a paired comparison share one noise draw.
    TEST ONLY: it voids the guarantee, and the privacy report says so. ``None``: fresh noise."""
    if seed is None:
        yield
        return
    previous, _noise_seed[0] = _noise_seed[0], seed
    package = _package_fixed_noise()
    try:
        if package is not None:
            with package(seed):
                yield
        else:
            yield
    finally:
        _noise_seed[0] = previous


def make(cls, metadata, epsilon, **flat):
    """``cls(metadata, ...)`` from flat settings, e.g. ``make(DPHPSynthesizer, metadata, 1.0,
    delta=1e-5, steps=50, known_categories={...}, selected_pairs=0)``.

    ``build_kwargs`` (sdv_dpkme.synthesizers.options) sorts the names into the constructor's
    arguments and its ``kernel`` / ``training`` objects, and refuses unknown names with the list
    of valid ones. SDV's synthesizers and the image estimators (``metadata`` None) take their
    keyword arguments unchanged.
    """
    if not cls.__module__.startswith('sdv_dpkme.synthesizers'):
        return cls(metadata, **flat) if metadata is not None else cls(epsilon=epsilon, **flat)
    build_kwargs = _build_kwargs()
    if build_kwargs is not None:
        return cls(metadata, **build_kwargs(cls, {'epsilon': epsilon, **flat}))
    return _make_before_options(cls, metadata, epsilon, flat)


def _make_before_options(cls, metadata, epsilon, flat):
    # Fallback until the new constructor lands (then this function goes): flat kwargs go to
    # the constructor unchanged, 'training.x' / 'kernel.x' lose their prefix, and the settings
    # that were class attributes then (selected_pairs, calibration_parents, ...) are set on
    # the instance, as the old API asked.
    flat = {key.split('.', 1)[-1]: value for key, value in flat.items()}
    if _noise_seed[0] is not None:
        flat['noise_seed'] = _noise_seed[0]
    accepted = inspect.signature(cls.__init__).parameters
    attributes = {key: flat.pop(key) for key in list(flat)
                  if key not in accepted and hasattr(cls, key)}
    synthesizer = cls(metadata, epsilon=epsilon, **flat)
    for name, value in attributes.items():
        setattr(synthesizer, name, value)
    return synthesizer


def epsilon_spent(synthesizer):
    """ε spent according to the privacy report (NaN where the report fails: informative only)."""
    try:
        return float(synthesizer.get_privacy_report().epsilon_spent)
    except Exception:  # noqa: BLE001 - the report is not what a study measures
        return float('nan')
