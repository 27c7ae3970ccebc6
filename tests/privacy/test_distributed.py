"""The adversarial suite on the distributed entry paths (``fit_distributed``): Dask, a Parquet
directory and Spark, each partitioned on the very column the neighbour changes, so replacing one
row can move it to another partition and change the partitions' sizes.

The saved (pickled and loaded) object of each fit is walked in full and compared with the saved
in-memory fit of the unchanged table: a neighbour, and an entry path, must not show outside the
mechanisms' outputs. Every release moves within its sensitivity, and a canary row never
reaches the saved bytes.
"""

import pickle
import warnings

import cloudpickle
import numpy as np
import pandas as pd
import pytest

from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer, fit_distributed
from sdv_dpkme.privacy.testing import fixed_noise
from tests.privacy import attack
from tests.privacy.graph import diff
from tests.privacy.test_adversarial import (CANARY, _tokens, assert_within_sensitivity, build,
                                            fit, graph)

dask = pytest.importorskip('dask')
dd = pytest.importorskip('dask.dataframe')
pytest.importorskip('pyarrow')


@pytest.fixture(autouse=True)
def _known_noise():
    """The fixed noise of the adversarial suite (test only): the fits are compared."""
    with fixed_noise(11):
        yield

PARTITIONS = 8


@pytest.fixture(autouse=True)
def plain_columns():
    # Dask turns object columns into Arrow strings by default (a bool column with a None into
    # 'True'/'False' strings); keep the user's objects, as a Parquet or Spark reader does
    with dask.config.set({'dataframe.convert-string': False, 'scheduler': 'synchronous'}):
        yield


def changed_column(name):
    """The first column in which the neighbour differs from the table (row 0)."""
    base, other = attack.table(), attack.neighbour(name)
    for column in base.columns:
        a, b = base.loc[0, column], other.loc[0, column]
        if not (a == b or (pd.isna(a) and pd.isna(b))):
            return column
    raise AssertionError(f'{name}: the neighbour changes nothing')


def typed(data):
    """The table as a typed store (Parquet, Spark) holds it: a column that mixes numbers and
    strings (a string id in an integer id column) is stored as strings."""
    data = data.copy()
    for column in data.columns:
        kinds = {type(v) for v in data[column] if v is not None and not pd.isna(v)}
        if str in kinds and len(kinds) > 1:
            data[column] = data[column].astype(str)
    return data


def dask_frame(data, on):
    """Hash-partitioned on ``on``: where row 0 goes (and so every partition's size) depends on
    its value."""
    return dd.from_pandas(data, npartitions=2).shuffle(on, npartitions=PARTITIONS)


def parquet_directory(data, on, path):
    """Files written by a partitioned job: one file per partition of the shuffled frame."""
    path.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(dask_frame(typed(data), on).to_delayed()):
        rows = part.compute()
        if len(rows):
            rows.to_parquet(path / f'part-{i}.parquet', index=False)
    return path


