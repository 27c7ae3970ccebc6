"""Differentially private SDV synthesizers from kernel mean embeddings.

The public names below are imported on first use (PEP 562), so ``import sdv_dpkme`` and
``sdv-dpkme --help`` do not load torch, SDV or the engines.
"""

import importlib

from sdv_dpkme._version import __version__

# public name -> module that defines it
_EXPORTS = {
    'CollapsedGeneratorWarning': 'sdv_dpkme.engines.errors',
    'DPHPSynthesizer': 'sdv_dpkme.synthesizers',
    'DPHPKernel': 'sdv_dpkme.synthesizers',
    'DPHPTraining': 'sdv_dpkme.synthesizers',
    'DPKIPKernel': 'sdv_dpkme.synthesizers',
    'DPKIPTraining': 'sdv_dpkme.synthesizers',
    'DPMERFKernel': 'sdv_dpkme.synthesizers',
    'DPMERFTraining': 'sdv_dpkme.synthesizers',
    'ReweightingKernel': 'sdv_dpkme.synthesizers',
    'ReweightingTraining': 'sdv_dpkme.synthesizers',
    'DPKIPSynthesizer': 'sdv_dpkme.synthesizers',
    'DPMERFSynthesizer': 'sdv_dpkme.synthesizers',
    'DPReweightingSynthesizer': 'sdv_dpkme.synthesizers',
    'NoiseDominatedWarning': 'sdv_dpkme.engines.errors',
    'PrivacyReport': 'sdv_dpkme.privacy',
    'fit_distributed': 'sdv_dpkme.scale',
    'private_values_in_errors': 'sdv_dpkme.privacy.diagnostics',
}

__all__ = sorted([*_EXPORTS, '__version__'])


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    # SDV first: its add-on discovery then imports our synthesizers module cleanly
    importlib.import_module('sdv')
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted({*globals(), *__all__})
