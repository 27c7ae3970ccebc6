"""The one pass over the private rows as a map and a reduce: partial class-wise sums that add up.

A chunk of encoded rows (unit box) and their class labels give a ``ClassSums``: the row count n,
the count of each class and, per feature map, sum_i phi(x_i) y_i^T. Partial sums of disjoint
chunks merge by ``+``, in any grouping, so a fit over one array, a Parquet file read batch by
batch, a Dask or a Spark DataFrame computes the same statistic; only the order of float additions
differs. Nothing here draws noise: the driver releases the merged sums once, through the ledger.

Every row's features are projected onto the unit ball before they are summed (a no-op up to
rounding for valid rows), so replacing one row moves a class-sum matrix by at most 2 in Frobenius
norm whatever the row holds. n and the class counts are exact and private until released: n is
public under replace-one adjacency; the counts are only ever released noised (class proportions).
"""

from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

#: a chunk's features stay below this many floats, so memory does not grow with the rows
MAX_CHUNK_FLOATS = 4_000_000


def row_floats(fmap):
    """Floats a map materialises per row in its class sums: its dim, or less where it never
    builds phi (the pairs map keeps one (W, W) matrix per chunk, whatever its row count)."""
    return getattr(fmap, 'row_floats', fmap.dim)


def chunk_rows(feature_maps, n, max_chunk_floats=MAX_CHUNK_FLOATS):
    """Rows per chunk of the feature computation (at least 64, at most n)."""
    widest = max((row_floats(fm) for fm in feature_maps), default=1)
    return max(64, min(n, max_chunk_floats // max(widest, 1)))


@dataclass
class ClassSums:
    """Partial statistic of some rows: n, per-class counts, per-map (C, P) float64 sums.

    ``notes``: warnings raised while encoding the rows (e.g. values clipped to the public bounds),
    kept so a driver can repeat them once; they say no more than the in-memory fit's warnings.
    """

    n: int
    counts: np.ndarray
    sums: list
    notes: frozenset = field(default_factory=frozenset)

    @classmethod
    def zeros(cls, n_classes, feature_maps):
        return cls(0, np.zeros(n_classes, dtype=np.int64),
                   [torch.zeros(n_classes, fm.dim, dtype=torch.float64) for fm in feature_maps])

    def __add__(self, other):
        if len(self.sums) != len(other.sums) or self.counts.shape != other.counts.shape or any(
            a.shape != b.shape for a, b in zip(self.sums, other.sums)
        ):
            raise ValueError('cannot merge partial sums of different feature maps or classes')
        return ClassSums(self.n + other.n, self.counts + other.counts,
                         [a + b for a, b in zip(self.sums, other.sums)], self.notes | other.notes)

    def means(self):
        """The joint embeddings M[c] = (1/n) sum_{i: y_i = c} phi(x_i), one (C, P) per map."""
        if self.n == 0:
            raise ValueError('cannot embed an empty table')
        return [total / self.n for total in self.sums]

    def proportions(self):
        """Share of each class (L2 sensitivity sqrt(2)/n under replace-one)."""
        return self.counts / self.n

    def __getstate__(self):  # numpy, not torch, on the wire: smaller pickles across processes
        state = dict(self.__dict__)
        state['sums'] = [s.numpy() for s in self.sums]
        return state

    def __setstate__(self, state):
        state['sums'] = [torch.from_numpy(np.asarray(s)) for s in state['sums']]
        self.__dict__.update(state)


def class_sums(x, labels, n_classes, feature_maps, max_chunk_floats=MAX_CHUNK_FLOATS,
               chunk=None, into=None, verbose=False):
    """Add the rows ``x`` (unit box, float64) with ``labels`` (None: one class) to ``into``.

    ``chunk`` rows at a time (default ``chunk_rows``). Returns the (new) ``ClassSums``.
    """
    n = len(x)
    total = ClassSums.zeros(n_classes, feature_maps) if into is None else into
    if n == 0:
        return total
    labels = np.zeros(n, dtype=np.int64) if labels is None else np.asarray(labels, dtype=np.int64)
    chunk = chunk or chunk_rows(feature_maps, n, max_chunk_floats)
    starts = range(0, n, chunk)
    for start in tqdm(starts, desc='Embedding private rows', disable=not verbose, leave=False):
        add_chunk(total, x[start : start + chunk], labels[start : start + chunk], feature_maps)
    total.counts = total.counts + np.bincount(labels, minlength=n_classes)
    total.n += n
    return total


def add_chunk(total, x, labels, feature_maps):
    """Add one chunk's feature sums to ``total.sums`` in place (counts are the caller's)."""
    xb = torch.as_tensor(np.asarray(x), dtype=torch.float64)
    yb = torch.nn.functional.one_hot(
        torch.as_tensor(labels), len(total.counts)
    ).to(torch.float64)
    for acc, fm in zip(total.sums, feature_maps):
        acc += fm.class_sums(xb, yb, project=True).double()


def merge(partials):
    """Sum of partial statistics (``None`` entries are empty partitions)."""
    partials = [p for p in partials if p is not None]
    if not partials:
        raise ValueError('cannot embed an empty table')
    total = partials[0]
    for part in partials[1:]:
        total = total + part
    return total


class ArrayRows:
    """Encoded rows held in memory (a float64 array in the unit box) as a row source."""

    def __init__(self, x, labels=None):
        self.x = x
        self.labels = labels

    def __len__(self):
        return len(self.x)

    def accumulate(self, feature_maps, n_classes, verbose=False):
        return class_sums(self.x, self.labels, n_classes, feature_maps, verbose=verbose)

    def to_numpy(self):
        return np.asarray(self.x), self.labels


def as_rows(x, labels=None):
    """A row source (anything with ``accumulate``) or an in-memory array wrapped as one."""
    return x if hasattr(x, 'accumulate') else ArrayRows(x, labels)
