"""``fit_distributed``: SDV's fit on rows that are not one pandas DataFrame in memory.

The driver does what an in-memory fit does, except the passes over the rows. It reads no row:
only the column names (checked against the metadata), the row count n (public under replace-one
adjacency) and the public declarations. Nothing is fitted on a partition or a head.
  1. the declared public domains and n; the constraints are fitted on an empty table of public
     dtypes, as in memory;
  2. domain discovery, if some modelled column has no declared domain: a pass of its own (the
     encoder depends on the discovered domains, so it comes first), where the workers get the
     public ``DiscoveryCounter``, count their rows over the public grids and values, the engine's
     reduce adds the partial counts, and the driver adds the noise once (``discover``, exactly as
     in memory); then the data processor, fitted by the in-memory fit's own code on a public
     stand-in row (``public_frame``), its id/PII generators given ``data_length = n``;
  3. the method draws its feature maps with the model RNG (public) and the engine asks the row
     source for the partial sums of every term: the workers get the processor and the feature
     maps, encode their rows, sum phi(x) y^T per class, and the engine's reduce adds the partials;
  4. the noise is added once, on the driver, through the fit's ledger, as in memory; then the
     generator trains on the releases. Same releases, same privacy report. SDV's checks of the
     rows (``validate``: the metadata's column checks, the constraints') run in the workers on
     every row of the embedding pass, before it is encoded (``TableChecks``).
"""

import datetime

import pandas as pd

from sdv import version
from sdv.errors import SynthesizerInputError

from sdv_dpkme.privacy.diagnostics import sanitised_errors
from sdv_dpkme.synthesizers.rows import PartitionEncoder, TableChecks, repeat_notes
from sdv_dpkme.scale.sources import SourceError, open_source

SUPPORTED = ("DPHPSynthesizer and DPMERFSynthesizer (releases='single'): their releases are "
             'sums over the rows, computed in one pass')


@sanitised_errors  # workers' and readers' messages may quote private values
def fit_distributed(synthesizer, data, table_name=None):
    """Fit ``synthesizer`` on a Dask or Spark DataFrame, or on Parquet file(s) read out of core.

    Args:
        synthesizer: a DPHPSynthesizer or DPMERFSynthesizer (``releases='single'``).
        data: a ``dask.dataframe.DataFrame``, a ``pyspark.sql.DataFrame``, or a Parquet file,
            directory (every ``*.parquet`` under it) or list of files, with the metadata's columns.
        table_name: optional; checked against the metadata's table.

    Columns without a declared public domain are discovered under DP in a pass of their own
    before the embedding pass (two passes over the rows; n is public and counted once). The
    releases and the privacy report are those of an in-memory fit of the same rows. Returns the
    synthesizer (fitted).
    """
    try:
        source = open_source(data)
    except (SourceError, ImportError) as err:
        raise SynthesizerInputError(str(err)) from None
    _check_supported(synthesizer)
    if table_name is not None:
        synthesizer._validate_table_name(table_name)
    synthesizer._resolve_domains()  # bad declarations, or discovery off, fail before any read
    columns = list(synthesizer._original_metadata._convert_to_single_table().columns)
    try:
        source.check_columns(columns)
    except SourceError as err:
        raise SynthesizerInputError(str(err)) from None
    n = len(source)
    if n < 2:
        raise SynthesizerInputError(
            f'The table has {n} row(s); a DP fit needs at least 2 (and far more for useful '
            'output: noise scales like 1/n).'
        )
    # SDV's fit, up to the pass. No row is read here: the processor is fitted on a public
    # stand-in (the in-memory fit's own _prepare_encoding), the constraints on an empty table of
    # public dtypes, and SDV's checks of the rows run on every row inside the pass
    synthesizer._check_input_metadata_updated()
    synthesizer._fitted = False
    synthesizer._data_processor.reset_sampling()
    synthesizer._random_state_set = False
    declared, undeclared = synthesizer._resolve_domains()
    dtypes = synthesizer._column_dtypes(columns, {**declared, **undeclared})
    empty = pd.DataFrame({c: pd.Series([], dtype=dtypes[c]) for c in columns})
    synthesizer._validate_transform_constraints(empty, enforce_constraint_fitting=True)
    synthesizer._preprocess_helper(empty)
    verbose = bool(getattr(synthesizer, 'verbose', False))
    stand_in = synthesizer._prepare_encoding(None, rows=DiscoveryRows(source, n, empty, verbose))
    processor = synthesizer._data_processor
    processed = processor.transform(stand_in)
    encoded = list(processed.columns)
    blocks, target = synthesizer._layout(processed)
    if not blocks:
        raise SynthesizerInputError('There is no modelled column besides the target.')
    checks = TableChecks(synthesizer._original_metadata, synthesizer._table_name,
                         synthesizer._reject_sampling_constraints)

    def make_encoder(feature_maps, n_classes):
        return PartitionEncoder(processor, columns, encoded, target, feature_maps, n_classes,
                                checks)

    synthesizer._fit_rows(SourceRows(source, n, make_encoder), blocks, target, encoded)
    # SDV's fit_processed_data bookkeeping
    synthesizer._fitted = True
    synthesizer._fitted_date = datetime.datetime.today().strftime('%Y-%m-%d')
    synthesizer._fitted_sdv_version = getattr(version, 'community', None)
    synthesizer._fitted_sdv_enterprise_version = getattr(version, 'enterprise', None)
    return synthesizer


class SourceRows:
    """A row source for the engine: the pass is the source's map and reduce."""

    def __init__(self, source, n, make_encoder):
        self.source, self.n, self.make_encoder = source, n, make_encoder

    def __len__(self):
        return self.n

    def to_numpy(self):
        raise SynthesizerInputError(f'Only {SUPPORTED} fit distributed rows.')

    def accumulate(self, feature_maps, n_classes, verbose=False):
        total = self.source.accumulate(self.make_encoder(feature_maps, n_classes), verbose)
        repeat_notes(total.notes)
        if total.n != self.n:  # nothing is released yet
            raise SynthesizerInputError(
                f'The pass read {total.n:,} rows, but {self.n:,} were counted before it: the '
                'data changed during the fit. Nothing was released; fit again on stable data.'
            )
        return total


class DiscoveryRows:
    """Discovery's pass over a source: the merged partial counts of a ``DiscoveryCounter``.

    Runs before the embedding pass, since the encoder is built from the discovered domains. The
    exact counts go from the engine's reduce straight to ``discover``, which noises them once.
    """

    def __init__(self, source, n, empty, verbose=False):
        self.source, self.n, self.empty, self.verbose = source, n, empty, verbose

    def __len__(self):
        return self.n

    def discovery_counts(self, counter):
        total = self.source.map_reduce(counter, counter.columns, self.verbose,
                                       desc='Counting private rows for domain discovery')
        # no rows read: zero counts, so discover reports the mismatch with n
        return counter(self.empty) if total is None else total


def _check_supported(synthesizer):
    one_pass = getattr(synthesizer, '_fits_in_one_pass', None)
    if one_pass is None or not one_pass():
        kernel = getattr(synthesizer, 'kernel', None)
        mode = f" with releases={kernel.releases!r}" if hasattr(kernel, 'releases') else ''
        raise SynthesizerInputError(
            f'{type(synthesizer).__name__}{mode} cannot fit distributed or out-of-core rows: it '
            'needs the rows at hand (DP-KIP runs DP-SGD on Poisson-subsampled rows, DP-MERF '
            "releases='minibatch' draws secret batches). Distributed fits support "
            f'{SUPPORTED}. Fit this synthesizer in memory with fit() on a pandas DataFrame.'
        )
