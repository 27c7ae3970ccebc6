"""DP domain discovery on distributed and out-of-core rows: per-chunk counts that merge exactly,
one noisy release on the driver, the same domains and releases as the in-memory fit.

Noise seeds here are TEST ONLY (a known seed voids the guarantee)."""

import os
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sdv.errors import SynthesizerInputError

from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer, fit_distributed
from sdv_dpkme.domain import ColumnDomain, DomainError, discover
from sdv_dpkme.domain import discovery
from sdv_dpkme.domain.discovery import NAME, DiscoveryCounter
from sdv_dpkme.privacy import GaussianMechanism, Ledger, NoiseSource, PrivacyAccountant
from sdv_dpkme.privacy.testing import fixed_noise
from tests.conftest import make, FAST, FAST_MERF, make_metadata, make_table
from tests.scale.test_fit_distributed import (  # noqa: F401 (released is a fixture)
    _assert_same_fit,
    _fit,
    _parquet,
    released,
)

dd = pytest.importorskip('dask.dataframe')
pytest.importorskip('pyarrow')

DISCOVERED = ['age', 'income', 'city', 'when', 'label']  # flag is boolean: public domain
RARE = 'RARE-7731'


def _synth(cls=DPHPSynthesizer, **extra):
    """Nothing declared but nullability: five columns discovered in one release."""
    settings = FAST if cls is DPHPSynthesizer else FAST_MERF
    args = dict(epsilon=4.0, domain_budget_share=0.3, target_column='label', random_state=3)
    return make(cls, make_metadata(), **{**args, **settings, **extra})


@pytest.fixture(autouse=True)
def _known_noise():
    """Fixed noise (test only): these fits compare their releases across entry paths."""
    with fixed_noise(5):
        yield


@pytest.fixture(scope='module')
def table():
    """Enough rows for every discovered column to clear the noise; one city held by one row."""
    out = make_table(1200, seed=2)
    out.loc[1100, 'city'] = RARE  # in the last Parquet file and the last partitions
    return out


# ------------------------------------------------------------------------- per-chunk counts
def _counter():
    return DiscoveryCounter({
        'x': ColumnDomain(name='x', sdtype='numerical'),
        't': ColumnDomain(name='t', sdtype='datetime'),
        'c': ColumnDomain(name='c', sdtype='categorical'),
    })


def _messy(n, seed):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        'x': rng.choice([np.nan, -3e20, 0.0, 1e-9, 42.0, -17.5, 2.5, np.inf], n),
        't': rng.choice([None, '1690-01-01', '2020-03-04', '2031-07-15 10:00'], n),
        'c': pd.Series(rng.choice(['a', 'b', 'zz', None, 7, True], n), dtype=object),
    })


def _fold(parts, order):
    total = parts[order[0]]
    for i in order[1:]:
        total = total + parts[i]
    return total


