"""DP-HP: Hermite polynomial features, sum + product kernels (Vinaroz et al., ICML 2022).

Release plan (all Gaussian, composed exactly by one accountant):
  1. class proportions (only with a target), L2 sensitivity sqrt(2)/n;
  2. sum-kernel joint embedding (1/n) sum_i phi_sum(x_i) y_i^T, sensitivity 2/n;
  3. ``product_redraws`` product-kernel joint embeddings, each over a freshly drawn column subset,
     sensitivity 2/n each (every redraw is its own release).
The generator is then trained against these fixed releases; private rows are not touched again.
"""

import numpy as np
import torch

from sdv_dpkme.engines import (
    Objective,
    TabularGenerator,
    class_mean_embeddings,
    class_proportions,
    resolve_device,
    train_generator,
)
from sdv_dpkme.features import ProductKernelMap, SumKernelMap, draw_product_subsets
from sdv_dpkme.synthesizers.base import BaseDPKMESynthesizer, noisy_class_weights
from sdv_dpkme.synthesizers.model import KMEModel


class DPHPSynthesizer(BaseDPKMESynthesizer):
    """Differentially private synthesizer from Hermite-polynomial mean embeddings.

    Model args (besides those of the base class):
        sum_order, sum_sigma2: Hermite order and squared length (on the [0, 1] scale of the
            public bounds) of the sum kernel.
        product_order, product_sigma2, product_columns, product_redraws, max_product_features:
            the product kernel over ``product_columns`` random columns, redrawn
            ``product_redraws`` times, each subset capped at ``max_product_features`` features.
        product_weight: weight of the product term in the loss.
        budget_shares: shares of the privacy precision for 'class_proportions', 'sum_kernel',
            'product_kernel' (normalised over the releases that exist).
        steps, batch_size, learning_rate, latent_dim, generator_dims: generator training.
    """

    def __init__(self, metadata, epsilon, delta=1e-5, known_min_max_values=None,
                 known_categories=None, nullable_columns=None, metadata_is_public=False,
                 target_column=None, sum_order=100, sum_sigma2=0.05, product_order=5, product_sigma2=0.05,
                 product_columns=5, product_redraws=20, max_product_features=8192,
                 product_weight=0.1, budget_shares=None, steps=1000, batch_size=1024,
                 learning_rate=1e-2, latent_dim=32, generator_dims=(256, 256),
                 locales=('en_US',), random_state=None, device='auto', verbose=True,
                 noise_seed=None):
        super().__init__(
            metadata, epsilon, delta=delta, known_min_max_values=known_min_max_values,
            known_categories=known_categories, nullable_columns=nullable_columns,
            metadata_is_public=metadata_is_public,
            target_column=target_column, locales=locales, random_state=random_state,
            device=device, verbose=verbose, noise_seed=noise_seed,
        )
        self.sum_order = sum_order
        self.sum_sigma2 = sum_sigma2
        self.product_order = product_order
        self.product_sigma2 = product_sigma2
        self.product_columns = product_columns
        self.product_redraws = product_redraws
        self.max_product_features = max_product_features
        self.product_weight = product_weight
        self.budget_shares = budget_shares
        self.steps = steps
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.latent_dim = latent_dim
        self.generator_dims = generator_dims

    def _release_plan(self, has_target, n_product):
        shares = {'class_proportions': 0.01, 'sum_kernel': 0.6, 'product_kernel': 0.39}
        shares.update(self.budget_shares or {})
        plan = {'sum_kernel': (shares['sum_kernel'], 1)}
        if has_target:
            plan['class_proportions'] = (shares['class_proportions'], 1)
        if n_product:
            plan['product_kernel'] = (shares['product_kernel'], n_product)
        total = sum(s for s, _ in plan.values())
        return {name: (share / total, count) for name, (share, count) in plan.items()}

    def _fit_encoded(self, x, blocks, target, labels, columns, ledger):
        n = len(x)
        model_rng = self._torch_generator()
        n_classes = 1 if target is None else target.width
        sum_map = SumKernelMap(blocks, self.sum_order, self.sum_sigma2)
        product_maps = []
        # a redraw that no training step would use must not be released
        redraws = min(self.product_redraws, self.steps)
        if redraws and len(blocks) > 1 and self.product_columns > 1:
            subsets = draw_product_subsets(
                blocks, redraws, self.product_columns, self.max_product_features,
                self.product_order, model_rng,
            )
            product_maps = [
                ProductKernelMap(s, self.product_order, self.product_sigma2) for s in subsets
            ]

        accountant, mechanism = ledger.accountant, ledger.mechanism
        sigmas = accountant.calibrate(self._release_plan(target is not None, len(product_maps)))

        # The single pass over the private rows.
        embeddings = class_mean_embeddings(
            x, labels, n_classes, [sum_map, *product_maps], verbose=self.verbose
        )

        if target is None:
            weights = np.ones(1)
        else:
            released = mechanism.release(
                class_proportions(labels, n_classes), name='class_proportions',
                description=f"proportions of the {n_classes} buckets of '{target.name}'",
                sensitivity=np.sqrt(2) / n, noise_multiplier=sigmas['class_proportions'],
            )
            weights = noisy_class_weights(released.numpy()[:-1])  # never sample out-of-domain
            weights = np.append(weights, 0.0)
        classes = np.flatnonzero(weights > 0)
        divisor = torch.as_tensor(np.where(weights > 0, weights, 1.0))[:, None]

        def conditional(embedding, name, description):
            noisy = mechanism.release(
                embedding, name=name, description=description, sensitivity=2 / n,
                noise_multiplier=sigmas[name],
            )
            return noisy / divisor  # joint -> class-conditional means (post-processing)

        objectives = [Objective(
            'Sum kernel', sum_map,
            conditional(embeddings[0], 'sum_kernel', sum_map.describe()),
        )]
        per_redraw = max(1, self.steps // max(1, len(product_maps)))
        for r, (pmap, emb) in enumerate(zip(product_maps, embeddings[1:])):
            objectives.append(Objective(
                'Product kernel', pmap,
                conditional(emb, 'product_kernel', pmap.describe()),
                weight=self.product_weight, first_step=r * per_redraw,
                last_step=None if r == len(product_maps) - 1 else (r + 1) * per_redraw,
            ))
        del embeddings, x

        with torch.random.fork_rng(devices=[]):  # seed the initial weights, not the user's RNG
            torch.manual_seed(int(torch.randint(2**62, (1,), generator=model_rng)))
            generator = TabularGenerator(
                blocks, len(columns), n_classes, self.latent_dim, tuple(self.generator_dims)
            )
        history = train_generator(
            generator, objectives, classes, self.steps, self.batch_size, self.learning_rate,
            resolve_device(self.device), model_rng, verbose=self.verbose,
        )
        report = accountant.report(
            ledger.noise.describe(), public_inputs=self._public_inputs(),
            notes=[f'{len(product_maps)} product-kernel subsets drawn from the public layout '
                   'with the model RNG (data-independent).'],
        )
        model = KMEModel(generator, columns, target, weights, history)
        return model, report
