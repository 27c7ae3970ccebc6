"""Distributed and out-of-core fits release what the in-memory fit releases (same public settings
and a fixed test-only noise seed), with the same privacy report, clipping and errors."""

import os
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sdv.errors import InvalidDataError, SynthesizerInputError
from sdv.utils import load_synthesizer

from sdv_dpkme import DPHPSynthesizer, DPKIPSynthesizer, DPMERFSynthesizer, fit_distributed
from sdv_dpkme.domain import DPNumericalTransformer
from sdv_dpkme.privacy.mechanisms import GaussianMechanism
from sdv_dpkme.privacy.testing import fixed_noise
from tests.conftest import (BOUNDS, CATEGORIES, FAST, FAST_KIP, FAST_MERF, make, make_metadata,
                            make_table)

dd = pytest.importorskip('dask.dataframe')
pytest.importorskip('pyarrow')

SETTINGS = {DPHPSynthesizer: FAST, DPMERFSynthesizer: FAST_MERF}


def _synth(cls=DPHPSynthesizer, **extra):
    return make(cls, make_metadata(), epsilon=1.0, known_min_max_values=BOUNDS,
                known_categories=CATEGORIES, target_column='label', random_state=3,
                **{**SETTINGS[cls], **extra})


@pytest.fixture(autouse=True)
def _known_noise():
    """Fixed noise (test only): these fits compare their releases across entry paths."""
    with fixed_noise(5):
        yield


@pytest.fixture
def released(monkeypatch):
    """Every Gaussian release of the fits in the test, in order: (name, noisy value)."""
    out = []
    release = GaussianMechanism.release

    def record(self, value, **kwargs):
        noisy = release(self, value, **kwargs)
        out.append((kwargs['name'], torch.as_tensor(noisy).clone()))
        return noisy

    monkeypatch.setattr(GaussianMechanism, 'release', record)
    return out


def _fit(synth, data):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        if isinstance(data, pd.DataFrame):
            synth.fit({'t': data})
        else:
            fit_distributed(synth, data)
    return synth


def _parquet(table, tmp_path, cuts=(150, 151, 400)):
    """The table over several files, one of them with a single row, in small row groups."""
    paths = []
    for i, part in enumerate(np.split(table, list(cuts))):
        path = tmp_path / f'part-{i}.parquet'
        part.to_parquet(path, row_group_size=64)
        paths.append(path)
    return paths


