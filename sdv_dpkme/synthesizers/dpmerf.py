"""DP-MERF: random Fourier features (Harder, Adamczewski, Park, AISTATS 2021).

Release plan (Gaussian, one accountant):
  1. class proportions (only with a target), L2 sensitivity sqrt(2)/n, clipped and renormalised;
  2. the joint embedding (1/n) sum_i phi(x_i) y_i^T once (the paper's single release), sensitivity
     2/n because ||phi|| <= 1 (``FourierKernelMap``). Dividing it by the released proportions gives
     the class-weighted embedding of the paper (post-processing);
  3. 'marginals' (unless ``marginal_length_scale=None``): fine-scale per-column Fourier-series
     features of the numeric columns, sensitivity 2/n, and 'pairs' (unless
     ``pair_length_scale=None``): products of per-column features over every pair of columns,
     sensitivity <= 2/n (``PairwiseKernelMap.replace_bound``; both single releases in minibatch
     mode too).
The generator is trained against these fixed releases; private rows are not touched again.

Minibatch mode (``releases='minibatch'``): every training step releases the joint embedding of a
fresh batch of exactly ``minibatch_size`` rows drawn uniformly without replacement (with the
privacy noise source, so the batches are secret), sensitivity 2/B under replace-one, accounted as
``steps`` subsampled Gaussian releases (RDP amplification for sampling without replacement).
"""

from sdv.errors import SynthesizerInputError

from sdv_dpkme.engines import kme
from sdv_dpkme.engines.kernel_terms import dpmerf_terms
from sdv_dpkme.synthesizers.kme_base import BaseDPKMESynthesizer


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
                 releases='single', minibatch_size=2000, steps='auto', batch_size='auto',
                 learning_rate=1e-2, latent_dim=32, generator_dims=(256, 256), numeric_noise=0.0,
                 locales=('en_US',), random_state=None, device='auto', verbose=True,
                 noise_seed=None, domain=None, domain_budget_share=0.1,
                 marginal_length_scale=0.02, marginal_weight=1.0, pair_length_scale=0.1,
                 pair_weight=1.0, reweight_generated_rows=None, learning_rate_schedule='constant',
                 category_smoothing=0.0, category_links=False):
        if releases not in ('single', 'minibatch'):
            raise SynthesizerInputError(
                f"releases must be 'single' or 'minibatch', got {releases!r}."
            )
        self._init_model(locals())

    def _default_budget_shares(self):
        return {'class_proportions': 0.01, 'embedding': 0.69, 'marginals': 0.15, 'pairs': 0.15}

    def _kernel_terms(self, blocks, generator, steps):
        return dpmerf_terms(blocks, self.n_features, self.length_scale, generator)

    def _fits_in_one_pass(self):
        return self.releases == 'single'  # minibatch mode samples secret batches of the rows

    def _fit_engine(self, x, blocks, target, labels, columns, ledger):
        if self.releases == 'single':
            return super()._fit_engine(x, blocks, target, labels, columns, ledger)
        rng = self._torch_generator()
        (term,) = self._kernel_terms(blocks, rng, self._steps(len(x), blocks))
        extra = self._shared_terms(blocks)
        model = kme.fit_minibatch(
            x, labels, blocks, target, columns, ledger, term, extra, self._shares(),
            int(self.minibatch_size), self._training(len(x), blocks), rng, self.verbose,
        )
        self._warn_if_unlinked(model, blocks)
        self._warn_if_collapsed(model.collapsed_classes, target)
        return model, self._report_notes([term, *extra])

    def _report_notes(self, terms):
        return ['Random Fourier frequencies drawn with the model RNG (data-independent); length '
                f'scale {self.length_scale} on the public [0, 1] scale.']
