"""SDV synthesizers (entry points target this submodule, see pyproject)."""

import importlib

_MODULES = {'DPHPSynthesizer': 'dphp', 'DPKIPSynthesizer': 'dpkip',
            'DPMERFSynthesizer': 'dpmerf', 'DPReweightingSynthesizer': 'dpreweighting'}


def __getattr__(name):
    # When importing this package is what first imports SDV, SDV's add-on discovery asks for a
    # class while the package is still half imported: import that class's module then.
    if name not in _MODULES:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(importlib.import_module(f'{__name__}.{_MODULES[name]}'), name)


import sdv  # noqa: E402,F401  (before our modules, which import SDV's submodules)

from sdv_dpkme.synthesizers.base import BaseDPSynthesizer  # noqa: E402
from sdv_dpkme.synthesizers.dphp import DPHPSynthesizer  # noqa: E402
from sdv_dpkme.synthesizers.dpkip import DPKIPSynthesizer  # noqa: E402
from sdv_dpkme.synthesizers.dpmerf import DPMERFSynthesizer  # noqa: E402
from sdv_dpkme.synthesizers.dpreweighting import DPReweightingSynthesizer  # noqa: E402
from sdv_dpkme.synthesizers.kme_base import BaseDPKMESynthesizer  # noqa: E402
from sdv_dpkme.synthesizers.options import (  # noqa: E402
    DPHPKernel,
    DPHPTraining,
    DPKIPKernel,
    DPKIPTraining,
    DPMERFKernel,
    DPMERFTraining,
    ReweightingKernel,
    ReweightingTraining,
    build_kwargs,
)

__all__ = ['BaseDPSynthesizer', 'BaseDPKMESynthesizer', 'DPHPSynthesizer', 'DPKIPSynthesizer',
           'DPMERFSynthesizer', 'DPReweightingSynthesizer', 'DPHPKernel', 'DPHPTraining',
           'DPMERFKernel', 'DPMERFTraining', 'DPKIPKernel', 'DPKIPTraining', 'ReweightingKernel',
           'ReweightingTraining', 'build_kwargs']
