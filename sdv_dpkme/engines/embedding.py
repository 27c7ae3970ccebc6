"""The one pass over the private rows: class-wise sums of bounded features."""

import numpy as np

from sdv_dpkme.engines.accumulate import MAX_CHUNK_FLOATS, class_sums


def class_mean_embeddings(x, labels, n_classes, feature_maps, max_chunk_floats=MAX_CHUNK_FLOATS,
                          verbose=False):
    """Joint embeddings M[c] = (1/n) sum_{i: y_i = c} phi(x_i), one (C, P) tensor per map.

    Rows are visited once, in chunks sized so that a chunk's features stay below
    ``max_chunk_floats`` floats: memory does not grow with n. Each row's features are projected
    onto the unit ball (a no-op up to rounding for valid rows), so replacing one row moves the
    stacked matrix by at most 2/n in Frobenius norm whatever the row holds (by
    ``features.replace_sensitivity(map) / n``, tighter for the sum and pair kernels). The
    partial sums of ``sdv_dpkme.engines.accumulate`` do the work (the same pass as the
    distributed fits).
    """
    if len(x) == 0:
        raise ValueError('cannot embed an empty table')
    return class_sums(x, labels, n_classes, feature_maps, max_chunk_floats,
                      verbose=verbose).means()


def class_proportions(labels, n_classes):
    """Share of each class. Replacing one row moves two shares by 1/n: L2 sensitivity sqrt(2)/n."""
    labels = np.asarray(labels, dtype=np.int64)
    return np.bincount(labels, minlength=n_classes) / len(labels)
