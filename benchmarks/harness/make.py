"""The one way a study builds a synthesizer: flat settings, turned into constructor arguments by
the package itself, so a study never reaches into a class."""
from __future__ import annotations

import contextlib


@contextlib.contextmanager
def fixed_noise(seed):
    """Fix the privacy noise of the fits made inside the block, so that the arms of a paired
    comparison share one noise draw. TEST ONLY: it voids the guarantee, and the privacy report
    says so. ``None``: fresh noise."""
    if seed is None:
        yield
        return
    from sdv_dpkme.privacy.testing import fixed_noise as package_fixed_noise

    with package_fixed_noise(seed):
        yield


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
    # imported when first used, so a study can put a pinned package first on sys.path
    from sdv_dpkme.synthesizers.options import build_kwargs

    return cls(metadata, **build_kwargs(cls, {'epsilon': epsilon, **flat}))


def epsilon_spent(synthesizer):
    """ε spent according to the privacy report (NaN where the report fails: informative only)."""
    try:
        return float(synthesizer.get_privacy_report().epsilon_spent)
    except Exception:  # noqa: BLE001 - the report is not what a study measures
        return float('nan')
