"""Differentially private SDV synthesizers from kernel mean embeddings."""

import sdv  # noqa: F401  (first: SDV's add-on discovery then imports our submodule cleanly)

from sdv_dpkme._version import __version__  # noqa: E402
from sdv_dpkme.engines.errors import CollapsedGeneratorWarning  # noqa: E402
from sdv_dpkme.privacy import PrivacyReport  # noqa: E402
from sdv_dpkme.privacy.diagnostics import private_values_in_errors  # noqa: E402
from sdv_dpkme.scale import fit_distributed  # noqa: E402
from sdv_dpkme.synthesizers import (  # noqa: E402
    DPHPKernel,
    DPHPSynthesizer,
    DPHPTraining,
    DPKIPKernel,
    DPKIPSynthesizer,
    DPKIPTraining,
    DPMERFKernel,
    DPMERFSynthesizer,
    DPMERFTraining,
    DPReweightingSynthesizer,
    ReweightingKernel,
    ReweightingTraining,
)

__all__ = ['CollapsedGeneratorWarning', 'DPHPKernel', 'DPHPSynthesizer', 'DPHPTraining',
           'DPKIPKernel', 'DPKIPSynthesizer', 'DPKIPTraining', 'DPMERFKernel', 'DPMERFSynthesizer',
           'DPMERFTraining', 'DPReweightingSynthesizer', 'PrivacyReport', 'ReweightingKernel',
           'ReweightingTraining', '__version__', 'fit_distributed', 'private_values_in_errors']
