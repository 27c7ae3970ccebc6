"""Decoding of sampled rows: RDT's HyperTransformer with a reverse transform that reads the encoded
frame once.

RDT reverses one transformer at a time on the whole frame, and each step copies it three times
(``copy``, ``drop``, ``concat``): the cost grows with (encoded columns) x (original columns). On a
table with 24 categorical columns one-hot over ~500 buckets, that moved ~10 GB per 100k sampled rows
and took most of the decoding time. Here each of our transformers decodes its own block of the
array, and the output frame is built once. Anything else (a transformer that is not ours, a
generator asked to generate in a full reverse transform) goes through RDT unchanged.

Decoding only reads generated rows; it learns nothing and keeps nothing.
"""

import numpy as np
import pandas as pd
import rdt
from pandas.api.types import is_numeric_dtype
from rdt.errors import InvalidDataError

from sdv_dpkme.domain.transformers import PublicDomainTransformer


class DPHyperTransformer(rdt.HyperTransformer):
    """``rdt.HyperTransformer`` with a one-pass reverse transform for the DP transformers."""

    def _reverse_transform(self, data, prevent_subset):
        # reverse order, as RDT (our transformers are never chained, so the order is only kept
        # for the fallback's sake)
        sequence = list(reversed(self._transformers_sequence))
        fast = all(
            isinstance(t, PublicDomainTransformer)
            or (not prevent_subset and not t.get_output_columns())  # a generator: skipped
            for t in sequence
        )
        if not fast:
            return super()._reverse_transform(data, prevent_subset)
        self._validate_config_exists()
        self._validate_fitted()
        unknown_columns = self._subset(data.columns, self._output_columns, not_in=True)
        if unknown_columns:
            raise InvalidDataError(
                'There are unexpected column names in the data you are trying to transform. '
                f'A reverse transform is not defined for {unknown_columns}.'
            )
        if prevent_subset:
            contained = all(column in self._output_columns for column in data.columns)
            if contained and len(data.columns) < len(self._output_columns):
                raise InvalidDataError(
                    'You must provide a transformed dataset with all the columns from the '
                    'original data.'
                )

        # one homogeneous numeric frame (what the engines produce) is read as one array, a view
        dtypes = set(data.dtypes)
        array = data.to_numpy() if len(dtypes) == 1 and is_numeric_dtype(dtypes.pop()) else None
        present = set(data.columns)
        decoded, used = {}, set()
        for transformer in sequence:
            outputs = transformer.get_output_columns()
            if not outputs or not present.issuperset(outputs):
                continue
            if array is not None:
                block = array[:, _positions(data.columns, outputs)]
            else:
                block = data[outputs].to_numpy()
            decoded[transformer.get_input_column()] = transformer._reverse_transform(block)
            used.update(outputs)

        columns = {c: data[c] for c in data.columns if c not in used}
        columns.update(decoded)
        order = self._subset(self._input_columns, columns)
        return pd.DataFrame({c: columns[c] for c in order}, index=data.index)


def _positions(columns, names):
    """Positions of ``names`` in ``columns``: a slice (a view of the array) when contiguous."""
    idx = columns.get_indexer(names)
    if len(idx) and (np.diff(idx) == 1).all():
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx
