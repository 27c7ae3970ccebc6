"""SDV synthesizers (entry points target this submodule, see pyproject)."""

from sdv_dpkme.synthesizers.base import BaseDPKMESynthesizer
from sdv_dpkme.synthesizers.dphp import DPHPSynthesizer
from sdv_dpkme.synthesizers.dpmerf import DPMERFSynthesizer

__all__ = ['BaseDPKMESynthesizer', 'DPHPSynthesizer', 'DPMERFSynthesizer']
