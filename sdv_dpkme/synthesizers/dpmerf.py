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
     mode too);
  4. 'selected_pairs' (single mode, unless ``selected_pairs=0``): the categorical pairs of a
     spanning tree chosen on the released 'pairs' tables, released again, sensitivity sqrt(2)/n;
  5. 'one_way' (``kernel.one_way``; 'auto': with a target of >= 3 classes): every column's own kernel pooled
     over the classes, (1/n) sum_i phi(x_i) (``OneWayMap``), sensitivity
     sqrt((2 m_categorical + 4 m_numeric) / m) / n.
The generator is trained against these fixed releases; private rows are not touched again.

Minibatch mode (``kernel.releases='minibatch'``): every training step releases the joint
embedding of a fresh batch of exactly ``kernel.minibatch_size`` rows drawn uniformly without
replacement (with the privacy noise source, so the batches are secret), sensitivity 2/B under
replace-one, accounted as ``training.steps`` subsampled Gaussian releases (RDP amplification
for sampling without replacement).
"""

from sdv.errors import SynthesizerInputError

from sdv_dpkme.engines import kme
from sdv_dpkme.engines.kernel_terms import dpmerf_terms
from sdv_dpkme.synthesizers.kme_base import BaseDPKMESynthesizer
from sdv_dpkme.synthesizers.options_kme import DPMERFKernel, DPMERFTraining


class DPMERFSynthesizer(BaseDPKMESynthesizer):
    """Differentially private synthesizer from random-Fourier-feature mean embeddings.

    Args: those of ``BaseDPSynthesizer``; ``kernel`` is a ``DPMERFKernel`` (the random
    features, the release mode and the shared releases), ``training`` a ``DPMERFTraining``
    (the generator and the post-processing). Their fields and defaults are documented in
    ``sdv_dpkme.synthesizers.options_kme``.
    """

    _kernel_class = DPMERFKernel
    _training_class = DPMERFTraining

    def __init__(self, metadata, epsilon, delta=1e-5, domain=None, target_column=None,
                 domain_budget_share=0.1, kernel=None, training=None, random_state=None,
                 device='auto', verbose=True, locales=('en_US',)):
        self._init_model(locals())

    def _default_budget_shares(self):
        return {'class_proportions': 0.01, 'embedding': 0.69, 'marginals': 0.15, 'pairs': 0.15,
                'selected_pairs': 0.1, 'one_way': 0.4}

    def _kernel_terms(self, blocks, generator, steps):
        return dpmerf_terms(blocks, self.kernel.n_features, self.kernel.length_scale, generator)

    def _check_method_before_release(self, n):
        batch = int(self.kernel.minibatch_size)
        if self.kernel.releases == 'minibatch' and not 1 <= batch < n:
            raise SynthesizerInputError(  # public n: refused before any release
                f'minibatch_size must be between 1 and the number of rows - 1 ({n - 1}), got '
                f'{batch!r}; use releases="single" for small tables.'
            )

    def _fits_in_one_pass(self):
        return self.kernel.releases == 'single'  # minibatch mode samples secret batches of the rows

    def _fit_engine(self, x, blocks, target, labels, columns, ledger):
        if self.kernel.releases == 'single':
            return super()._fit_engine(x, blocks, target, labels, columns, ledger)
        rng = self._torch_generator()
        (term,) = self._kernel_terms(blocks, rng, self._steps(len(x), blocks))
        extra = self._shared_terms(blocks)
        model = kme.fit_minibatch(
            x, labels, blocks, target, columns, ledger, term, extra, self._shares(),
            int(self.kernel.minibatch_size), self._training(len(x), blocks), rng, self.verbose,
            self._max_noise_ratio(),
        )
        self._warn_if_unlinked(model, blocks)
        return model, self._report_notes([term, *extra]) + self._warn_if_collapsed(model, target)

    def _report_notes(self, terms):
        return ['Random Fourier frequencies drawn with the model RNG (data-independent); length '
                f'scale {self.kernel.length_scale} on the public [0, 1] scale.']