def test_partial_counts_merge_like_one_chunk_in_any_split_and_grouping():
    counter, table = _counter(), _messy(300, 0)
    whole = counter(table).entries(counter.columns)
    rng = np.random.default_rng(1)
    for trial in range(4):
        # arbitrary cuts, empty chunks included
        cuts = np.sort(rng.integers(0, len(table), 5 + trial))
        bounds = [0, *cuts, len(table)]
        parts = [counter(table.iloc[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        order = list(rng.permutation(len(parts)))
        left = _fold(parts, order)
        right = parts[order[-1]]
        for i in reversed(order[:-1]):
            right = parts[i] + right  # the other grouping
        tree = [parts[i] for i in order]
        while len(tree) > 1:
            tree = [_fold(tree[i : i + 2], list(range(len(tree[i : i + 2]))))
                    for i in range(0, len(tree), 2)]
        for merged in (left, right, tree[0]):
            assert merged.n == len(table)
            assert merged.entries(counter.columns) == whole
    # a chunk must not be counted twice: the merge is a plain sum, so duplicating one shows
    twice = counter(table) + counter(table.iloc[:1])
    assert twice.entries(counter.columns) != whole


def test_equal_values_of_different_dtypes_merge_the_same_way_in_any_order():
    counter = DiscoveryCounter({'c': ColumnDomain(name='c', sdtype='categorical')})
    ints = counter(pd.DataFrame({'c': pd.Series([1, 2, 2])}))  # int64 partition
    floats = counter(pd.DataFrame({'c': pd.Series([1.0, np.nan])}))  # float64 (a null in it)
    a, b = (ints + floats).entries(['c']), (floats + ints).entries(['c'])
    assert a == b
    assert [type(key[1]) for (_, key), _ in a[:-1]] == [float, int]  # one representative each
    assert [count for _, count in a] == [2, 2, 1]  # 1 twice, 2 twice, one null


# --------------------------------------------------------------------- fits and equivalence
def _sources(table, tmp_path, spark=None):
    out = {'parquet': _parquet(table, tmp_path, cuts=(300, 301, 800)),
           'dask': dd.from_pandas(table, npartitions=4)}
    if spark is not None:
        out['spark'] = spark.createDataFrame(table).repartition(3)
    return out


def _check_same_discovery(reference, other):
    assert list(other._discovery.domains) == DISCOVERED
    assert other._domains == reference._domains
    assert other._discovery.summary == reference._discovery.summary
    assert other._discovery.cut == reference._discovery.cut


def _no_rare_value(synth):
    assert RARE not in synth._domains['city'].categories
    assert RARE.encode() not in pickle.dumps(synth)  # nor anywhere in the fitted object
    assert RARE not in str(synth.get_privacy_report().to_dict())
    assert RARE not in set(synth.sample(200)['t']['city'])


@pytest.mark.slow
@pytest.mark.parametrize('cls', [DPHPSynthesizer, DPMERFSynthesizer], ids=lambda c: c.__name__)
def test_parquet_and_dask_discover_and_release_what_pandas_does(cls, table, tmp_path, released):
    reference = _fit(_synth(cls), table)
    expected = list(released)
    assert expected[0][0] == NAME  # discovery's release comes first, then the embeddings
    assert set(reference._domains['city'].categories) == {'Lima', 'Oslo', 'Rome'}
    _no_rare_value(reference)
    for name, data in _sources(table, tmp_path).items():
        released.clear()
        fitted = _fit(_synth(cls), data)
        _check_same_discovery(reference, fitted)
        _assert_same_fit(reference, fitted, expected, released)
        _no_rare_value(fitted)


def test_spark_discovers_and_releases_what_pandas_does_even_when_a_task_is_retried(
        spark, table, tmp_path, monkeypatch, released):
    marker = tmp_path / 'failed-once'
    driver = os.getpid()

    class FlakyCounter(DiscoveryCounter):
        """The per-chunk count, except that the first worker to count rows dies mid-pass."""

        def __call__(self, frame):
            if os.getpid() != driver and not marker.exists():
                marker.touch()
                raise RuntimeError('simulated worker failure')
            return super().__call__(frame)

    # a local class: pickled by value to the workers; the in-memory fit uses it on the driver
    monkeypatch.setattr(discovery, 'DiscoveryCounter', FlakyCounter)
    reference = _fit(_synth(), table)
    expected = list(released)
    released.clear()
    fitted = _synth(verbose=True)  # with progress bars over both passes
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        fitted.fit({'t': spark.createDataFrame(table).repartition(3)})  # SDV's entry point
    assert marker.exists()  # a discovery task failed and Spark ran it again: counted once
    _check_same_discovery(reference, fitted)
    _assert_same_fit(reference, fitted, expected, released)
    _no_rare_value(fitted)


def test_a_changed_seed_changes_the_discovery_release(table, tmp_path, released):
    """The equality above is not vacuous: another noise seed gives other noisy counts."""
    _fit(_synth(), table)
    first = released[0][1]
    released.clear()
    with fixed_noise(6):
        _fit(_synth(), _sources(table, tmp_path)['dask'])
    assert released[0][0] == NAME and not np.allclose(released[0][1], first)


def test_too_few_rows_to_discover_is_refused_before_anything_is_spent(tmp_path, released):
    small = make_table(20)  # a value or grid bin needs about 30 rows here
    for data in (_parquet(small, tmp_path, cuts=(10,)), dd.from_pandas(small, npartitions=2)):
        synth = _synth()
        with pytest.raises(SynthesizerInputError, match='(?s)too few to discover.*Nothing was spent'):
            _fit(synth, data)
        assert released == []
        with pytest.raises(SynthesizerInputError, match='Fit the synthesizer'):
            synth.get_privacy_report()


def test_discovery_off_is_refused_before_anything_is_read(tmp_path):
    paths = _parquet(make_table(300), tmp_path, cuts=(100,))
    pd.read_parquet(paths[1]).drop(columns='city').to_parquet(paths[1])  # would fail if read
    synth = _synth()
    synth.domain_budget_share = 0  # turned off after construction: checked again at fit
    with pytest.raises(SynthesizerInputError, match='Discovery is off here'):
        fit_distributed(synth, paths)


class _ShrinkingRows:
    """A source whose rows change between the count of n and discovery's pass."""

    def __init__(self, table):
        self.table = table

    def __len__(self):
        return len(self.table)

    def discovery_counts(self, counter):
        return counter(self.table.iloc[1:])


def test_rows_that_change_before_the_discovery_pass_release_nothing():
    accountant = PrivacyAccountant(1.0, 1e-5)
    noise = NoiseSource(0)
    led = Ledger(accountant, noise, GaussianMechanism(accountant, noise))
    undeclared = {'c': ColumnDomain(name='c', sdtype='categorical')}
    with pytest.raises(DomainError, match='read 599 rows, but 600 were counted'):
        discover(_ShrinkingRows(pd.DataFrame({'c': ['a', 'b'] * 300})), undeclared, led, 0.5)
    assert accountant.releases == [] and accountant.reserved == []  # nothing spent or reserved


@pytest.mark.parametrize('bad', ['missing', 'metadata'])
def test_bad_rows_are_refused_in_discoverys_pass_before_its_release(tmp_path, released, bad):
    """Issue 42 item 3: a distributed fit checked its rows (SDV's metadata checks, the declared
    columns' values) only in the embedding pass, after discovery's release had spent budget.
    Discovery's pass now runs the same checks before it counts."""
    table = make_table(600, seed=4)
    if bad == 'missing':  # a declared, not nullable column
        table['age'] = table['age'].astype(float)
        table.loc[550, 'age'] = np.nan
    else:  # a key that is not unique within one chunk
        table.loc[550, 'pk'] = table.loc[549, 'pk']
    synth = _synth(known_min_max_values={'age': (18, 90)}, integer_columns=['age'])
    for data in (_parquet(table, tmp_path, cuts=(300,)), dd.from_pandas(table, npartitions=2)):
        with pytest.raises(Exception) as err:
            _fit(synth, data)
        assert ("age" if bad == "missing" else "pk") in str(err.value), str(err.value)
        assert released == []
