"""The one pass over the private rows: class-wise sums of bounded features."""

import numpy as np
import torch
from tqdm.auto import tqdm


def class_mean_embeddings(x, labels, n_classes, feature_maps, max_chunk_floats=4_000_000,
                          verbose=False):
    """Joint embeddings M[c] = (1/n) sum_{i: y_i = c} phi(x_i), one (C, P) tensor per map.

    Rows are visited once, in chunks sized so that a chunk's features stay below
    ``max_chunk_floats`` floats: memory does not grow with n. Each row's features are projected
    onto the unit ball (a no-op up to rounding for valid rows), so replacing one row moves the
    stacked matrix by at most 2/n in Frobenius norm whatever the row holds.
    """
    n = len(x)
    if n == 0:
        raise ValueError('cannot embed an empty table')
    labels = np.zeros(n, dtype=np.int64) if labels is None else np.asarray(labels, dtype=np.int64)
    widest = max(fm.dim for fm in feature_maps)
    chunk = max(64, min(n, max_chunk_floats // max(widest, 1)))
    sums = [torch.zeros(n_classes, fm.dim, dtype=torch.float64) for fm in feature_maps]
    starts = range(0, n, chunk)
    for start in tqdm(starts, desc='Embedding private rows', disable=not verbose, leave=False):
        xb = torch.as_tensor(np.asarray(x[start : start + chunk]), dtype=torch.float64)
        yb = torch.nn.functional.one_hot(
            torch.as_tensor(labels[start : start + chunk]), n_classes
        ).to(torch.float64)
        for total, fm in zip(sums, feature_maps):
            total += fm.class_sums(xb, yb, project=True).double()
    return [total / n for total in sums]


def class_proportions(labels, n_classes):
    """Share of each class. Replacing one row moves two shares by 1/n: L2 sensitivity sqrt(2)/n."""
    labels = np.asarray(labels, dtype=np.int64)
    return np.bincount(labels, minlength=n_classes) / len(labels)
