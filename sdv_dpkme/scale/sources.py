"""Where the private rows live: Parquet files read batch by batch, a Dask or a Spark DataFrame.

Each source gives its column names and number of rows (public; the driver reads no row), and
``map_reduce``: a
function of a pandas chunk (a ``PartitionEncoder`` -> ``ClassSums`` for the embedding pass, a
``DiscoveryCounter`` -> ``DiscoveryCounts`` for domain discovery's pass) mapped over all its rows,
and the partial results added with ``+``. The merge is the engine's own
deterministic reduce of the partitions' return values (Dask's task graph, Spark's
``treeReduce``), never a side effect such as an accumulator: a retried or speculative task
recomputes its partition's value, and the reduce takes one value per partition, so no partition
is counted twice. Nothing here draws noise.
"""

import os
import pickle
import threading
import uuid
from pathlib import Path

from tqdm.auto import tqdm

from sdv_dpkme.engines.accumulate import merge

EMBEDDING = 'Embedding private rows'

#: rows a Parquet batch holds in memory (then encoded in blocks of ``PartitionEncoder.block``)
PARQUET_BATCH_ROWS = 65_536
#: fan-in of the tree reduce of Dask partials (bounds how many partial sums are held at once)
TREE_FAN_IN = 8


class SourceError(ValueError):
    """The rows cannot be read as the metadata says (missing column, unknown input type)."""


def _module(obj):
    return type(obj).__module__ or ''


def is_dask_frame(obj):
    return _module(obj).startswith('dask') and hasattr(obj, 'to_delayed')


def is_spark_frame(obj):
    return _module(obj).startswith('pyspark.sql') and hasattr(obj, 'mapInPandas')


def is_parquet(obj):
    if isinstance(obj, (str, os.PathLike)):
        return True
    return isinstance(obj, (list, tuple)) and bool(obj) and all(
        isinstance(p, (str, os.PathLike)) for p in obj)


def open_source(data):
    """The row source for a Dask / Spark DataFrame or Parquet path(s)."""
    if is_dask_frame(data):
        return DaskSource(data)
    if is_spark_frame(data):
        return SparkSource(data)
    if is_parquet(data):
        return ParquetSource(data)
    raise SourceError(
        f'Cannot read rows from a {type(data).__name__}: give a dask.dataframe.DataFrame, a '
        'pyspark.sql.DataFrame, or a Parquet file, directory or list of files (a pandas '
        'DataFrame fits in memory with synthesizer.fit).'
    )


# ----------------------------------------------------------------------------------- Parquet
class ParquetSource:
    """Parquet file(s) on one machine, read row group by row group in batches (pyarrow)."""

    def __init__(self, paths, batch_rows=PARQUET_BATCH_ROWS):
        import pyarrow.parquet as pq

        self._pq = pq
        paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        files = []
        for path in map(Path, paths):
            if path.is_dir():
                found = sorted(p for p in path.rglob('*.parquet') if p.is_file())
                if not found:
                    raise SourceError(f'No .parquet file under {str(path)!r}.')
                files += found
            elif path.is_file():
                files.append(path)
            else:
                raise SourceError(f'No such Parquet file or directory: {str(path)!r}.')
        self.files = files
        self.batch_rows = int(batch_rows)

    def _file(self, path):
        return self._pq.ParquetFile(path)

    def check_columns(self, columns):
        """Every file holds exactly the metadata's columns; else say which file differs."""
        wanted = set(columns)
        for path in self.files:
            names = set(self._file(path).schema_arrow.names)
            missing, extra = sorted(wanted - names), sorted(names - wanted)
            if missing or extra:
                what = ([f'lacks the column(s) {missing}'] if missing else []) + (
                    [f'has column(s) {extra} that are not in the metadata'] if extra else [])
                raise SourceError(f"Parquet file '{path}' {' and '.join(what)}.")

    def __len__(self):
        return sum(self._file(p).metadata.num_rows for p in self.files)  # file footers only

    def accumulate(self, encoder, verbose=False):
        encoder.record_warnings = True  # one batch at a time: repeat each warning once
        return merge([self.map_reduce(encoder, encoder.columns, verbose)])

    def map_reduce(self, function, columns, verbose=False, desc=EMBEDDING):
        """Sum of ``function`` over the row-group batches of ``columns`` (None: no rows)."""
        groups = [(p, g) for p in self.files for g in range(self._file(p).num_row_groups)]
        total = None
        current, reader = None, None
        for path, group in tqdm(groups, desc=f'{desc} (row groups)', disable=not verbose,
                                leave=False):
            if path != current:
                current, reader = path, self._file(path)
            for batch in reader.iter_batches(batch_size=self.batch_rows, row_groups=[group],
                                             columns=columns):
                part = function(batch.to_pandas())
                total = part if total is None else total + part
        return total


