"""The attacker's table, its neighbours and probes, shared by the adversarial privacy suite.

One table holds every kind of column a user can declare: ids (key, non-key, with a regex), PII
sdtypes with ``pii: True`` and ``pii: False``, an ``unknown`` column, integer / float / nullable
numbers, columns under each constraint SDV accepts, categories, a nullable boolean, datetimes as
datetime64, as strings without a declared format and as strings with one, and a target.
"""

import contextlib

import numpy as np
import pandas as pd
import torch
from sdv.cag import FixedIncrements, Inequality, OneHotEncoding, Range
from sdv.metadata import Metadata

from sdv_dpkme.privacy import (
    GaussianMechanism,
    PoissonSubsampledGaussianMechanism,
    SubsampledGaussianMechanism,
)

TABLE = 't'
N = 80
CATEGORIES = ['Lima', 'Oslo', 'Rome']

COLUMNS = {
    'pk': {'sdtype': 'id'},
    'user': {'sdtype': 'id'},
    'ticket': {'sdtype': 'id', 'regex_format': 'T[0-9]{6}'},
    'email': {'sdtype': 'email', 'pii': True},
    'phone': {'sdtype': 'phone_number', 'pii': False},
    'code': {'sdtype': 'unknown'},
    'age': {'sdtype': 'numerical'},
    'income': {'sdtype': 'numerical'},
    'big': {'sdtype': 'numerical'},
    'lo': {'sdtype': 'numerical'},
    'mid': {'sdtype': 'numerical'},
    'hi': {'sdtype': 'numerical'},
    'steps': {'sdtype': 'numerical'},
    'oh_a': {'sdtype': 'numerical'},
    'oh_b': {'sdtype': 'numerical'},
    'city': {'sdtype': 'categorical'},
    'flag': {'sdtype': 'boolean'},
    'when': {'sdtype': 'datetime'},
    'day': {'sdtype': 'datetime'},
    'seen': {'sdtype': 'datetime', 'datetime_format': '%d.%m.%Y'},
    'label': {'sdtype': 'categorical'},
}

DOMAIN = {'columns': {
    'age': {'min_value': 0, 'max_value': 120, 'integer': True, 'nullable': True},
    'income': {'min_value': 0, 'max_value': 200_000, 'nullable': True},
    'big': {'min_value': 0, 'max_value': 10**13, 'integer': True},
    'lo': {'min_value': 0, 'max_value': 1e10},
    'mid': {'min_value': 0, 'max_value': 1e10},
    'hi': {'min_value': 0, 'max_value': 1e10},
    'steps': {'min_value': 0, 'max_value': 10**9, 'integer': True},
    'oh_a': {'min_value': 0, 'max_value': 1, 'integer': True},
    'oh_b': {'min_value': 0, 'max_value': 1, 'integer': True},
    'city': {'category_values': CATEGORIES},
    'flag': {'nullable': True},
    'when': {'start_timestamp': '2020-01-01', 'end_timestamp': '2022-12-31'},
    'day': {'start_timestamp': '2019-01-01', 'end_timestamp': '2021-12-31'},
    'seen': {'start_timestamp': '01.01.2018', 'end_timestamp': '31.12.2023',
             'datetime_format': '%d.%m.%Y'},
    'label': {'category_values': ['no', 'yes']},
}}


def metadata():
    return Metadata.load_from_dict({'tables': {TABLE: {
        'primary_key': 'pk', 'columns': {k: dict(v) for k, v in COLUMNS.items()},
    }}})


def constraints():
    """One of each constraint SDV accepts and the synthesizers enforce (by reject sampling)."""
    return [
        Inequality(low_column_name='lo', high_column_name='hi'),
        Range(low_column_name='lo', middle_column_name='mid', high_column_name='hi'),
        FixedIncrements(column_name='steps', increment_value=5),
        OneHotEncoding(column_names=['oh_a', 'oh_b']),
    ]


