"""SDV synthesizers (entry points target this submodule, see pyproject)."""

from sdv_dpkme.synthesizers.base import BaseDPSynthesizer
from sdv_dpkme.synthesizers.dphp import DPHPSynthesizer
from sdv_dpkme.synthesizers.dpkip import DPKIPSynthesizer
from sdv_dpkme.synthesizers.dpmerf import DPMERFSynthesizer
from sdv_dpkme.synthesizers.dpreweighting import DPReweightingSynthesizer
from sdv_dpkme.synthesizers.kme_base import BaseDPKMESynthesizer
from sdv_dpkme.synthesizers.options import (
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