# -------------------------------------------------------------------------------------- Dask
class DaskSource:
    """A ``dask.dataframe.DataFrame``: one task per partition, then a tree of merges."""

    def __init__(self, frame):
        self.frame = frame

    def check_columns(self, columns):
        _check_frame_columns(self.frame.columns, columns)

    def __len__(self):
        return int(len(self.frame))

    def accumulate(self, encoder, verbose=False):
        # encoders run in threads here: their warnings are shown as they come, not recorded
        encoder.record_warnings = False
        return merge([self.map_reduce(encoder, encoder.columns, verbose)])

    def map_reduce(self, function, columns, verbose=False, desc=EMBEDDING):
        """``function`` per partition of ``columns``, then a tree of sums in the task graph."""
        import dask

        apply = dask.delayed(function, pure=True)  # one copy of the public function in the graph
        tag = f'sdv-dpkme-partial-{uuid.uuid4().hex}'
        level = [apply(part, dask_key_name=(tag, i))
                 for i, part in enumerate(self.frame[columns].to_delayed())]
        while len(level) > 1:
            level = [dask.delayed(_sum, pure=True)(level[i : i + TREE_FAN_IN])
                     for i in range(0, len(level), TREE_FAN_IN)]
        if not level:
            return None
        with _DaskProgress(tag, self.frame.npartitions, verbose, desc):
            (total,) = dask.compute(level[0])
        return total


def _sum(parts):
    """Sum of partial results (None: an empty partition)."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def _DaskProgress(tag, total, verbose, desc=EMBEDDING):
    """A tqdm bar over the partition tasks (local schedulers run the callbacks)."""
    from dask.callbacks import Callback

    class Progress(Callback):
        def _start(self, dsk):
            self.bar = tqdm(total=total, desc=f'{desc} (partitions)', disable=not verbose,
                            leave=False)

        def _posttask(self, key, result, dsk, state, worker_id):
            if isinstance(key, tuple) and key and key[0] == tag:
                self.bar.update()

        def _finish(self, dsk, state, errored):
            self.bar.close()

    return Progress()


def _check_frame_columns(present, columns):
    present = list(present)
    missing = [c for c in columns if c not in present]
    extra = [c for c in present if c not in columns]
    if missing or extra:
        what = ([f'lacks the column(s) {missing}'] if missing else []) + (
            [f'has column(s) {extra} that are not in the metadata'] if extra else [])
        raise SourceError(f"The DataFrame {' and '.join(what)}.")


# ------------------------------------------------------------------------------------- Spark
class SparkSource:
    """A ``pyspark.sql.DataFrame``: ``mapInPandas`` per partition, then ``treeReduce``."""

    def __init__(self, frame):
        self.frame = frame

    def check_columns(self, columns):
        _check_frame_columns(self.frame.columns, columns)

    def __len__(self):
        return int(self.frame.count())

    def accumulate(self, encoder, verbose=False):
        encoder.record_warnings = True  # the workers' warnings come back with their sums
        return merge([self.map_reduce(encoder, encoder.columns, verbose)])

    def map_reduce(self, function, columns, verbose=False, desc=EMBEDDING):
        """``function`` per Arrow batch in ``mapInPandas``, summed per partition; one pickled
        partial per partition, then ``treeReduce`` (None: every partition empty)."""

        def partials(batches):
            total = None
            for frame in batches:  # Arrow batches of one partition
                part = function(frame)
                total = part if total is None else total + part
            if total is not None:
                yield _pandas().DataFrame({'partial': [pickle.dumps(total)]})

        rdd = (self.frame.select(*columns)
               .mapInPandas(partials, schema='partial binary')
               .rdd.map(lambda row: pickle.loads(bytes(row.partial))))
        spark = self.frame.sparkSession
        with _SparkProgress(spark.sparkContext, verbose, desc):
            try:
                return rdd.treeReduce(lambda a, b: a + b)
            except ValueError as err:  # every partition empty: nothing to reduce
                if 'empty' not in str(err).lower():
                    raise
                return None


def _pandas():
    import pandas

    return pandas


class _SparkProgress:
    """A tqdm bar over the tasks (= partitions) of the pass, polled from Spark's status tracker."""

    def __init__(self, context, verbose, desc=EMBEDDING):
        self.context, self.verbose, self.desc = context, verbose, desc

    def __enter__(self):
        if not self.verbose:
            return self
        self.group = f'sdv-dpkme-{uuid.uuid4().hex}'
        self.context.setJobGroup(self.group, f'sdv_dpkme: {self.desc.lower()}')
        self.stop = threading.Event()
        self.bar = tqdm(desc=f'{self.desc} (partitions)', leave=False)
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()
        return self

    def _poll(self):
        tracker = self.context.statusTracker()
        while not self.stop.wait(0.5):
            done = total = 0
            for job in tracker.getJobIdsForGroup(self.group):
                info = tracker.getJobInfo(job)
                for stage in (info.stageIds if info else []):
                    stage_info = tracker.getStageInfo(stage)
                    if stage_info:
                        done += stage_info.numCompletedTasks
                        total += stage_info.numTasks
            self.bar.total = total
            self.bar.n = done
            self.bar.refresh()

    def __exit__(self, *exc):
        if self.verbose:
            self.stop.set()
            self.thread.join()
            self.bar.close()
            self.context.setLocalProperty('spark.jobGroup.id', None)
