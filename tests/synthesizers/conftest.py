import pytest

from tests.conftest import KME_CLASSES, SYNTHESIZERS


@pytest.fixture(params=list(SYNTHESIZERS), ids=lambda c: c.__name__)
def cls(request):
    """Every synthesizer class of the package."""
    return request.param


@pytest.fixture(params=KME_CLASSES, ids=lambda c: c.__name__)
def kme_cls(request):
    """The kernel-mean-embedding classes (DP-HP, DP-MERF)."""
    return request.param
