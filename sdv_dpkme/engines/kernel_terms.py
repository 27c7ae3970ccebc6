"""The kernel terms each KME method releases and matches (public layout in, feature maps out).

Every term's feature map has ||phi|| <= 1 (tested in tests/features), so each release has
sensitivity 2/n, or less where a map proves it (``features.replace_sensitivity``). Random
choices (frequencies, column subsets) use the model RNG only.
"""

import warnings

from sdv_dpkme.engines.kme_plan import KernelTerm
from sdv_dpkme.features import (
    FourierKernelMap,
    FourierMarginalMap,
    PairwiseKernelMap,
    ProductKernelMap,
    SumKernelMap,
    draw_product_subsets,
    pair_blocks_within,
)


def dpmerf_terms(blocks, n_features, length_scale, rng):
    """DP-MERF: one random-Fourier-feature embedding of the whole row."""
    fmap = FourierKernelMap(blocks, n_features, length_scale, generator=rng)
    return [KernelTerm('embedding', 'RFF', fmap)]


def dphp_terms(blocks, *, sum_order, sum_sigma2, product_order, product_sigma2, product_columns,
               product_redraws, max_product_features, product_weight, product_schedule, steps,
               rng):
    """DP-HP: the Hermite sum kernel, plus one product kernel per redrawn column subset.

    ``product_schedule``: 'cycle' matches subset r on the steps where step % R == r; 'blocks'
    (the paper's) gives subset r a contiguous r-th share of the steps.
    """
    terms = [KernelTerm('sum_kernel', 'Sum kernel', SumKernelMap(blocks, sum_order, sum_sigma2))]
    # a redraw that no training step would use must not be released
    redraws = min(product_redraws, steps)
    if not (redraws and len(blocks) > 1 and product_columns > 1):
        return terms
    subsets = draw_product_subsets(
        blocks, redraws, product_columns, max_product_features, product_order, rng,
    )
    per_redraw = max(1, steps // len(subsets))
    for r, subset in enumerate(subsets):
        if product_schedule == 'cycle':
            schedule = dict(period=len(subsets), phase=r)
        else:
            schedule = dict(first_step=r * per_redraw,
                            last_step=None if r == len(subsets) - 1 else (r + 1) * per_redraw)
        terms.append(KernelTerm(
            'product_kernel', 'Product kernel',
            ProductKernelMap(subset, product_order, product_sigma2),
            weight=product_weight, **schedule,
        ))
    return terms


def shared_terms(blocks, marginal_length_scale, marginal_weight, pair_length_scale, pair_weight,
                 max_pair_features, max_pair_width=None):
    """The terms both methods add: fine-scale marginals of the numeric columns and pairwise
    products over all columns (each off with its length None)."""
    terms = []
    if marginal_length_scale and any(b.kind == 'numeric' for b in blocks):
        fmap = FourierMarginalMap(blocks, marginal_length_scale)
        terms.append(KernelTerm('marginals', 'Marginals', fmap, weight=marginal_weight))
    if pair_length_scale and len(blocks) > 1:
        kept, left_out = pair_blocks_within(blocks, pair_length_scale, max_pair_features,
                                            max_pair_width)
        if left_out:
            warnings.warn(
                f"The pairwise term ('pairs') leaves out the widest columns "
                f'{[b.name for b in left_out]}: a column is left out when it has more than '
                f'{max_pair_width:,} categories, or while the term would exceed '
                f'{max_pair_features:,} features per class. Their own distribution is still '
                'matched; only how they move with other columns is not. Declare fewer '
                'categories for them (e.g. a public grouping: zip code -> its first digits), '
                'or pass pair_length_scale=None to leave the term out.'
            )
        if len(kept) > 1:
            fmap = PairwiseKernelMap(kept, pair_length_scale)
            terms.append(KernelTerm('pairs', 'Pairs', fmap, weight=pair_weight))
    return terms
