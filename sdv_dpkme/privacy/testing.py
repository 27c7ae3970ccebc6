"""Test-only fixed privacy noise: never part of a public signature.

``fixed_noise(seed)`` makes every ledger opened in its context (``Ledger.open``) draw its noise
from a known seed, so a fit's releases can be compared across versions. Known noise can be
subtracted, so such a fit is NOT differentially private: ``Ledger.open`` warns
(``NotPrivateWarning``) and the privacy report says epsilon_spent=inf with the guarantee void.
"""

import contextlib
import contextvars

_SEED = contextvars.ContextVar('sdv_dpkme_fixed_noise_seed', default=None)


def active_seed():
    """The seed of the enclosing ``fixed_noise`` context, or None (secret noise)."""
    return _SEED.get()


@contextlib.contextmanager
def fixed_noise(seed):
    """TEST ONLY: fits (and image estimators) inside draw their privacy noise from ``seed`` (an
    int). None: secret noise again (the default), e.g. inside an enclosing ``fixed_noise``."""
    if isinstance(seed, bool) or not (seed is None or isinstance(seed, int)):
        raise TypeError(f'fixed_noise takes an int seed (or None), got {seed!r}.')
    token = _SEED.set(seed)
    try:
        yield
    finally:
        _SEED.reset(token)
