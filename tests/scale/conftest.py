import os
import shutil
import sys

import pytest


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


@pytest.fixture(autouse=True)
def one_torch_thread():
    """The fits here run tiny chunks, which OpenMP threads only slow down on a busy machine
    (10x measured; see docs/scale.md). Restored after each test."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
