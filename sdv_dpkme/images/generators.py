"""DP-MERF and DP-HP image generators: the tables' kernel-mean-embedding engine on pixels.

An image of P pixels (all channels) is an encoded row of P numeric columns in [0, 1] (the
declared pixel range mapped linearly, nothing read off the data) plus the label block: one-hot over
the n_classes declared classes and the engine's out-of-domain bucket (never sampled). Everything
else is ``engines.kme.fit``: the class proportions (sensitivity sqrt(2)/n) and the joint
class-conditional embedding (1/n) sum_i phi(x_i) y_i^T (sensitivity 2/n, ||phi|| <= 1) are
released once through the fit's ledger; an MLP generator (sigmoid pixels) is then trained to match
them, never touching a private image again.

- DP-MERF: ``FourierKernelMap``: random Fourier features of the Gaussian kernel on the whole
  image vector (length scale on the [0, 1] pixel scale, a public hyperparameter).
- DP-HP: ``SumKernelMap``: Hermite features of a Gaussian kernel per pixel, averaged over the
  pixels (the paper's sum kernel; its product kernel over random pixel subsets is left out).
"""

import time

import numpy as np
import torch

from sdv_dpkme.engines import kme
from sdv_dpkme.engines.generator import resolve_device
from sdv_dpkme.engines.kme import KernelTerm
from sdv_dpkme.features import Block, FourierKernelMap, SumKernelMap
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
from sdv_dpkme.privacy import Ledger
from sdv_dpkme.privacy.diagnostics import sanitised_errors


class _KMEImageGenerator:
    """Shared fit/sample of the two generators (see the module docstring)."""

    _group = None  # release group of the embedding

    def _common(self, epsilon, delta, n_classes, steps, batch_size, learning_rate, latent_dim,
                generator_dims, pixel_range, device, random_state, verbose):
        self.epsilon = epsilon
        self.delta = delta
        self.n_classes = n_classes
        self.steps = steps
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.latent_dim = latent_dim
        self.generator_dims = generator_dims
        self.pixel_range = pixel_range
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def get_parameters(self):
        """Every constructor argument by name (like SDV's ``get_parameters``)."""
        return constructor_parameters(self)

    def _check_parameters(self):
        check_budget(self.epsilon, self.delta)
        positive_int(self.n_classes, 'n_classes', minimum=2)
        positive_int(self.steps, 'steps')
        positive_int(self.batch_size, 'batch_size')
        positive_int(self.latent_dim, 'latent_dim')
        positive_number(self.learning_rate, 'learning_rate')
        return check_pixel_range(self.pixel_range)

    def _feature_map(self, blocks, rng):
        raise NotImplementedError

    @sanitised_errors  # messages quote no private value (privacy.diagnostics)
    def fit(self, X, y):
        """Release the embeddings of (X, y) and train the generator on them; returns self."""
        pixel_range = self._check_parameters()
        images = as_images(X, pixel_range)
        n = len(images)
        labels = as_labels(y, n, self.n_classes)
        started = time.perf_counter()
        self._shape = tuple(int(s) for s in images.shape[1:])
        self._squeeze = np.ndim(X) == 3
        pixels = int(np.prod(self._shape))
        blocks = [Block(f'p{i}', 'numeric', (i,)) for i in range(pixels)]
        width = self.n_classes + 1  # + the engine's out-of-domain bucket (empty, never sampled)
        target = Block('label', 'categorical', tuple(range(pixels, pixels + width)))
        columns = [f'p{i}' for i in range(pixels)] + [f'label_{c}' for c in range(width)]
        x = np.zeros((n, pixels + width), dtype=np.float64)
        x[:, :pixels] = images.reshape(n, -1).numpy()
        x[np.arange(n), pixels + labels] = 1.0
        del images
        rng = torch.Generator().manual_seed(
            int(np.random.SeedSequence(self.random_state).generate_state(1)[0]))
        fmap = self._feature_map(blocks, rng)
        terms = [KernelTerm(self._group, self._group, fmap)]
        shares = {'class_proportions': 0.01, self._group: 0.99}
        training = kme.Training(int(self.steps), int(self.batch_size), float(self.learning_rate),
                                int(self.latent_dim), tuple(self.generator_dims), 0.0,
                                resolve_device(self.device))
        ledger = Ledger.open(self.epsilon, self.delta)
        model = kme.fit(x, labels, blocks, target, columns, ledger, terms, shares, training, rng,
                        self.verbose)
        del x
        self._model = model
        self._pixels = pixels
        self.class_weights_ = np.asarray(model.class_weights[:-1])
        self.loss_history_ = model.loss_values
        self.privacy_report_ = ledger.accountant.report(
            ledger.noise,
            public_inputs=[f'pixel_range={tuple(pixel_range)}', f'n_classes={self.n_classes}',
                           f'image shape {self._shape}', 'n (public under replace-one)'],
            notes=[f'{fmap.describe()}; random choices from the model RNG (data-independent). '
                   'Generator initialised from the model RNG; pixels mapped from the declared '
                   'range to [0, 1], no private normalisation.'],
        )
        self.fit_seconds_ = time.perf_counter() - started
        return self

    def sample(self, n, random_state=None):
        """(X, y): ``n`` generated images in the pixel range's scale, float32, with the shape
        the model was fitted on, and their labels (drawn by the released class proportions)."""
        if not hasattr(self, '_model'):
            raise ImageInputError('Fit the generator before sampling.')
        n = positive_int(n, 'n')
        self._model.set_random_state(random_state)
        rows = self._model.sample(n).to_numpy()
        low, high = check_pixel_range(self.pixel_range)
        images = (low + (high - low) * rows[:, :self._pixels]).astype(np.float32)
        images = images.reshape(n, *self._shape)
        if self._squeeze:
            images = images[:, 0]
        labels = rows[:, self._pixels:].argmax(axis=1).astype(np.int64)
        return images, labels

    def __getstate__(self):
        return stamped(self.__dict__)

    def __setstate__(self, state):
        check_format(state, type(self).__name__)
        self.__dict__.update(state)


