"""DP-KIP-ScatterNet (Vinaroz & Park, TMLR 2024): distil private labelled images into a few
labelled images by DP-SGD on the kernel-ridge loss of the linear kernel on ScatterNet features.

Algorithm box (the paper's KIP loss, ScatterNet features and DP-SGD; our CPU-friendly step 2):
  input: private images x_1..x_n in a declared pixel range (mapped to [0, 1], nothing else),
         labels y_i in 0..K-1; m_c = images_per_class support images per class.
  0. phi_i = GN(S(x_i)) for every private image, ONCE (S: kymatio scattering J=2, L=8; GN: the
     per-location group normalisation). phi is fixed, so no step recomputes it.
  1. X_s <- public noise (uniform pixels, model RNG); Y_s <- centred one-hot labels, fixed.
  2. for t = 1..T  (T = ceil(epochs / q), q = batch_size / n; n is public under replace-one):
       F   <- GN(S(X_s))                                   (m, p), with its autograd graph
       J   <- Poisson sample, each image with probability q (secret noise source)
       g_i <- d l_i / d F, the gradient w.r.t. the support's FEATURE matrix (closed form,
              ``engines.kip.linear_feature_gradients``), for i in J
       G   <- (sum_i g_i / max(1, ||g_i|| / C) + N(0, (sigma 2C)^2 I)) / (q n)
       X_s <- Adam(X_s, J_F(X_s)^T G)      (vector-Jacobian product through the scattering:
                                            post-processing of the noisy G)
       X_s <- clip(X_s, 0, 1)              (projection: the released images lie in the declared
                                            pixel range by construction, whatever the noise)
  3. release (X_s, Y_s).
``mechanism='moments'`` replaces step 2's T releases by ONE release of the two sums that the
linear-kernel KIP loss reads (sum phi phi^T and sum phi y^T of unit-norm features, jointly), then
optimises the support on the whole-data loss with no further private access
(``engines.kip_moments`` has its algorithm box).
Privacy: step 2's G is a Gaussian mechanism on a sum of per-example vectors of norm <= C, so
replacing one image moves the sum by <= 2C; the T releases are one Poisson-subsampled Gaussian
group of the ledger's accountant (``privacy.subsampled``). The map back to pixels uses F's
Jacobian at the current (already private) support only, so it adds no privacy cost. The paper
clips the gradient w.r.t. the support *pixels* instead; clipping in feature space is a different
(equally valid) per-example clipping, chosen because it needs no per-example backward pass through
the scattering transform.
"""

import math
import time
import warnings

import numpy as np
import torch
from tqdm.auto import tqdm

from sdv_dpkme.engines import kip_moments
from sdv_dpkme.engines.generator import resolve_device
from sdv_dpkme.engines.kip import (
    centred_one_hot,
    clip_linear_feature_gradients,
    noisy_gradient,
)
from sdv_dpkme.images._inputs import (
    ImageInputError,
    as_images,
    as_labels,
    check_budget,
    check_format,
    check_pixel_range,
    constructor_parameters,
    positive_int,
    positive_number,
    stamped,
)
from sdv_dpkme.images.pixel_prior import PixelPrior, initial_support, release_class_means
from sdv_dpkme.images.scattering import PAPER_NORM_EPS, ScatterNet
from sdv_dpkme.privacy import Ledger, PoissonSubsampledGaussianMechanism
from sdv_dpkme.privacy.diagnostics import sanitised_errors


MECHANISMS = ('dp-sgd', 'moments')
#: the variance floor 'moments' uses (the paper's, PAPER_NORM_EPS, is 1e-5): most second-order
#: groups (variance median 2e-7 on [0, 1] MNIST pixels) keep their contrast instead of being
#: damped towards 0 (benchmarks/results/images.md)
MOMENTS_NORM_EPS = 1e-6


def project_unit_box(support):
    """In place: the support back into the unit box after every step (NaN to the box's centre),
    so what is released lies in the declared pixel range by construction, whatever the noise."""
    return support.nan_to_num_(nan=0.5, posinf=1.0, neginf=0.0).clamp_(0.0, 1.0)


def to_pixel_range(support01, pixel_range):
    """Support in [0, 1] -> float32 images in the declared range (the ends clipped again after
    the float32 cast, which may round past them)."""
    low, high = (float(v) for v in pixel_range)
    images = (low + (high - low) * support01.double()).float()
    low32, high32 = np.float32(low), np.float32(high)
    if float(low32) < low:
        low32 = np.nextafter(low32, np.float32(np.inf))
    if float(high32) > high:
        high32 = np.nextafter(high32, np.float32(-np.inf))
    return images.clamp_(float(low32), float(high32))


