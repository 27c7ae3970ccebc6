"""Shared check of the replace-one sensitivity of a feature map through the private pass."""

import numpy as np

from sdv_dpkme.engines import class_mean_embeddings


def assert_replace_one_moves_at_most_two_over_n(fmap, x, n_classes, rows, bound=2.0):
    """Replacing the first or last row of ``x`` by each (row, label) in ``rows`` moves the stacked
    class embeddings by at most ``bound``/n (default 2/n) in Frobenius norm."""
    n = len(x)
    labels = np.arange(n) % n_classes
    base = class_mean_embeddings(x, labels, n_classes, [fmap])[0]
    for row, label in rows:
        for i in [0, n - 1]:
            x2, l2 = x.copy(), labels.copy()
            x2[i], l2[i] = row, label
            other = class_mean_embeddings(x2, l2, n_classes, [fmap])[0]
            assert (other - base).norm().item() <= bound / n + 1e-12