def spark_frame(spark, data, on):
    return spark.createDataFrame(typed(data)).repartition(PARTITIONS // 2, on)


def fit_rows(synth, rows):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        with attack.captured_releases() as releases:
            fit_distributed(synth, rows)
    return releases


def saved(synth):
    """The graph of the synthesizer as it is loaded back (pickling changes how pandas objects
    pickle again, so both sides of a comparison go through it)."""
    return graph(pickle.loads(pickle.dumps(synth)))


_SAVED = {}


def in_memory(cls, mode, table=attack.table):
    """(saved graph, releases) of the in-memory fit of ``table()`` (the suite's reference)."""
    if (cls, mode, table) not in _SAVED:
        synth = build(cls, mode)
        releases = fit(synth, table())
        _SAVED[cls, mode, table] = (saved(synth), releases)
    return _SAVED[cls, mode, table]


def assert_same_as_in_memory(cls, mode, synth, releases, what, table=attack.table):
    base_graph, base_releases = in_memory(cls, mode, table)
    differing = diff(base_graph, saved(synth))
    assert not differing, f'{what}: the saved object depends on the rows: {differing}'
    assert_within_sensitivity(base_releases, releases)


# Every distributed fit is compared with one reference, the in-memory fit of the table: so the
# saved object depends neither on the row that differs nor on how the rows are partitioned.

# ------------------------------------------------------------------------------------ Dask
@pytest.mark.parametrize('name', [  # the first neighbour in the fast subset, all in the full suite
    pytest.param(name, marks=() if i == 0 else pytest.mark.slow)
    for i, name in enumerate(attack.NEIGHBOURS)])
def test_dask_fit_of_a_neighbour_saves_what_an_in_memory_fit_saves(name):
    on = changed_column(name)
    synth = build(DPHPSynthesizer, 'default')
    releases = fit_rows(synth, dask_frame(attack.neighbour(name), on))
    assert_same_as_in_memory(DPHPSynthesizer, 'default', synth, releases, f'Dask on {on!r}, {name}')


@pytest.mark.slow
@pytest.mark.parametrize('cls,mode,name', [
    (DPMERFSynthesizer, 'single', None), (DPMERFSynthesizer, 'single', 'rare category'),
    # the DP vote on integer-ness: a pass of its own over the partitions before the embedding
    (DPHPSynthesizer, 'integer_vote', 'rare category'),
])
def test_dask_fits_of_other_modes_save_what_an_in_memory_fit_saves(cls, mode, name):
    data = attack.table() if name is None else attack.neighbour(name)
    synth = build(cls, mode)
    releases = fit_rows(synth, dask_frame(data, 'city'))
    assert_same_as_in_memory(cls, mode, synth, releases, f'Dask, {mode}, {name}')


def test_the_partitions_do_depend_on_the_row():
    # guard: the partitioning is data dependent, so a head would differ between neighbours
    sizes = [dask_frame(data, 'city').map_partitions(len).compute().tolist()
             for data in (attack.table(), attack.neighbour('rare category'))]
    assert sizes[0] != sizes[1] and sum(sizes[0]) == sum(sizes[1]) == attack.N


# --------------------------------------------------------------------------------- Parquet
@pytest.mark.slow
@pytest.mark.parametrize('name', ['rare category', 'None in a bool column',
                                  'unique strings everywhere'])
def test_parquet_directory_fit_of_a_neighbour_saves_what_an_in_memory_fit_saves(name, tmp_path):
    on = changed_column(name)
    synth = build(DPHPSynthesizer, 'default')
    releases = fit_rows(synth, parquet_directory(attack.neighbour(name), on, tmp_path))
    assert_same_as_in_memory(DPHPSynthesizer, 'default', synth, releases,
                             f'Parquet files split on {on!r}, {name}')


# ----------------------------------------------------------------------------------- Spark
def long_table(data=None):
    """The table and another draw of it (160 rows: more than a driver's ``limit(100)``), with
    ``data`` (a neighbour) as its first 80 rows."""
    data = attack.table() if data is None else data
    more = attack.table(seed=1).assign(pk=np.arange(attack.N, 2 * attack.N))
    return pd.concat([data, more], ignore_index=True)


def test_spark_fits_of_neighbours_save_what_an_in_memory_fit_saves(spark):
    # one test for the cases: Spark's workers start (and import torch) once per session, then
    # each fit costs a few jobs
    for name in ['rare category', 'unique strings everywhere']:
        on = changed_column(name)
        synth = build(DPHPSynthesizer, 'default')
        releases = fit_rows(synth, spark_frame(spark, long_table(attack.neighbour(name)), on))
        assert_same_as_in_memory(DPHPSynthesizer, 'default', synth, releases,
                                 f'Spark repartitioned on {on!r}, {name}', table=long_table)


# -------------------------------------------------------------- every entry path is listed
COVERED = {
    'ParquetSource': test_parquet_directory_fit_of_a_neighbour_saves_what_an_in_memory_fit_saves,
    'DaskSource': test_dask_fit_of_a_neighbour_saves_what_an_in_memory_fit_saves,
    'SparkSource': test_spark_fits_of_neighbours_save_what_an_in_memory_fit_saves,
}


def test_every_distributed_entry_path_is_in_the_suite():
    # a new row source (an entry path of fit_distributed) must be walked here too
    from sdv_dpkme.scale import sources

    paths = {name for name, obj in vars(sources).items()
             if isinstance(obj, type) and hasattr(obj, 'map_reduce')}
    assert paths == set(COVERED), paths ^ set(COVERED)


# ------------------------------------------------------------------------------- canary
def test_canary_row_never_reaches_a_distributed_fits_saved_bytes(tmp_path):
    data = attack.table()
    for column, value in CANARY.items():
        if data[column].dtype != object and isinstance(value, str):
            data[column] = data[column].astype(object)
        data.loc[0, column] = value
    data.loc[0, ['lo', 'mid']] = [1.0, 2.0]
    synth = build(DPHPSynthesizer, 'default')
    fit_rows(synth, dask_frame(data, 'city'))
    synth.save(tmp_path / 's.pkl')
    blobs = {'pickle': pickle.dumps(synth), 'cloudpickle': cloudpickle.dumps(synth),
             'saved file': (tmp_path / 's.pkl').read_bytes()}
    found = [(where, name) for where, blob in blobs.items()
             for name, token in _tokens().items() if token in blob]
    assert not found
    assert np.isfinite(synth._model.sample(5).to_numpy()).all()