class DPMERFImageGenerator(_KMEImageGenerator):
    """DP-MERF on images: random Fourier features of a Gaussian kernel on the pixel vector.

    ``length_scale`` is on the [0, 1] pixel scale over the whole image (MNIST digits lie about 10
    apart), ``n_features`` the number of random features (even). The rest is the generator
    training of the tables (``steps`` Adam steps on batches of ``batch_size`` generated images,
    balanced over the classes).
    """

    _group = 'embedding'

    def __init__(self, epsilon, delta=1e-5, n_features=10_000, length_scale=5.0, n_classes=10,
                 steps=2000, batch_size=500, learning_rate=1e-3, latent_dim=32,
                 generator_dims=(256, 512), pixel_range=(0.0, 1.0), device='cpu',
                 random_state=None, verbose=False):
        self.n_features = n_features
        self.length_scale = length_scale
        self._common(epsilon, delta, n_classes, steps, batch_size, learning_rate, latent_dim,
                     generator_dims, pixel_range, device, random_state, verbose)

    def _feature_map(self, blocks, rng):
        positive_number(self.length_scale, 'length_scale')
        positive_int(self.n_features, 'n_features', minimum=2)
        return FourierKernelMap(blocks, int(self.n_features), float(self.length_scale),
                                generator=rng)


class DPHPImageGenerator(_KMEImageGenerator):
    """DP-HP on images: the Hermite sum kernel over the pixels (order ``order``, squared kernel
    length ``sigma2`` on the [-1/2, 1/2] centred pixel scale)."""

    _group = 'sum_kernel'

    def __init__(self, epsilon, delta=1e-5, order=20, sigma2=0.1, n_classes=10, steps=2000,
                 batch_size=500, learning_rate=1e-3, latent_dim=32, generator_dims=(256, 512),
                 pixel_range=(0.0, 1.0), device='cpu', random_state=None, verbose=False):
        self.order = order
        self.sigma2 = sigma2
        self._common(epsilon, delta, n_classes, steps, batch_size, learning_rate, latent_dim,
                     generator_dims, pixel_range, device, random_state, verbose)

    def _feature_map(self, blocks, rng):
        positive_int(self.order, 'order', minimum=0)
        positive_number(self.sigma2, 'sigma2')
        return SumKernelMap(blocks, int(self.order), float(self.sigma2))