def _assert_same_fit(reference, other, ref_releases, releases):
    assert [name for name, _ in releases] == [name for name, _ in ref_releases]
    for (name, a), (_, b) in zip(ref_releases, releases):
        torch.testing.assert_close(b, a, rtol=1e-9, atol=1e-12, msg=name)
    assert other.get_privacy_report().to_dict() == reference.get_privacy_report().to_dict()
    numeric = [c for c in reference.get_loss_values().columns if c != 'Step']
    np.testing.assert_allclose(other.get_loss_values()[numeric].to_numpy(float),
                               reference.get_loss_values()[numeric].to_numpy(float), rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize('cls', list(SETTINGS), ids=lambda c: c.__name__)
def test_parquet_and_dask_release_what_pandas_releases(cls, tmp_path, released):
    table = make_table(500)
    reference = _fit(_synth(cls), table)
    expected = list(released)
    sources = [_parquet(table, tmp_path), dd.from_pandas(table, npartitions=4)]
    if cls is DPHPSynthesizer:
        sources.append(tmp_path)  # a directory of Parquet files
    for data in sources:
        released.clear()
        _assert_same_fit(reference, _fit(_synth(cls), data), expected, released)


def test_a_distributed_fit_saves_loads_and_samples_like_an_in_memory_one(tmp_path, capsys):
    table = make_table(300)
    reference = _fit(_synth(), table)
    synth = _synth(verbose=True)  # with the progress bar over partitions
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': dd.from_pandas(table, npartitions=3)})  # SDV's entry point
        synth.save(tmp_path / 'synth.pkl')
        loaded = load_synthesizer(str(tmp_path / 'synth.pkl'))
    assert 'partitions' in capsys.readouterr().err
    assert loaded.get_info()['is_fit']
    pd.testing.assert_frame_equal(loaded.sample(40)['t'], reference.sample(40)['t'])


def test_spark_releases_what_pandas_releases_even_when_a_task_is_retried(spark, tmp_path,
                                                                         released):
    marker = tmp_path / 'failed-once'
    driver = os.getpid()

    class FlakyAge(DPNumericalTransformer):
        """Age's transformer, except that the first worker to encode rows dies mid-pass."""

        def _transform(self, data):
            if os.getpid() != driver and not marker.exists():
                marker.touch()
                raise RuntimeError('simulated worker failure')
            return super()._transform(data)

    def synth(**extra):  # the in-memory reference uses the same transformer (on the driver)
        out = _synth(**extra)
        out.update_transformers({'age': FlakyAge(*BOUNDS['age'])})
        return out

    table = make_table(500)
    reference = _fit(synth(), table)
    expected = list(released)
    released.clear()
    fitted = synth(verbose=True)  # with the progress bar polled from Spark's status tracker
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        # SDV's entry point takes the Spark frame
        fitted.fit({'t': spark.createDataFrame(table).repartition(3)})
    assert marker.exists()  # a task of the pass failed, and Spark ran it again
    _assert_same_fit(reference, fitted, expected, released)
    assert len(fitted.sample(20)['t']) == 20


def test_out_of_range_values_in_one_partition_are_clipped_as_in_pandas(tmp_path, released):
    table = make_table(300)
    table.loc[200:210, 'age'] = 500  # outside the public bounds (18, 90), all in the last file
    clipped = "'age': values outside the public bounds"
    with pytest.warns(UserWarning, match=clipped):
        _synth().fit({'t': table})
    expected = list(released)
    for data in (_parquet(table, tmp_path, cuts=(100,)), dd.from_pandas(table, npartitions=3)):
        released.clear()
        with pytest.warns(UserWarning, match=clipped):
            fit_distributed(_synth(), data)
        # the same clipped statistic: the releases of the in-memory fit of the same rows
        assert [name for name, _ in released] == [name for name, _ in expected]
        for (name, a), (_, b) in zip(expected, released):
            torch.testing.assert_close(b, a, rtol=1e-9, atol=1e-12, msg=name)
    # and not those of the rows without the bad values
    released.clear()
    _fit(_synth(), make_table(300))
    first = next(i for i, (name, _) in enumerate(expected) if name == 'sum_kernel')
    assert released[first][0] == 'sum_kernel'
    assert not torch.allclose(released[first][1], expected[first][1])


def test_missing_values_in_a_non_nullable_column_fail_as_in_pandas(tmp_path):
    table = make_table(300)
    table['age'] = table['age'].astype(float)
    table.loc[250, 'age'] = np.nan
    message = "'age' has missing values but was not declared nullable"
    with pytest.raises(ValueError, match=message):
        _fit(_synth(), table)
    for data in (_parquet(table, tmp_path, cuts=(100,)), dd.from_pandas(table, npartitions=3)):
        synth = _synth()
        with pytest.raises(ValueError, match=message):
            _fit(synth, data)
        with pytest.raises(SynthesizerInputError, match='Fit the synthesizer'):
            synth.get_privacy_report()  # nothing was released


def test_sdvs_checks_of_the_rows_run_on_every_row_as_in_pandas(tmp_path):
    # a value SDV's validate refuses (the DP transformer would only bucket it), far from the
    # first rows: the driver reads no row, the workers check them all
    import dask

    table = make_table(300)
    table['flag'] = table['flag'].astype(object)
    table.loc[250, 'flag'] = 'maybe'
    with pytest.raises(InvalidDataError, match='flag'):
        _fit(_synth(), table)
    paths = [tmp_path / 'part-0.parquet', tmp_path / 'part-1.parquet']
    table[:100].astype({'flag': bool}).to_parquet(paths[0])
    table[100:].astype({'flag': str}).to_parquet(paths[1])  # a file of strings
    with dask.config.set({'dataframe.convert-string': False}):
        for data in (paths, dd.from_pandas(table, npartitions=3)):
            synth = _synth()
            with pytest.raises(InvalidDataError, match='flag'):
                _fit(synth, data)
            with pytest.raises(SynthesizerInputError, match='Fit the synthesizer'):
                synth.get_privacy_report()  # nothing was released


def test_a_parquet_file_without_a_column_is_named(tmp_path):
    paths = _parquet(make_table(300), tmp_path, cuts=(100, 200))
    pd.read_parquet(paths[1]).drop(columns='city').to_parquet(paths[1])
    with pytest.raises(SynthesizerInputError, match=r"part-1\.parquet' lacks the column\(s\) "
                                                    r"\['city'\]"):
        fit_distributed(_synth(), paths)


def test_synthesizers_without_a_one_pass_fit_say_which_can(tmp_path):
    paths = _parquet(make_table(300), tmp_path, cuts=(100,))
    kip = make(DPKIPSynthesizer, make_metadata(), epsilon=1.0, known_min_max_values=BOUNDS,
               known_categories=CATEGORIES, **FAST_KIP)
    minibatch = _synth(DPMERFSynthesizer, releases='minibatch', minibatch_size=32)
    for synth in (kip, minibatch):
        with pytest.raises(SynthesizerInputError,
                           match=r"DPHPSynthesizer and DPMERFSynthesizer \(releases='single'\)"):
            fit_distributed(synth, paths)
