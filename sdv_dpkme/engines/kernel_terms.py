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
    OneWayMap,
    PairwiseKernelMap,
    ProductKernelMap,
    SumKernelMap,
    draw_product_subsets,
)
from sdv_dpkme.features.pairwise import pair_layout


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
                 max_pair_features, max_pair_width=None, rng=None, notes=None,
                 one_way_length_scale=None, one_way_weight=1.0):
    """The terms both methods add: fine-scale marginals of the numeric columns and pairwise
    products over all columns (each off with its length None), and with
    ``one_way_length_scale`` the 'one_way' term: every column's own kernel (``OneWayMap``)
    released pooled over the classes, so that column shapes are matched with the noise of one
    release rather than of C class-conditional ones summed. The pairs' layout
    (``features.pair_layout``) is chosen from public widths; what it narrows or leaves out, and
    why, is appended to ``notes`` (the privacy report's) and warned about."""
    terms = []
    if marginal_length_scale and any(b.kind == 'numeric' for b in blocks):
        fmap = FourierMarginalMap(blocks, marginal_length_scale)
        terms.append(KernelTerm('marginals', 'Marginals', fmap, weight=marginal_weight))
    if pair_length_scale and len(blocks) > 1:
        layout = pair_layout(blocks, pair_length_scale, max_pair_features, max_pair_width, rng)
        said = pair_notes(layout, len(blocks), max_pair_features)
        if notes is not None:
            notes.extend(said)
        if layout.left_out or layout.pairs is not None:
            warnings.warn(' '.join(said) + _ADVICE)
        if len(layout.kept) > 1:
            fmap = PairwiseKernelMap(layout.kept, pair_length_scale, layout.n_frequencies,
                                     layout.pairs)
            terms.append(KernelTerm('pairs', 'Pairs', fmap, weight=pair_weight))
    if one_way_length_scale and blocks:
        terms.append(one_way_term(blocks, one_way_length_scale, one_way_weight))
    return terms


def one_way_term(blocks, length_scale, weight=1.0):
    """The 'one_way' term: every column's own kernel, released once pooled over the classes."""
    return KernelTerm('one_way', 'One-way', OneWayMap(blocks, length_scale), weight=weight,
                      pooled=True)


_ADVICE = (" Each column's own distribution is still matched; only how the columns or pairs left "
           'out move together is not. For a categorical column, declare fewer categories (e.g. a '
           'public grouping: zip code -> its first digits); or raise max_pair_features (memory '
           'and time per training step grow with it), or pass pair_length_scale=None to leave '
           'the term out.')


def pair_notes(layout, n_columns, max_features):
    """Report notes on the 'pairs' layout: what was narrowed or left out, and why (public)."""
    if not (layout.left_out or layout.pairs is not None
            or layout.n_frequencies < layout.full_frequencies):
        return []
    notes = []
    if layout.n_frequencies < layout.full_frequencies:
        notes.append(
            f"The pairwise term ('pairs') keeps every pair of columns with narrower numeric "
            f'features: {layout.n_frequencies} of {layout.full_frequencies} Fourier frequencies '
            f'per numeric column, so that the map fits max_pair_features={max_features:,} per '
            'class (chosen from the public layout).')
    if layout.pairs is not None:
        total = len(layout.kept) * (len(layout.kept) - 1) // 2
        notes.append(
            f"The pairwise term ('pairs') models {layout.n_pairs:,} of the {total:,} pairs of "
            f'its {len(layout.kept)} columns: not every pair fits max_pair_features='
            f'{max_features:,} even at the narrowest numeric features, so it takes a cyclic '
            'design over a random column order drawn with the model RNG from the public layout '
            '(every column is in pairs; no data is read to choose them).')
    if layout.left_out:
        listed = '; '.join(f'{b.name!r}: {why}' for b, why in layout.left_out)
        notes.append(f"The pairwise term ('pairs') leaves out {len(layout.left_out)} of "
                     f'{n_columns} columns (no pair with any other column): {listed}.')
    return notes