def table(seed=0):
    rng = np.random.default_rng(seed)
    lo = rng.uniform(0, 1e6, N).round(3)
    mid = lo + rng.uniform(0, 1e6, N).round(3)
    oh = rng.random(N) < 0.4
    income = rng.uniform(1_000, 150_000, N).round(2)
    income[rng.random(N) < 0.1] = np.nan
    flag = pd.Series(rng.random(N) < 0.5, dtype=object)
    days = pd.Timestamp('2020-01-01') + pd.to_timedelta(rng.integers(0, 365, N), 'D')
    return pd.DataFrame({
        'pk': np.arange(N),
        'user': [f'U{i:05d}' for i in rng.integers(0, 10**5, N)],
        'ticket': [f'T{i:06d}' for i in rng.integers(0, 10**6, N)],
        'email': [f'person{i}@example.com' for i in range(N)],
        'phone': [f'555-01{i:02d}' for i in range(N)],
        'code': [f'C{i}' for i in range(N)],
        'age': rng.integers(18, 90, N),
        'income': income,
        'big': rng.integers(0, 10**12, N),
        'lo': lo,
        'mid': mid,
        'hi': mid + rng.uniform(0, 1e6, N).round(3),
        'steps': 5 * rng.integers(0, 1000, N),
        'oh_a': oh.astype(int),
        'oh_b': (~oh).astype(int),
        'city': rng.choice(CATEGORIES, N),
        'flag': flag,
        'when': pd.Timestamp('2020-03-01') + pd.to_timedelta(rng.integers(0, 700, N), 'D'),
        # month-first strings whose days are <= 12: a format guessed from row 0 changes them all
        'day': [f'{d.month:02d}/{min(d.day, 12):02d}/{d.year}' for d in days],
        'seen': [d.strftime('%d.%m.%Y') for d in days],
        'label': np.where(rng.random(N) < 0.3, 'yes', 'no'),
    })


def _set(**values):
    def change(data):
        for column, value in values.items():
            if not isinstance(value, (int, float, np.number)):
                data[column] = data[column].astype(object)
            elif data[column].dtype.kind in 'iu' and not (float(value).is_integer()
                                                          and abs(value) < 2**63):
                data[column] = data[column].astype(float)
            data.loc[0, column] = value
        return data
    return change


# Each neighbour replaces row 0 of the table. Row 0 stays valid for every constraint.
NEIGHBOURS = {
    'rare category': _set(city='Atlantis9931'),
    'huge numbers': _set(income=1.7e308, big=1.7e308, age=1.7e308),
    'tiny and negative numbers': _set(income=-1.7e308, big=-1.7e308, age=5e-324),
    'infinities': _set(income=-np.inf, big=np.inf),
    'NaN in an int column': _set(age=np.nan),
    'None in a bool column': _set(flag=None),
    'non-integer in an int column': _set(age=40.5, big=12345.5, steps=10),
    'unique datetimes': _set(when=pd.Timestamp('2021-06-06 13:13:13.123456789'),
                             day='13/02/2020', seen='29.02.2020'),
    'unique strings everywhere': _set(pk='CANARY-PK', user='CANARY-U', ticket='T999999',
                                      email='canary@x.io', phone='CANARY-P', code='CANARY-C'),
    'extremes of constrained columns': _set(lo=0.0, mid=9.9e9, hi=1e10, steps=10**9),
    'other label': lambda data: data.assign(label=data['label'].where(
        data.index != 0, 'yes' if data.loc[0, 'label'] == 'no' else 'no')),
}


def neighbour(name, seed=0):
    return NEIGHBOURS[name](table(seed).copy())


@contextlib.contextmanager
def captured_releases():
    """Record the exact (pre-noise) value, the stated sensitivity and the public details (e.g.
    which pairs an adaptive release measures) of every release."""
    records = []
    plain, sub = GaussianMechanism.release, SubsampledGaussianMechanism.release
    poisson = PoissonSubsampledGaussianMechanism.release

    def record_plain(self, value, *, name, sensitivity, **kwargs):
        records.append((name, _numbers(value), float(sensitivity), kwargs.get('details')))
        return plain(self, value, name=name, sensitivity=sensitivity, **kwargs)

    def record_sub(self, value):
        records.append(('subsampled', _numbers(value), float(self.std / self.noise_multiplier)
                        if self.noise_multiplier else None, None))
        return sub(self, value)

    def record_poisson(self, value):  # DP-SGD: a step's value depends on the earlier releases
        records.append(('poisson', _numbers(value), self.sensitivity, None))
        return poisson(self, value)

    GaussianMechanism.release = record_plain
    SubsampledGaussianMechanism.release = record_sub
    PoissonSubsampledGaussianMechanism.release = record_poisson
    try:
        yield records
    finally:
        GaussianMechanism.release = plain
        SubsampledGaussianMechanism.release = sub
        PoissonSubsampledGaussianMechanism.release = poisson


def _numbers(value):
    return torch.as_tensor(value, dtype=torch.float64).detach().cpu().numpy().copy()