def krr_fit(support_features, support_y, regularization):
    """alpha = (K_ss + lambda tr(K_ss)/m I)^-1 Y_s for the linear kernel (float64)."""
    f = support_features.double()
    k_ss = f @ f.T
    m = len(f)
    ridge = abs(regularization) * torch.trace(k_ss) / m
    return torch.linalg.solve(k_ss + ridge * torch.eye(m, dtype=f.dtype), support_y.double())


class DPKIPScatterNet:
    """Differentially private distillation of labelled images (DP-KIP-ScatterNet).

    Args:
        epsilon, delta: the (epsilon, delta) budget (replace-one neighbouring datasets).
        images_per_class: support images per class (the distilled set has n_classes times it);
            public: it does not depend on how many private images a class holds (any, or none).
        n_classes: the public number of classes; labels must be 0..n_classes-1.
        epochs, batch_size: DP-SGD length: each step includes every private image independently
            with probability q = batch_size / n (Poisson), for T = ceil(epochs / q) steps.
        clip_norm: C, the per-example clip of the gradient w.r.t. the support features.
        learning_rate: Adam's step size on the support pixels (on the [0, 1] scale).
        regularization: lambda of the trace-scaled ridge.
        pixel_range: the declared public range of the pixel values (default [0, 1]).
        mechanism: 'moments' (default: one release of the two data sums the loss reads, features
            scaled to unit norm; the kernel is then the linear kernel on unit-norm ScatterNet
            features, for training and prediction) or 'dp-sgd' (the paper's: T Poisson-subsampled
            noisy gradients; ``epochs``, ``batch_size``, ``clip_norm`` apply to it only).
            'moments' scored higher on MNIST and FashionMNIST (benchmarks/results/images.md).
        moment_share: 'moments' only: c, the Gram sum's share of each image's squared norm in
            the one joint release of both sums (rows [sqrt(c) phi, sqrt(1 - c) y / |y|]; the
            rest goes to sum phi y^T). Default 0.85 (``engines.kip_moments.GRAM_WEIGHT``).
        moment_ridge: 'moments' only: rho added to the released Gram / n (after its PSD part).
            'auto' (default): 0.1 x the edge of the noise spectrum, 2 sigma sqrt(p) / (c n)
            (public), so the ridge shrinks as the noise does; ``moment_ridge_`` says what a fit
            used.
        moment_steps: 'moments' only: Adam steps on the support (no privacy cost).
        group_norm_eps: the variance floor of the ScatterNet group normalisation (public). None
            (default): 1e-6 for 'moments' (more accurate than the paper's 1e-5 there,
            benchmarks/results/images.md), the paper's 1e-5 for 'dp-sgd'; ``group_norm_eps_``
            says what a fit used, and prediction uses the same.
        pixel_prior: a ``PixelPrior`` (default ``PixelPrior()``) or None. With one, ONE extra
            Gaussian release of the per-class pixel sums and counts (sensitivity sqrt 2,
            ``images.pixel_prior``) gets ``share`` of the budget, and the support starts from
            the released class means plus public noise (and, with ``anchor`` > 0 under
            'moments', is pulled towards them): images a ConvNet can learn from. None: the
            support starts from public uniform noise and the whole budget goes to the
            distillation.
        device: 'cpu' (default), 'auto' (GPU if torch sees one) or a torch device.
        random_state: seed of the model RNG (support initialisation); never the noise.

    After ``fit``: ``distilled_images_`` (m, [C,] H, W) float32 in the pixel range's scale,
    ``distilled_labels_`` (m,) int64, ``privacy_report_`` (``PrivacyReport``), ``history_``
    (DP outputs: DP-SGD's noisy-gradient norms, or the loss on the released sums),
    ``fit_seconds_``. ``predict``/``score`` run kernel ridge regression on
    the distilled set (the paper's KRR accuracy).
    """

    def __init__(self, epsilon, delta=1e-5, images_per_class=10, n_classes=10, epochs=10,
                 batch_size=2000, clip_norm=1e-3, learning_rate=0.05, regularization=1e-3,
                 pixel_range=(0.0, 1.0), mechanism='moments',
                 moment_share=kip_moments.GRAM_WEIGHT, moment_ridge='auto', moment_steps=300,
                 group_norm_eps=None, pixel_prior=PixelPrior(), device='cpu',
                 random_state=None, verbose=False):
        self.epsilon = epsilon
        self.delta = delta
        self.images_per_class = images_per_class
        self.n_classes = n_classes
        self.epochs = epochs
        self.batch_size = batch_size
        self.clip_norm = clip_norm
        self.learning_rate = learning_rate
        self.regularization = regularization
        self.pixel_range = pixel_range
        self.mechanism = mechanism
        self.moment_share = moment_share
        self.moment_ridge = moment_ridge
        self.moment_steps = moment_steps
        self.group_norm_eps = group_norm_eps
        self.pixel_prior = pixel_prior
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def get_parameters(self):
        """Every constructor argument by name (like SDV's ``get_parameters``)."""
        return constructor_parameters(self)

    def _check_parameters(self):
        check_budget(self.epsilon, self.delta)
        positive_int(self.images_per_class, 'images_per_class')
        positive_int(self.n_classes, 'n_classes', minimum=2)
        positive_number(self.epochs, 'epochs')
        positive_number(self.batch_size, 'batch_size')
        positive_number(self.clip_norm, 'clip_norm')
        positive_number(self.learning_rate, 'learning_rate')
        positive_number(self.regularization, 'regularization', allow_zero=True)
        if self.mechanism not in MECHANISMS:
            raise ImageInputError(f'mechanism must be one of {MECHANISMS}, got {self.mechanism!r}')
        if self.group_norm_eps is not None:
            positive_number(self.group_norm_eps, 'group_norm_eps')
        if self.pixel_prior is not None and not isinstance(self.pixel_prior, PixelPrior):
            raise ImageInputError(f'pixel_prior must be a PixelPrior or None, got '
                                  f'{type(self.pixel_prior).__name__}.')
        if self.mechanism == 'moments':
            if not (isinstance(self.moment_ridge, str) and self.moment_ridge == 'auto'):
                try:
                    positive_number(self.moment_ridge, 'moment_ridge', allow_zero=True)
                except ImageInputError:
                    raise ImageInputError(f"moment_ridge must be 'auto' or a finite number "
                                          f">= 0, got {self.moment_ridge!r}.") from None
            positive_int(self.moment_steps, 'moment_steps')
            if not positive_number(self.moment_share, 'moment_share') < 1:
                raise ImageInputError(f'moment_share must be below 1, got {self.moment_share!r}.')
        return check_pixel_range(self.pixel_range)

    def _norm_eps(self):
        if self.group_norm_eps is not None:
            return float(self.group_norm_eps)
        return MOMENTS_NORM_EPS if self.mechanism == 'moments' else PAPER_NORM_EPS

    def steps_for(self, n):
        """(q, T) for n private images: the sampling rate and the number of DP-SGD steps."""
        q = min(1.0, float(self.batch_size) / n)
        return q, max(1, math.ceil(float(self.epochs) / q - 1e-9))

    @sanitised_errors  # messages quote no private value (privacy.diagnostics)
    def fit(self, X, y):
        """Distil (X, y); returns self."""
        pixel_range = self._check_parameters()
        images = as_images(X, pixel_range)
        n = len(images)
        labels = as_labels(y, n, self.n_classes)
        started = time.perf_counter()
        device = resolve_device(self.device)
        net = ScatterNet(images.shape[2:], norm_eps=self._norm_eps()).to(device)
        # step 0: the private features, once (float32 to halve memory; float64 per batch)
        phi = net.batched(images.to(device) if device.type != 'cpu' else images)
        shape, squeeze = tuple(images.shape[1:]), np.ndim(X) == 3
        held = [images] if self.pixel_prior is not None else [None]
        del images  # the callee holds the only reference and frees it after the pixel release
        return self._fit_features(phi, labels, shape, squeeze, pixel_range, started,
                                  images01=held.pop())

    def _fit_features(self, phi, labels, shape, squeeze, pixel_range, started, images01=None):
        """Steps 1-3 on the private features ``phi`` (n, p) of step 0 (and, with a pixel
        prior, the private images ``images01`` in [0, 1]). Benchmarks call it with cached
        features to compare settings; ``fit`` is the entry point."""
        device = resolve_device(self.device)
        rng = torch.Generator().manual_seed(
            int(np.random.SeedSequence(self.random_state).generate_state(1)[0]))
        channels, height, width = shape
        self.group_norm_eps_ = self._norm_eps()
        net = ScatterNet((height, width), norm_eps=self.group_norm_eps_).to(device)
        y_all = centred_one_hot(torch.from_numpy(labels), self.n_classes)
        m_c = self.images_per_class
        support_labels = np.repeat(np.arange(self.n_classes), m_c)
        support_y = centred_one_hot(torch.from_numpy(support_labels), self.n_classes).to(device)
        ledger = Ledger.open(self.epsilon, self.delta)
        prior, anchor = self.pixel_prior, None
        if prior is None:
            support = torch.rand(len(support_labels), channels, height, width, generator=rng)
            init_note = 'public uniform noise (model RNG)'
        else:
            # the one pixel release first: the distillation's releases spend the rest
            means, _ = release_class_means(images01.clamp(0.0, 1.0), labels, self.n_classes,
                                           ledger, prior)
            support = initial_support(means, support_labels, prior.init_noise, rng)
            if prior.anchor > 0:
                anchor = (float(prior.anchor),
                          means[torch.from_numpy(support_labels)].float().to(device))
            init_note = (f'the released class pixel means plus public Gaussian noise (std '
                         f'{prior.init_noise:g} on the [0, 1] scale, model RNG)')
        del images01
        support = support.to(device).requires_grad_(True)
        self.__dict__.pop('moment_ridge_', None)  # a refit with 'dp-sgd' has none
        if self.mechanism == 'moments':
            history, steps, q, notes = self._distil_from_moments(
                phi, y_all, net, support, support_y, ledger, device, anchor)
        else:
            history, steps, q, notes = self._dp_sgd(phi, y_all, net, support, support_y, ledger,
                                                    device)
        del phi
        support = support.detach().cpu()
        if not torch.isfinite(support).all():
            warnings.warn('The distilled images hold non-finite values; lower learning_rate.')
        images_out = to_pixel_range(support, pixel_range)
        self._shape = (int(channels), int(height), int(width))
        self._support01 = support.float()
        self.distilled_images_ = (images_out[:, 0] if squeeze else images_out).numpy()
        self.distilled_labels_ = support_labels.astype(np.int64)
        self.history_ = np.asarray(history)
        self.n_steps_ = steps
        self.sampling_rate_ = q
        self.unit_features_ = self.mechanism == 'moments'  # the kernel the support was fit for
        self.privacy_report_ = ledger.accountant.report(
            ledger.noise,
            public_inputs=[f'pixel_range={tuple(pixel_range)}', f'n_classes={self.n_classes}',
                           f'image shape {self._shape}', 'n (public under replace-one)'],
            notes=[
                f'Support initialised from {init_note}; '
                f'{len(support_labels)} images, labels fixed (centred one-hot); the support '
                f'is projected to the pixel range after every step, so the released images lie '
                f'in it whatever the noise.',
                *notes,
                *([] if prior is None else [
                    f'Pixel prior: one release of the per-class pixel sums and counts '
                    f'({float(prior.share):g} of the budget); the class means derived from it '
                    f'set the initial support'
                    + (f' and a pixel anchor term (weight {float(prior.anchor):g}) in the '
                       f'distillation loss' if anchor is not None else '')
                    + ': post-processing of that release.']),
                'No private normalisation: pixels are mapped from the declared range to [0, 1]; '
                f'ScatterNet group normalisation per image and location, variance floor '
                f'{self.group_norm_eps_:g} (public).',
            ],
        )
        self.fit_seconds_ = time.perf_counter() - started
        self._alpha = None
        return self

    def _dp_sgd(self, phi, y_all, net, support, support_y, ledger, device):
        """Step 2 of the algorithm box: T noisy, clipped feature gradients (the paper's)."""
        n = len(phi)
        q, steps = self.steps_for(n)
        clip = float(self.clip_norm)
        mechanism = PoissonSubsampledGaussianMechanism(
            ledger.accountant, ledger.noise, name='kip_feature_gradients',
            description=(f'DP-SGD gradients of the KIP loss (linear kernel on ScatterNet '
                         f'features, ridge {self.regularization:g}) w.r.t. the feature matrix of '
                         f'{len(support)} support images x {phi.shape[1]} features, '
                         f'per-example clip {clip:g}'),
            clip_norm=clip, sampling_probability=q, population=n, count=steps,
            dimension=len(support) * phi.shape[1],
            details={'clipped_in': 'support feature space (then mapped back to pixels by the '
                                   'scattering Jacobian: post-processing)'},
        )
        optimizer = torch.optim.Adam([support], lr=float(self.learning_rate))
        history = []
        for step in tqdm(range(steps), desc='DP-SGD on the support images',
                         disable=not self.verbose):
            feats = net(support)
            f64 = feats.detach().double()

            def clipped_sum(batch):
                phi_b = phi[batch].to(device=device, dtype=torch.float64)
                return clip_linear_feature_gradients(
                    f64, support_y, phi_b, y_all[batch].to(device), self.regularization, clip,
                )[0]

            noisy = noisy_gradient(mechanism, clipped_sum, f64)
            optimizer.zero_grad()
            feats.backward(noisy.to(device=device, dtype=feats.dtype))  # J^T G: post-processing
            optimizer.step()
            with torch.no_grad():
                project_unit_box(support)
            history.append(float(noisy.norm()))
        notes = [
            f'{steps} DP-SGD steps, each image in a batch with probability q = {q:.6g} '
            f'(n = {n}); noisy sum divided by the expected batch size q n.',
            'Per-example gradients are taken and clipped w.r.t. the support feature matrix '
            '(private features fixed, computed once); the noisy gradient is mapped to pixels '
            'through the scattering Jacobian of the current support (post-processing).',
        ]
        return history, steps, q, notes

    def _distil_from_moments(self, phi, y_all, net, support, support_y, ledger, device,
                             anchor=None):
        """``mechanism='moments'``: one release of sum phi phi^T and sum phi y^T (unit-norm
        features), then Adam on the whole-data loss (``engines.kip_moments``)."""
        n = len(phi)
        phi = kip_moments.unit_rows(phi.float())
        gram, cross, gram_noise = kip_moments.release_moments(
            phi, y_all, ledger, gram_weight=float(self.moment_share),
            description=', ScatterNet features of the private images scaled to unit norm')
        del phi
        ridge = (kip_moments.auto_ridge(gram_noise, len(gram), n) if self.moment_ridge == 'auto'
                 else float(self.moment_ridge))
        self.moment_ridge_ = ridge
        gram, cross = kip_moments.loss_matrices(gram, cross, n, ridge)
        gram, cross = gram.to(device), cross.to(device)

        def features_of(x):
            return kip_moments.unit_rows(net(x).double())

        progress = (lambda r: tqdm(r, desc='KIP on the released moments',
                                   disable=not self.verbose))
        penalty = None
        if anchor is not None:  # pixel anchor to the released class means: post-processing
            weight, target = anchor

            def penalty(x):
                return weight * ((x - target) ** 2).mean()
        history = kip_moments.distil(support, features_of, support_y, gram, cross,
                                     self.regularization, self.moment_steps, self.learning_rate,
                                     project=project_unit_box, progress=progress,
                                     penalty=penalty)
        notes = [
            f'One joint release of the two sums the linear-kernel KIP loss reads (n = {n}, '
            f'Gram share c = {float(self.moment_share):g}): the '
            f'support was then optimised for {int(self.moment_steps)} Adam steps on the '
            f'whole-data loss, with no further access to private images (post-processing).',
            f'Features scaled to unit norm per image (no clipping needed); the released Gram '
            f'sum / n is projected to its PSD part plus {ridge:.3g} I'
            + (f' ({kip_moments.RIDGE_PER_EDGE:g} x the edge of the noise spectrum, from sigma, '
               f'c, n and the feature count: public).' if self.moment_ridge == 'auto' else '.'),
        ]
        return list(history), int(self.moment_steps), None, notes

    # ------------------------------------------------------------------ KRR on the distilled set
    def _check_fitted(self):
        if not hasattr(self, 'distilled_images_'):
            raise ImageInputError('Fit the model before predicting.')

    def _net(self):
        net = ScatterNet(self._shape[1:], norm_eps=self.group_norm_eps_)
        if not self.unit_features_:
            return net
        return lambda x: kip_moments.unit_rows(net(x))

    def decision_function(self, X, chunk=1000):
        """KRR predictions (n, n_classes) of the linear kernel on ScatterNet features."""
        self._check_fitted()
        images = as_images(X, check_pixel_range(self.pixel_range), shape=self._shape)
        net = self._net()
        if getattr(self, '_alpha', None) is None:
            with torch.no_grad():
                support_features = net(self._support01).double()
            y_s = centred_one_hot(torch.from_numpy(self.distilled_labels_), self.n_classes)
            self._alpha = (support_features, krr_fit(support_features, y_s, self.regularization))
        support_features, alpha = self._alpha
        out = []
        with torch.no_grad():
            for start in range(0, len(images), chunk):
                feats = net(images[start:start + chunk]).double()
                out.append(feats @ support_features.T @ alpha)
        return torch.cat(out).numpy()

    def predict(self, X):
        return self.decision_function(X).argmax(axis=1)

    def score(self, X, y):
        """KRR test accuracy on (X, y)."""
        return float(np.mean(self.predict(X) == np.asarray(y)))

    def __getstate__(self):
        state = dict(self.__dict__)
        state['_alpha'] = None  # a cache (of DP outputs); recomputed on demand
        return stamped(state)

    def __setstate__(self, state):
        check_format(state, type(self).__name__)
        self.__dict__.update(state)
