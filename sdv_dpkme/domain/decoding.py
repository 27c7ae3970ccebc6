"""Encoding and decoding of rows: RDT's HyperTransformer with a fit, a transform and a reverse
transform that handle each column on its own and build the output frame once.

RDT reverses one transformer at a time on the whole frame, and each step copies it three times
(``copy``, ``drop``, ``concat``): the cost grows with (encoded columns) x (original columns). On a
table with 24 categorical columns one-hot over ~500 buckets, that moved ~10 GB per 100k sampled rows
and took most of the decoding time. Here each of our transformers decodes its own block of the
array, and the output frame is built once. Anything else (a transformer that is not ours, a
generator asked to generate in a full reverse transform) goes through RDT unchanged.

The forward direction had the same cost: RDT's ``fit`` and ``transform`` hand the whole (growing)
frame to each transformer, which copies it and re-consolidates it. Here each transformer is handed
the frame of its own input columns, through its own ``fit`` / ``transform`` (the same checks,
warnings, random states and outputs), and the outputs are joined once: the same frame, built in one
pass. A chained transformer, a multi-column field or an output name that RDT would have to rename
goes through RDT unchanged.

Decoding only reads generated rows; it learns nothing and keeps nothing.
"""

import numpy as np
import pandas as pd
import rdt
from pandas.api.types import is_numeric_dtype
from rdt.errors import InvalidDataError
from rdt.transformers.base import set_random_states

from sdv_dpkme.domain.transformers import PublicDomainTransformer


class DPHyperTransformer(rdt.HyperTransformer):
    """``rdt.HyperTransformer`` with column-local fit and transform and a one-pass reverse
    transform for the DP transformers."""

    def _column_local(self, transformers):
        """Whether RDT's passes over the whole frame can run column by column: no multi-column
        field, and every transformer ours or a generator, none with a next transformer."""
        return not self._multi_column_fields and all(
            t is None or (
                (isinstance(t, PublicDomainTransformer) or t.is_generator())
                and all(p.get('next_transformer') is None for p in t.output_properties.values())
            )
            for t in transformers
        )

    def fit(self, data):
        if not self._column_local(self.field_transformers.values()):
            return super().fit(data)
        self._validate_detect_config_called(data)
        self._unfit()
        self._input_columns = list(data.columns)
        present = set(data.columns)  # the columns RDT's frame would hold at each step
        for column in self._input_columns:
            transformer = self.field_transformers[column]
            if transformer is None:
                self._add_field_to_set(column, self._fitted_fields)
                self._output_columns.append(column)
                continue
            part = data[[column]]
            transformer.fit(part, column)
            outputs = transformer.get_output_columns()
            if (set(outputs) - {column}) & present:  # RDT would rename them ('#'): its way
                return super().fit(data)
            self._transformers_sequence.append(transformer)
            _outputs(transformer, part)  # its checks and warnings, as in RDT's fit
            present = (present - {column}) | set(outputs)
            for output in outputs:  # no next transformer: each output is a fitted field
                self._add_field_to_set(output, self._fitted_fields)
                self._output_columns.append(output)
        self._validate_all_fields_fitted()
        self._fitted = True
        self._modified_config = False
        self.reset_randomization()  # as RDT: the fit's transforms leave no random state

    def _transform(self, data, prevent_subset):
        if not self._column_local(self._transformers_sequence):
            return super()._transform(data, prevent_subset)
        self._validate_config_exists()
        self._validate_fitted()
        unknown_columns = self._subset(data.columns, self._input_columns, not_in=True)
        if prevent_subset:
            contained = all(column in self._input_columns for column in data.columns)
            is_subset = contained and len(data.columns) < len(self._input_columns)
            if unknown_columns or is_subset:
                raise InvalidDataError(
                    'The data you are trying to transform has different columns than the original '
                    'data. Column names and their sdtypes must be the same. Use the method '
                    "'get_config()' to see the expected values."
                )
        elif unknown_columns:
            raise InvalidDataError(
                'Unexpected column names in the data you are trying to transform: '
                f"{unknown_columns}. Use 'get_config()' to see the acceptable column names."
            )
        consumed, parts = set(), []
        for transformer in self._transformers_sequence:
            columns = transformer.columns
            if any(column not in data.columns for column in columns):
                continue  # as RDT: a transformer whose columns are absent is skipped
            parts.append(_outputs(transformer, data))
            consumed.update(columns)
        kept = data[[c for c in data.columns if c not in consumed]]
        if len(kept.columns) == 0 and all(values.dtype == np.float64 for _, values in parts):
            return _float_frame(parts, self._output_columns, data.index)
        frames = [pd.DataFrame(values, columns=names, index=data.index) for names, values in parts]
        joined = pd.concat([kept, *frames], axis=1)
        return joined.reindex(columns=self._subset(self._output_columns, joined.columns))

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


def _outputs(transformer, data):
    """``(names, values)``: the columns that ``transformer.transform(data)`` adds to the frame.
    Ours: the array of their ``_transform`` under RDT's random states (``transform`` would copy
    the frame, drop the column and concatenate the outputs); others: their own ``transform``
    on their columns alone."""
    if not isinstance(transformer, PublicDomainTransformer):
        frame = transformer.transform(data[transformer.columns])  # its outputs only
        if len(frame.columns) == 0:  # a generator: the column is dropped
            return [], np.empty((len(frame), 0))
        return list(frame.columns), frame.to_numpy()
    column = data[transformer.get_input_column()]  # ours never write to their input
    if transformer.random_states is None:
        values = transformer._transform(column)
    else:
        with set_random_states(transformer.random_states, 'transform',
                               transformer.set_random_state):
            values = transformer._transform(column)
    values = np.asarray(values)
    return transformer.output_columns, values.reshape(len(values), -1)


def _float_frame(parts, order, index):
    """The float64 ``(names, values)`` parts joined in the ``order`` of their columns, written
    once into one block (what RDT's concatenations and final reindex produce, without their
    copies)."""
    names = {c for part, _ in parts for c in part}
    order = pd.Index([c for c in order if c in names])
    block = np.empty((len(order), len(index)))  # pandas' own layout of a float block
    for part, values in parts:
        block[order.get_indexer(part)] = values.T
    return pd.DataFrame(block.T, index=index, columns=order, copy=False)


def _positions(columns, names):
    """Positions of ``names`` in ``columns``: a slice (a view of the array) when contiguous."""
    idx = columns.get_indexer(names)
    if len(idx) and (np.diff(idx) == 1).all():
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx
