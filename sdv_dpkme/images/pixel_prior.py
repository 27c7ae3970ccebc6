"""An accounted release of per-class pixel means, used as a pixel-space prior of the distilled
support (its initialisation and an optional anchor term of the distillation loss).

Algorithm box (replace-one neighbours; K classes, d pixels in [0, 1] after the declared range
is mapped there, so ||x_i|| <= sqrt(d) for every image; a, b > 0 with a^2 + b^2 = 1, public):
  1. ONE Gaussian release of the per-class sums, jointly with the class counts:
            v = sum_i e_{y_i} (x) [a x_i / sqrt(d), b]          (K blocks of d + 1 entries)
     Every row has norm <= 1. Replace-one L2 sensitivity sqrt(2):
       - labels differ: the two rows sit in different blocks, so
         |v(D) - v(D')| = sqrt(|row_a|^2 + |row_b|^2) <= sqrt(2);
       - labels equal: the count entries cancel, |v(D) - v(D')| = a |x_a - x_b| / sqrt(d) <= a,
         since every pixel difference lies in [-1, 1].
  2. (post-processing) mu_c = clip(S_c / (a max(N_c, 1)), 0, 1) with S_c the block's pixel part
     times sqrt(d) and N_c its count entry / b.
Using mu (the initial support mu_c + public noise, and the anchor term) reads no private image
again: everything after step 1 is post-processing.
"""

import math
from dataclasses import dataclass

import torch

from sdv_dpkme.images._inputs import ImageInputError

PIXEL_MEANS = 'class_pixel_means'


@dataclass(frozen=True)
class PixelPrior:
    """Per-class pixel means, released once, as the prior of the distilled support.

    Args:
        share: the share of the budget (of its Gaussian precision, 1 / sigma^2) that the one
            release of the per-class pixel sums and counts gets; the rest goes to the
            distillation's releases as before.
        init_noise: std of the public Gaussian noise (model RNG, on the [0, 1] pixel scale)
            added to the released class mean to initialise each support image.
        anchor: weight of the pixel anchor term anchor * mean((X_s - mu_label)^2) added to the
            distillation loss ('moments' only; 0 = none).
        pixel_weight: a^2 of the algorithm box, the pixel sums' part of each row's squared norm
            (the counts get 1 - a^2).
    """

    share: float = 0.1
    init_noise: float = 0.3
    anchor: float = 0.0
    pixel_weight: float = 0.9

    def __post_init__(self):
        checks = (('share', 0, 1), ('pixel_weight', 0, 1))
        for name, low, high in checks:
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and low < value < high):
                raise ImageInputError(f'PixelPrior.{name} must be in ({low}, {high}), got '
                                      f'{value!r}.')
        for name in ('init_noise', 'anchor'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ImageInputError(f'PixelPrior.{name} must be a finite number >= 0, got '
                                      f'{value!r}.')


def pixel_sensitivity():
    """Replace-one L2 sensitivity of step 1 (pixels in [0, 1])."""
    return math.sqrt(2.0)


def joint_rows(images01, labels, n_classes, pixel_weight):
    """Step 1's vector v (K (d + 1),) in float64 from images (n, ...) in [0, 1]."""
    x = images01.reshape(len(images01), -1).to(torch.float64)
    d = x.shape[1]
    a, b = math.sqrt(pixel_weight), math.sqrt(1.0 - pixel_weight)
    rows = torch.cat([a * x / math.sqrt(d), torch.full((len(x), 1), b, dtype=x.dtype)], dim=1)
    out = torch.zeros(n_classes, d + 1, dtype=torch.float64)
    out.index_add_(0, torch.as_tensor(labels, dtype=torch.long), rows)
    return out.reshape(-1)


def release_class_means(images01, labels, n_classes, ledger, prior, description=''):
    """Steps 1-2: the release (recorded in the ledger, spending ``prior.share`` of the budget
    still unspent) and the clipped per-class means (K, *image shape) in [0, 1]."""
    x = images01.reshape(len(images01), -1)
    if len(x) and not (torch.isfinite(x).all() and float(x.min()) >= 0 and float(x.max()) <= 1):
        raise ValueError('release_class_means needs pixels in [0, 1] (the caller clips them)')
    d = x.shape[1]
    sigma = ledger.accountant.calibrate({PIXEL_MEANS: (1.0, 1)},
                                        fraction=float(prior.share))[PIXEL_MEANS]
    noisy = ledger.mechanism.release(
        joint_rows(images01, labels, n_classes, prior.pixel_weight), name=PIXEL_MEANS,
        sensitivity=pixel_sensitivity(), noise_multiplier=sigma,
        description=(f'per-class pixel sums and counts ({n_classes} x ({d} + 1)) in one '
                     f'release, rows e_y (x) [a x / sqrt({d}), b], a^2 = '
                     f'{prior.pixel_weight:g}, pixels in [0, 1]{description}'),
        details={'pixel_range': '[0, 1] after the declared range is mapped there',
                 'pixel_weight': float(prior.pixel_weight),
                 'budget_share': float(prior.share)},
    ).reshape(n_classes, d + 1)
    a, b = math.sqrt(prior.pixel_weight), math.sqrt(1.0 - prior.pixel_weight)
    counts = torch.clamp(noisy[:, -1] / b, min=1.0)
    means = noisy[:, :-1] * math.sqrt(d) / a / counts[:, None]
    return means.clamp(0.0, 1.0).reshape(n_classes, *images01.shape[1:]), float(sigma)


def initial_support(means, support_labels, init_noise, generator):
    """The support's start (post-processing): mu_label + public noise, clipped to [0, 1]."""
    start = means[torch.as_tensor(support_labels, dtype=torch.long)]
    noise = torch.randn(start.shape, generator=generator, dtype=torch.float64)
    return (start + float(init_noise) * noise).clamp(0.0, 1.0).float()
