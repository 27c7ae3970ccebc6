"""The distributed fit: a Dask or Spark DataFrame, or Parquet file(s), as rows that the
synthesizer's own ``fit`` reads in passes, never whole.

``PrivateRows`` stands where SDV's fit has its DataFrame, so the fit, SDV's bookkeeping included,
is the in-memory one. The driver reads no row: only the column names (checked against the
metadata), the row count n (public under replace-one adjacency) and the public declarations.
Nothing is fitted on a partition or a head. Where the in-memory fit holds the rows, this one:
  1. fits the constraints on an empty table of public dtypes, as in memory; SDV's checks of the
     rows (``validate``: the metadata's column checks, the constraints') run in the workers on
     every row of the embedding pass, before it is encoded (``TableChecks``);
  2. runs domain discovery, if some modelled column has no declared domain, as a pass of its own
     (``DiscoveryRows``; the encoder depends on the discovered domains, so it comes first): the
     workers check their rows first (``TableChecks`` and the declared columns' ``ValueChecks``,
     so bad rows stop the fit before this release), then count them over the public grids and
     values (``DiscoveryCounter``), the engine's reduce adds the partial counts, and the driver
     adds the noise once (``discover``, exactly as in memory); the data processor is then
     fitted by the in-memory fit's own code on a public stand-in row (``public_frame``), its
     id/PII generators given ``data_length = n``;
  3. hands the engine ``EncodedRows``, whose pass (``SourceRows``) sends the workers the
     processor and the feature maps (drawn on the driver with the model RNG): they encode their
     rows and sum phi(x) y^T per class, and the engine's reduce adds the partials;
  4. adds the noise once, on the driver, through the fit's ledger, as in memory; then the
     generator trains on the releases. Same releases, same privacy report.
"""

from sdv.errors import SynthesizerInputError

from sdv_dpkme.engines.row_encoding import PartitionEncoder, repeat_notes
from sdv_dpkme.privacy.diagnostics import sanitised_errors
from sdv_dpkme.scale.row_checks import CheckedPass
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

    The synthesizer's own ``fit`` reads the rows (``fit({'table': dask_frame})`` does the same
    for a Dask or Spark DataFrame). Columns without a declared public domain are discovered under
    DP in a pass of their own before the embedding pass (two passes over the rows; n is public
    and counted once). The releases and the privacy report are those of an in-memory fit of the
    same rows. Returns the synthesizer (fitted).
    """
    rows = open_rows(data)
    synthesizer.fit(rows if table_name is None else {table_name: rows})
    return synthesizer


def open_rows(data):
    """``PrivateRows`` of a Dask or Spark DataFrame or Parquet path(s); reads no row."""
    try:
        return PrivateRows(open_source(data))
    except (SourceError, ImportError) as err:
        raise SynthesizerInputError(str(err)) from None


class PrivateRows:
    """A private table that is not at hand, in place of SDV's DataFrame in the fit: its columns
    and row count (public, counted once by ``check``) and its passes, never its values."""

    def __init__(self, source):
        self.source, self.columns, self.n = source, None, None

    def check(self, columns):
        """The source must hold the metadata's ``columns``; then n is counted (no value read)."""
        try:
            self.source.check_columns(columns)
        except SourceError as err:
            raise SynthesizerInputError(str(err)) from None
        self.columns = list(columns)
        self.n = len(self.source)

    def __len__(self):
        return self.n

    def discovery_rows(self, empty, verbose=False, checks=()):
        """Domain discovery's pass (``empty``: a table of the public dtypes, for no rows;
        ``checks``: run by the workers on every chunk before it is counted)."""
        return DiscoveryRows(self.source, self.n, empty, verbose, checks)

    def encoded(self, processor, encoded_columns, checks):
        """The encoded table, once ``processor`` is fitted (``checks``: a ``TableChecks``)."""
        return EncodedRows(self, processor, encoded_columns, checks)


class EncodedRows:
    """The processed table of a distributed fit, in place of SDV's processed DataFrame: its
    encoded columns and n; ``rows(target)`` is the row source of the embedding pass."""

    empty = False  # PrivateRows are checked to hold at least 2 rows

    def __init__(self, private, processor, encoded_columns, checks):
        self.private, self.processor, self.checks = private, processor, checks
        self.columns = list(encoded_columns)

    def __len__(self):
        return len(self.private)

    def rows(self, target):
        private = self.private

        def make_encoder(feature_maps, n_classes):
            return PartitionEncoder(self.processor, private.columns, self.columns, target,
                                    feature_maps, n_classes, self.checks)

        return SourceRows(private.source, private.n, make_encoder)


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
                'data changed during the fit. This pass released nothing, but a domain '
                'discovery or integer vote before it in this fit is spent; fit again on stable '
                'data.'
            )
        return total


class DiscoveryRows:
    """Discovery's pass over a source: the merged partial counts of a ``DiscoveryCounter``.

    Runs before the embedding pass, since the encoder is built from the discovered domains. The
    exact counts go from the engine's reduce straight to ``discover``, which noises them once.
    """

    def __init__(self, source, n, empty, verbose=False, checks=()):
        self.source, self.n, self.empty, self.verbose = source, n, empty, verbose
        self.checks = list(checks)

    def __len__(self):
        return self.n

    def discovery_counts(self, counter):
        # the rows' checks run here too: this pass is followed by a release (issue 42)
        function, columns = counter, counter.columns
        if self.checks:
            function, columns = CheckedPass(counter, self.checks), list(self.empty.columns)
        total = self.source.map_reduce(function, columns, self.verbose,
                                       desc='Counting private rows for domain discovery')
        # no rows read: zero counts, so discover reports the mismatch with n
        return counter(self.empty) if total is None else total
