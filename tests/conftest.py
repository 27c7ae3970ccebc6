import os
import shutil
import sys

# One OpenMP thread per test process (set before torch is imported; an explicit setting wins).
# The fits here are tiny: extra threads only spin against each other and against the other
# pytest-xdist worker on a 2-core machine, for several times the CPU time.
for _name in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_name, '1')

import numpy as np
import pandas as pd
import pytest
import torch
from sdv.metadata import Metadata

from sdv_dpkme import (
    DPHPSynthesizer,
    DPKIPSynthesizer,
    DPMERFSynthesizer,
    DPReweightingSynthesizer,
)
from sdv_dpkme.synthesizers.options import build_kwargs

torch.set_num_threads(int(os.environ['OMP_NUM_THREADS']))

# Flat settings (constructor arguments, kernel / training fields, the domain shorthand), turned
# into constructor arguments by ``make`` (``sdv_dpkme.synthesizers.options.build_kwargs``).
FAST = dict(nullable_columns=['income'], plan='fixed', steps=15, sum_order=10, product_order=3, product_redraws=2, batch_size=64,
            generator_dims=(32,), latent_dim=8, calibration_rows=2000, verbose=False)
# the same small settings for DP-MERF (its own feature-map arguments instead of DP-HP's)
FAST_MERF = dict(nullable_columns=['income'], plan='fixed', steps=15, n_features=64, batch_size=64,
                 generator_dims=(32,), latent_dim=8, calibration_rows=2000, verbose=False)
# DP-KIP: 15 DP-SGD steps on 3 support rows per class (q = 0.1: 24 expected rows of 240)
FAST_KIP = dict(nullable_columns=['income'], target_column='label', support_per_class=3,
                steps=15, sampling_rate=0.1, learning_rate=0.05, verbose=False)
# Balog reweighting: Algorithm 2 (no public rows) by default, 64 random features, 30 points
FAST_RW = dict(nullable_columns=['income'], n_features=64, n_points=30, steps=15, verbose=False)
# A mode argument that test builders replace by public rows of their own test table (another
# draw of it, so no private row is among them)
PUBLIC_ROWS = '<public rows of the test table>'
# Every synthesizer class, listed once: its fast settings, the release groups a fit with a target
# must report, its modes (extra arguments that take another privacy path), the arguments that
# give 3 and 40 training steps, and whether it is a kernel-mean-embedding method (the shared
# 'marginals' and 'pairs' terms). The contract tests and the adversarial privacy suite
# (tests/privacy/test_adversarial.py) run against every entry, and that suite fails when a
# synthesizer class of the package is missing here.
SYNTHESIZERS = {
    DPHPSynthesizer: dict(
        fast=FAST,
        groups={'class_proportions', 'sum_kernel', 'product_kernel', 'marginals', 'pairs',
                'selected_pairs'},
        # 'integer_vote': epsilon high enough that the 80-row attack table gets the DP vote on
        # the undeclared integer-ness of income, lo, mid and hi (tests/domain/test_integer_vote.py)
        # 'planned': the default noise-aware plan (FAST fixes plan='fixed' so that every release
        # group is tested); on the 80-row attack table it narrows or drops the noise-dominated releases
        # and, with its 2-class target, adds the pooled 'one_way' (tests/engines/test_one_way_fallback.py)
        modes={'default': {}, 'reweighted': {'reweight_generated_rows': 40},
               'integer_vote': {'epsilon': 50.0},
               'unselected': {'selected_pairs': 0},
               'planned': {'plan': 'auto'},
               # the pooled release ('auto' is off with the attack table's 2-class target under
               # FAST's plan='fixed')
               'one_way': {'one_way': True}}, steps=15,
        short={'steps': 3}, long={'steps': 40}, kme=True,
    ),
    DPMERFSynthesizer: dict(
        fast=FAST_MERF,
        groups={'class_proportions', 'embedding', 'marginals', 'pairs', 'selected_pairs'},
        modes={'single': {}, 'minibatch': {'releases': 'minibatch', 'minibatch_size': 32},
               'planned': {'plan': 'auto'}, 'one_way': {'one_way': True}},
        steps=15, short={'steps': 3}, long={'steps': 40}, kme=True,
    ),
    DPKIPSynthesizer: dict(
        fast=FAST_KIP, groups={'kip_class_counts', 'kip_gradients'},
        modes={'default': {}, 'auto': {'sampling_rate': 'auto'}}, steps=15,
        short={'steps': 3}, long={'steps': 40}, kme=False,
    ),
    DPReweightingSynthesizer: dict(
        fast=FAST_RW, groups={'random_feature_embedding'},
        modes={'synthetic': {}, 'public': {'public_data': PUBLIC_ROWS}}, steps=15,
        short={'steps': 3}, long={'steps': 40}, kme=False,
    ),
}
# per synthesizer name: (fast settings, release groups)
FAST_BY_CLASS = {cls.__name__: (v['fast'], v['groups']) for cls, v in SYNTHESIZERS.items()}
KME_CLASSES = [cls for cls, v in SYNTHESIZERS.items() if v['kme']]
NULLABLE = ['income']
BOUNDS = {'age': (18, 90), 'income': (0, 200_000), 'when': ('2020-01-01', '2021-12-31')}
CATEGORIES = {'city': ['Lima', 'Oslo', 'Rome'], 'label': ['no', 'yes']}


