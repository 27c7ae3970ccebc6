"""DP-HP: Hermite polynomial features, sum + product kernels (Vinaroz et al., ICML 2022).

Release plan (all Gaussian, composed exactly by one accountant):
  1. class proportions (only with a target), L2 sensitivity sqrt(2)/n;
  2. sum-kernel joint embedding (1/n) sum_i phi_sum(x_i) y_i^T, sensitivity
     sqrt((2 m_categorical + 4 m_numeric) / m) / n <= 2/n (``SumKernelMap.replace_bound``);
  3. ``kernel.product_redraws`` product-kernel joint embeddings, each over a freshly drawn
     column subset, sensitivity 2/n each (every redraw is its own release);
  4. 'marginals' (unless ``kernel.marginal_length_scale=None``): fine-scale per-column
     Fourier-series features of the numeric columns (``FourierMarginalMap``), sensitivity 2/n;
  5. 'pairs' (unless ``kernel.pair_length_scale=None``): products of per-column features over
     every pair of columns (``PairwiseKernelMap``), sensitivity
     sqrt((2 P_cc + 4 P_other) / P) / n <= 2/n (``replace_bound``), and 'selected_pairs' of
     categorical pairs, sqrt(2)/n;
  6. 'one_way' (``kernel.one_way``; 'auto': with a target of >= 3 classes): every column's own kernel pooled
     over the classes, (1/n) sum_i phi(x_i) (``OneWayMap``), sensitivity
     sqrt((2 m_categorical + 4 m_numeric) / m) / n.
The generator is then trained against these fixed releases; private rows are not touched again.
"""

from sdv_dpkme.engines.kernel_terms import dphp_terms
from sdv_dpkme.synthesizers.kme_base import BaseDPKMESynthesizer
from sdv_dpkme.synthesizers.options_kme import DPHPKernel, DPHPTraining


class DPHPSynthesizer(BaseDPKMESynthesizer):
    """Differentially private synthesizer from Hermite-polynomial mean embeddings.

    Args: those of ``BaseDPSynthesizer``; ``kernel`` is a ``DPHPKernel`` (the sum and product
    kernels and the shared releases), ``training`` a ``DPHPTraining`` (the generator and the
    post-processing). Their fields and defaults are documented in
    ``sdv_dpkme.synthesizers.options_kme``; docs/privacy.md describes the selected pairs and
    the calibration.
    """

    _kernel_class = DPHPKernel
    _training_class = DPHPTraining

    def __init__(self, metadata, epsilon, delta=1e-5, domain=None, target_column=None,
                 domain_budget_share=0.1, kernel=None, training=None, random_state=None,
                 device='auto', verbose=True, locales=('en_US',)):
        self._init_model(locals())

    def _default_budget_shares(self):
        return {'class_proportions': 0.01, 'sum_kernel': 0.3, 'product_kernel': 0.19,
                'marginals': 0.2, 'pairs': 0.3, 'selected_pairs': 0.1, 'one_way': 0.4}

    def _kernel_terms(self, blocks, generator, steps):
        kernel, training = self.kernel, self.training
        return dphp_terms(
            blocks, sum_order=kernel.sum_order, sum_sigma2=kernel.sum_sigma2,
            product_order=kernel.product_order, product_sigma2=kernel.product_sigma2,
            product_columns=kernel.product_columns, product_redraws=kernel.product_redraws,
            max_product_features=kernel.max_product_features,
            product_weight=training.product_weight,
            product_schedule=training.product_schedule, steps=steps, rng=generator,
        )

    def _report_notes(self, terms):
        n_product = sum(t.group == 'product_kernel' for t in terms)
        return [f'{n_product} product-kernel subsets drawn from the public layout with the model '
                'RNG (data-independent).']
