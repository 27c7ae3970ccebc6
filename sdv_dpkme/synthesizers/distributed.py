"""What the fit does differently when its rows are not at hand (``sdv_dpkme.scale``).

A Dask or Spark DataFrame or Parquet file(s) reach SDV's fit as ``PrivateRows``, where a
DataFrame would, so the fit and SDV's bookkeeping are the in-memory ones. Three steps read rows
in memory and are replaced here: the public checks before any pass (``fit``), SDV's
``validate`` (the constraints are fitted on an empty table of public dtypes; the rows are
checked by the workers, in the pass) and ``_preprocess`` (the processor is fitted on a public
stand-in row after discovery's pass; the result is ``EncodedRows``, whose pass the engine runs).
"""

import pandas as pd
from sdv.errors import SynthesizerInputError

from sdv_dpkme.scale.fit import SUPPORTED, PrivateRows
from sdv_dpkme.scale.row_checks import TableChecks


def private_rows(data):
    """The ``PrivateRows`` that ``data`` (a table or a one-table dict) holds, else None."""
    table = next(iter(data.values())) if isinstance(data, dict) and len(data) == 1 else data
    return table if isinstance(table, PrivateRows) else None


class DistributedFit:
    """Mixin of ``BaseDPSynthesizer``: its fit on ``PrivateRows``."""

    def _check_private_rows(self, rows, table_name=None):
        """Public checks before any row is read: the method's releases are sums of one pass,
        the declarations hold, the source has the metadata's columns and at least 2 rows."""
        one_pass = getattr(self, '_fits_in_one_pass', None)
        if one_pass is None or not one_pass():
            kernel = getattr(self, 'kernel', None)
            mode = f' with releases={kernel.releases!r}' if hasattr(kernel, 'releases') else ''
            raise SynthesizerInputError(
                f'{type(self).__name__}{mode} cannot fit distributed or out-of-core rows: it '
                'needs the rows at hand (DP-KIP runs DP-SGD on Poisson-subsampled rows, DP-MERF '
                "releases='minibatch' draws secret batches). Distributed fits support "
                f'{SUPPORTED}. Fit this synthesizer in memory with fit() on a pandas DataFrame.'
            )
        if table_name is not None:
            self._validate_table_name(table_name)
        self._resolve_domains()  # bad declarations, or discovery off, fail before any read
        rows.check(list(self._original_metadata._convert_to_single_table().columns))
        if len(rows) < 2:
            raise SynthesizerInputError(
                f'The table has {len(rows)} row(s); a DP fit needs at least 2 (and far more for '
                'useful output: noise scales like 1/n).'
            )

    def _public_empty_table(self, columns):
        """No rows, in the public dtypes of ``columns``."""
        declared, undeclared = self._resolve_domains()
        dtypes = self._column_dtypes(columns, {**declared, **undeclared})
        return pd.DataFrame({c: pd.Series([], dtype=dtypes[c]) for c in columns})

    def _validate_private_rows(self, rows):
        """SDV's ``validate`` without the rows: the constraints are fitted publicly here, and
        the rows are checked in the pass (``TableChecks``)."""
        self._validate_transform_constraints(self._public_empty_table(rows.columns),
                                             enforce_constraint_fitting=True)

    def _preprocess_private_rows(self, rows):
        """``_preprocess`` without the rows: discovery's pass, then the processor fitted on a
        public stand-in row (``_prepare_encoding``); returns the ``EncodedRows``."""
        empty = self._public_empty_table(rows.columns)
        checks = TableChecks(self._original_metadata, self._table_name,
                             self._reject_sampling_constraints)
        discovery = rows.discovery_rows(empty, bool(getattr(self, 'verbose', False)),
                                        [checks, self._value_checks(empty)])  # processor
        stand_in = self._prepare_encoding(None, rows=discovery)
        encoded = list(self._data_processor.transform(stand_in).columns)
        return rows.encoded(self._data_processor, encoded, checks)
