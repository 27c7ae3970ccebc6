"""Every entry path of a fit (a DataFrame, Parquet, a Dask frame) goes through SDV's own ``fit``
(and so its bookkeeping: checks, logging, preprocess, fit_processed_data) exactly once."""

import warnings

import pytest
from sdv.single_table.base import BaseSynthesizer

from sdv_dpkme import fit_distributed, private_values_in_errors
from tests.conftest import make_table
from tests.scale.test_fit_distributed import _synth

dd = pytest.importorskip('dask.dataframe')
pytest.importorskip('pyarrow')


@pytest.fixture
def sdv_calls(monkeypatch):
    """The SDV methods of the fit that each entry path reaches, in order."""
    calls = []
    for name in ('fit', 'preprocess', 'fit_processed_data'):
        original = getattr(BaseSynthesizer, name)

        def spy(self, data, _original=original, _name=name):
            calls.append(_name)
            return _original(self, data)

        monkeypatch.setattr(BaseSynthesizer, name, spy)
    return calls


def test_parquet_dask_and_pandas_fits_all_run_sdvs_fit(tmp_path, sdv_calls):
    table = make_table(200)
    path = tmp_path / 't.parquet'
    table.to_parquet(path, index=False)
    entries = {
        'pandas': lambda synth: synth.fit({'t': table}),
        'parquet': lambda synth: fit_distributed(synth, str(path)),
        'parquet, named': lambda synth: fit_distributed(synth, str(path), table_name='t'),
        'dask': lambda synth: synth.fit({'t': dd.from_pandas(table, npartitions=3)}),
    }
    for entry, fit in entries.items():
        sdv_calls.clear()
        synth = _synth()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            fit(synth)
        assert sdv_calls == ['fit', 'preprocess', 'fit_processed_data'], entry
        assert synth._fitted and synth._fitted_date and synth.get_privacy_report() is not None


def test_a_wrong_table_name_is_refused(tmp_path):
    path = tmp_path / 't.parquet'
    make_table(50).to_parquet(path, index=False)
    synth = _synth()
    with private_values_in_errors(), pytest.raises(ValueError, match="'other' is not present"):
        fit_distributed(synth, str(path), table_name='other')
    assert not synth._fitted