def make(cls, metadata, **flat):
    """``cls`` built from flat settings (see ``build_kwargs``), e.g. ``steps=15`` or
    ``known_categories={...}``."""
    return cls(metadata, **build_kwargs(cls, flat))


def make_table(n=240, seed=0):
    rng = np.random.default_rng(seed)
    income = rng.uniform(1_000, 150_000, n).round(2)
    income[rng.random(n) < 0.1] = np.nan
    label = np.where(rng.random(n) < 0.3, 'yes', 'no')
    return pd.DataFrame({
        'pk': np.arange(n),
        'user': [f'U{i:05d}' for i in rng.integers(0, 10**5, n)],
        'email': [f'person{i}@example.com' for i in range(n)],
        'age': rng.integers(18, 90, n),
        'income': income,
        'city': rng.choice(['Lima', 'Oslo', 'Rome'], n),
        'flag': rng.random(n) < 0.5,
        'when': pd.to_datetime('2020-01-01') + pd.to_timedelta(rng.integers(0, 700, n), 'D'),
        'label': label,
    })


def make_metadata():
    return Metadata.load_from_dict({'tables': {'t': {
        'primary_key': 'pk',
        'columns': {
            'pk': {'sdtype': 'id'},
            'user': {'sdtype': 'id'},
            'email': {'sdtype': 'email', 'pii': True},
            'age': {'sdtype': 'numerical'},
            'income': {'sdtype': 'numerical'},
            'city': {'sdtype': 'categorical'},
            'flag': {'sdtype': 'boolean'},
            'when': {'sdtype': 'datetime'},
            'label': {'sdtype': 'categorical'},
        },
    }}})


@pytest.fixture
def table():
    return make_table()


@pytest.fixture
def metadata():
    return make_metadata()


@pytest.fixture(scope='session')
def spark():
    """One local Spark session for the whole run (the JVM starts once): 2 cores, task retries
    allowed (``local[2,2]``), UTC so timestamps round-trip like pandas, no UI."""
    pytest.importorskip('pyspark')
    if shutil.which('java') is None and not os.environ.get('JAVA_HOME'):
        pytest.skip('pyspark needs a Java runtime')
    from pyspark.sql import SparkSession

    # the Python workers must run this interpreter (the one with sdv_dpkme and its deps)
    os.environ['PYSPARK_PYTHON'] = sys.executable
    os.environ['PYSPARK_DRIVER_PYTHON'] = sys.executable
    session = (SparkSession.builder.master('local[2,2]').appName('sdv-dpkme-tests')
               .config('spark.ui.enabled', 'false')
               .config('spark.sql.shuffle.partitions', '2')
               .config('spark.sql.session.timeZone', 'UTC')
               .config('spark.sql.execution.arrow.pyspark.enabled', 'true')
               # one torch thread per worker: Spark parallelises over partitions
               .config('spark.executorEnv.OMP_NUM_THREADS', '1')
               .getOrCreate())
    session.sparkContext.setLogLevel('ERROR')
    yield session
    session.stop()


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks
def pytest_collection_modifyitems(config, items):
    """Tests on Spark (a JVM and a local cluster) are slow by nature: marked so here."""
    for item in items:
        if 'spark' in getattr(item, 'fixturenames', ()):
            item.add_marker(pytest.mark.slow)
