"""Peers from another project: smartnoise-synth MST / AIM, run in their own venv."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .system import BENCH

SMARTNOISE_PYTHON = BENCH / '.venv-smartnoise' / 'bin' / 'python'
SMARTNOISE_RUNNER = BENCH / 'peers' / 'run_smartnoise.py'


def check_smartnoise(python=SMARTNOISE_PYTHON):
    """``(ok, reason)``: can the smartnoise venv import MST and AIM?"""
    if not Path(python).exists():
        return False, (f'smartnoise venv not found ({python}); create it with '
                       '`bash benchmarks/peers/setup_smartnoise.sh`')
    try:
        done = subprocess.run([str(python), '-c', 'import snsynth.mst, snsynth.aim'],
                              capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return False, 'importing snsynth timed out'
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ['(no output)'])[-1]
        return False, f'smartnoise venv cannot import snsynth: {last}'
    return True, ''


def run_smartnoise(method, train, domain, epsilon, delta, seed, row, python=SMARTNOISE_PYTHON,
                   timeout=3600, options=(), bin_edges=None, one_thread=False,
                   neighbours='add-remove'):
    """Fit ``method`` ('mst' or 'aim') on ``train`` with the public ``domain`` in a subprocess of
    the smartnoise venv; sample as many rows. Records the subprocess' own timings, peak memory
    and ε in ``row``; returns ``(table, info)``. ``bin_edges``: public edges for the numeric
    columns the Adult table does not have; ``options``: extra runner flags; ``neighbours``: the
    relation (epsilon, delta) hold under ('replace-one' is DP-HP's; the runner's docstring)."""
    import pandas as pd

    with tempfile.TemporaryDirectory(prefix='smartnoise_') as folder:
        folder = Path(folder)
        train.to_csv(folder / 'train.csv', index=False)
        public = dict(domain, bin_edges=bin_edges) if bin_edges else domain
        (folder / 'domain.json').write_text(json.dumps(public), encoding='utf-8')
        command = [
            str(python), str(SMARTNOISE_RUNNER), '--method', method,
            '--epsilon', repr(float(epsilon)), '--delta', repr(delta),
            '--train', str(folder / 'train.csv'), '--domain', str(folder / 'domain.json'),
            '--rows', str(len(train)), '--seed', str(int(seed)),
            '--out', str(folder / 'synthetic.csv'), '--info', str(folder / 'info.json'),
            '--neighbours', neighbours, *options,
        ]
        env = dict(os.environ)
        env.pop('PYTHONPATH', None)
        env.setdefault('JAX_PLATFORMS', 'cpu')
        if one_thread:
            env['XLA_FLAGS'] = ('--xla_cpu_multi_thread_eigen=false '
                                'intra_op_parallelism_threads=1')
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
        row['subprocess_s'] = time.perf_counter() - start
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-25:]
            raise RuntimeError(f'run_smartnoise.py exit {done.returncode}:\n' + '\n'.join(tail))
        info = json.loads((folder / 'info.json').read_text(encoding='utf-8'))
        table = pd.read_csv(folder / 'synthetic.csv', keep_default_na=False, na_values=[])
    # RUSAGE_CHILDREN may include this worker's RSS at fork; the runner's own VmHWM is peak_mb
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    row['peak_rusage_children_mb'] = children * (1 if sys.platform == 'darwin' else 1024) / 1e6
    for key in ('fit_s', 'sample_s', 'peak_mb', 'epsilon_spent', 'preprocessor_epsilon'):
        row[key] = info[key]
    row['neighbours'] = info.get('neighbours', 'add-remove')
    row['mechanism_epsilon'] = info.get('mechanism_epsilon', info['epsilon'])
    row['smartnoise_versions'] = json.dumps(info.get('versions', {}))
    row['smartnoise_warnings'] = [line for line in (done.stderr or '').splitlines()
                                  if 'Warning' in line][:20]
    return table, info
