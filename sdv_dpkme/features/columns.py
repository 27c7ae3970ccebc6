"""Column access shared by the feature maps, cheap in the backward pass.

A map reads a column block of the encoded rows as ``x[:, a:b]``. Each such slice is cheap
forward, but its backward writes a zero tensor of x's full (n, D) size and adds it into x's
gradient: with every map reading every column, that was a large share of a training step on a
wide table. Inside ``split_columns(x, blocks)`` the maps instead read the pieces of one
``torch.split`` of x along the blocks' boundaries: the backward of the split is a single
concatenation, and each piece's own gradient is as small as the piece. Values and gradients are
the same (up to the order in which float additions accumulate).

The split also carries a memo for the step (``step_memo``): a map whose moments another map
repeats on the same rows (the 'one_way' map's numeric part is the 'marginals' map) computes them
once.
"""

from contextlib import contextmanager
from contextvars import ContextVar

import torch

_ACTIVE = ContextVar('sdv_dpkme_column_pieces', default=())


class _Pieces:
    """``x`` split at the boundaries of its blocks: column -> (first column, piece)."""

    def __init__(self, x, blocks):
        width = x.shape[1]
        cuts = {0, width}
        for block in blocks:
            cols = tuple(block.columns)
            if cols == tuple(range(cols[0], cols[0] + len(cols))):
                cuts.update((cols[0], cols[0] + len(cols)))
            else:
                cuts.update(c for col in cols for c in (col, col + 1))
        cuts = sorted(c for c in cuts if 0 <= c <= width)
        sizes = [b - a for a, b in zip(cuts, cuts[1:])]
        self.tensor = x
        self.memo = {}
        self.at = {}
        for first, piece in zip(cuts, torch.split(x, sizes, dim=1)):
            for col in range(first, first + piece.shape[1]):
                self.at[col] = (first, piece)

    def slice(self, start, stop):
        first, piece = self.at[start]
        if stop - first > piece.shape[1]:  # spans a cut: not a block's own columns
            return None
        if start == first and stop - first == piece.shape[1]:
            return piece
        return piece[:, start - first:stop - first]


def _pieces(x):
    for entry in _ACTIVE.get():
        if entry.tensor is x:
            return entry
    return None


@contextmanager
def split_columns(x, blocks):
    """Within this context, ``column_slice`` / ``column_gather`` of ``x`` read the pieces of
    one split of ``x`` along ``blocks``' column boundaries (for a training step's rows)."""
    if x.dim() != 2 or _pieces(x) is not None:
        yield
        return
    token = _ACTIVE.set(_ACTIVE.get() + (_Pieces(x, blocks),))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def step_memo(x):
    """The memo dict of ``x``'s split (valid for this step's rows only), or None outside one."""
    pieces = _pieces(x)
    return None if pieces is None else pieces.memo


def column_slice(x, start, stop):
    """``x[:, start:stop]``."""
    pieces = _pieces(x)
    if pieces is not None:
        out = pieces.slice(start, stop)
        if out is not None:
            return out
    return x[:, start:stop]


def column_block(x, columns):
    """``x[:, columns]``: a slice where the columns are consecutive (a piece of the split, or a
    view), else ``column_gather``."""
    columns = tuple(columns)
    first = columns[0]
    if columns == tuple(range(first, first + len(columns))):
        return column_slice(x, first, first + len(columns))
    return column_gather(x, columns)


def column_gather(x, columns):
    """``x[:, columns]`` for a list of column indices."""
    columns = list(columns)
    pieces = _pieces(x)
    if pieces is None or not columns:  # no columns: an (n, 0) slice, as x[:, []] gives
        return x[:, columns]
    return torch.cat([column_slice(x, c, c + 1) for c in columns], dim=1)
