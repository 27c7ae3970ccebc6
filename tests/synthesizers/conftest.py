import pytest

from tests.conftest import KME_CLASSES, SYNTHESIZERS


def _first_fast(classes):
    """The classes as parameters: the first in the fast subset (-m 'not slow'), every one in the
    full suite (each class's own test module covers it in the fast subset too)."""
    return [pytest.param(c, id=c.__name__, marks=() if i == 0 else pytest.mark.slow)
            for i, c in enumerate(classes)]


@pytest.fixture(params=_first_fast(SYNTHESIZERS))
def cls(request):
    """Every synthesizer class of the package."""
    return request.param


@pytest.fixture(params=_first_fast(KME_CLASSES))
def kme_cls(request):
    """The kernel-mean-embedding classes (DP-HP, DP-MERF)."""
    return request.param
