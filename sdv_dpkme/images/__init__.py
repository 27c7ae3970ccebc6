"""Array API for labelled images (scikit-learn style): DP-KIP-ScatterNet distillation and the
DP-MERF / DP-HP image generators. All go through the package's ledger, accountant and
``PrivacyReport``; see docs/images.md."""

from sdv_dpkme.images._inputs import ImageInputError
from sdv_dpkme.images.convnet import PaperConvNet, convnet_accuracy, train_convnet
from sdv_dpkme.images.distill import DPKIPScatterNet
from sdv_dpkme.images.pixel_prior import PixelPrior
from sdv_dpkme.images.generators import DPHPImageGenerator, DPMERFImageGenerator
from sdv_dpkme.images.scattering import ScatterNet, group_normalise

__all__ = [
    'DPHPImageGenerator',
    'DPKIPScatterNet',
    'DPMERFImageGenerator',
    'ImageInputError',
    'PaperConvNet',
    'PixelPrior',
    'ScatterNet',
    'convnet_accuracy',
    'group_normalise',
    'train_convnet',
]
