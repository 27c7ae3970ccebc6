"""DP-MERF: random Fourier features (Harder, Adamczewski, Park, AISTATS 2021).

Release plan (Gaussian, one accountant):
  1. class proportions (only with a target), L2 sensitivity sqrt(2)/n, clipped and renormalised;
  2. the joint embedding (1/n) sum_i phi(x_i) y_i^T once (the paper's single release), sensitivity
     2/n because ||phi|| <= 1 (``FourierKernelMap``). Dividing it by the released proportions gives
     the class-weighted embedding of the paper (post-processing);
  3. 'marginals' (unless ``marginal_length_scale=None``): fine-scale per-column Fourier-series
     features of the numeric columns, sensitivity 2/n, and 'pairs' (unless
     ``pair_length_scale=None``): products of per-column features over every pair of columns,
     sensitivity 2/n (both single releases in minibatch mode too).
The generator is trained against these fixed releases; private rows are not touched again.

Minibatch mode (``releases='minibatch'``): every training step releases the joint embedding of a
fresh batch of exactly ``minibatch_size`` rows drawn uniformly without replacement (with the
privacy noise source, so the batches are secret), sensitivity 2/B under replace-one, accounted as
``steps`` subsampled Gaussian releases (RDP amplification for sampling without replacement).
"""

import numpy as np
import torch
from sdv.errors import SynthesizerInputError

from sdv_dpkme.engines import Objective
from sdv_dpkme.features import FourierKernelMap
from sdv_dpkme.privacy import SubsampledGaussianMechanism
from sdv_dpkme.synthesizers.base import BaseDPKMESynthesizer, KernelTerm


class DPMERFSynthesizer(BaseDPKMESynthesizer):
    """Differentially private synthesizer from random-Fourier-feature mean embeddings.

    Model args (besides those of the base class):
        n_features: number D of random Fourier features (even; D/2 frequencies).
        length_scale: public length scale of the Gaussian kernel over the numeric columns, on the
            [0, 1] scale of their public bounds (a hyperparameter, never a median heuristic).
        budget_shares: shares of the privacy precision for 'class_proportions', 'embedding',
            'marginals' and 'pairs' (in minibatch mode the subsampled releases take what the
            others leave).
        releases: 'single' (one release, the paper's main mode) or 'minibatch' (one subsampled
            release per step, see the module docstring); minibatch_size: rows per step then.
        steps, batch_size, learning_rate, latent_dim, generator_dims: generator training.
        numeric_noise: std of the Gaussian noise added to numeric outputs (on the [0, 1] scale),
            in training and sampling, so that structure finer than the kernel can resolve is smooth.
    """

    def __init__(self, metadata, epsilon, delta=1e-5, known_min_max_values=None,
                 known_categories=None, nullable_columns=None, metadata_is_public=False,
                 target_column=None, n_features=1000, length_scale=0.3, budget_shares=None,
                 releases='single', minibatch_size=2000, steps=500, batch_size=1024,
                 learning_rate=1e-2, latent_dim=32, generator_dims=(256, 256), numeric_noise=0.0,
                 locales=('en_US',), random_state=None, device='auto', verbose=True,
                 noise_seed=None, domain=None, domain_budget_share=0.1,
                 marginal_length_scale=0.02, marginal_weight=1.0, pair_length_scale=0.1,
                 pair_weight=1.0):
        if releases not in ('single', 'minibatch'):
            raise SynthesizerInputError(
                f"releases must be 'single' or 'minibatch', got {releases!r}."
            )
        self._init_model(locals())

    def _default_budget_shares(self):
        return {'class_proportions': 0.01, 'embedding': 0.69, 'marginals': 0.15, 'pairs': 0.15}

    def _kernel_terms(self, blocks, generator):
        fmap = FourierKernelMap(blocks, self.n_features, self.length_scale, generator=generator)
        return [KernelTerm('embedding', 'RFF', fmap)]

    def _fit_encoded(self, x, blocks, target, labels, columns, ledger):
        if self.releases == 'single':
            return super()._fit_encoded(x, blocks, target, labels, columns, ledger)
        n = len(x)
        batch = int(self.minibatch_size)
        if not 1 <= batch < n:
            raise SynthesizerInputError(
                f'minibatch_size must be between 1 and the number of rows - 1 ({n - 1}), got '
                f'{self.minibatch_size!r}; use releases="single" for small tables.'
            )
        model_rng = self._torch_generator()
        n_classes = 1 if target is None else target.width
        (term,) = self._kernel_terms(blocks, model_rng)
        extra = self._shared_terms(blocks)
        accountant = ledger.accountant
        # The plain releases (proportions, marginals) take their shares of the budget first; the
        # subsampled RFF releases are then calibrated to spend exactly the rest.
        plain = self._release_plan([term] + extra, has_target=target is not None)
        del plain[term.group]
        sigmas = {}
        if plain:
            fraction = sum(share for share, _ in plain.values())
            sigmas = accountant.calibrate(
                {k: (share / fraction, c) for k, (share, c) in plain.items()}, fraction=fraction
            )
        weights, divisor = self._release_class_weights(
            labels, target, ledger, sigmas.get('class_proportions')
        )
        objectives = self._release_terms(x, labels, n_classes, extra, sigmas, divisor, ledger)
        mechanism = SubsampledGaussianMechanism(
            accountant, ledger.noise, name='embedding_minibatch',
            description=term.feature_map.describe() + f', {batch} of {n} rows per step',
            sensitivity=2 / batch, sample_size=batch, population=n, count=self.steps,
        )
        x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
        labels = torch.as_tensor(np.zeros(n) if labels is None else labels, dtype=torch.long)

        def batch_target(step):
            idx = mechanism.sample_batch()
            y = torch.nn.functional.one_hot(labels[idx], n_classes).double()
            joint = term.feature_map.class_sums(x[idx], y, project=True) / batch
            return mechanism.release(joint) / divisor

        objectives.insert(0, Objective(term.label, term.feature_map, batch_target))
        return self._train(blocks, columns, target, weights, objectives, model_rng, ledger,
                           [term, *extra])

    def _report_notes(self, terms):
        return ['Random Fourier frequencies drawn with the model RNG (data-independent); length '
                f'scale {self.length_scale} on the public [0, 1] scale.']
