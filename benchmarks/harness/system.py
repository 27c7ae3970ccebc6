"""Process isolation, peak memory and the machine a run happened on."""
from __future__ import annotations

import multiprocessing
import os
import platform
import resource
import subprocess
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
RESULTS = BENCH / 'results'


def vm_hwm_mb():
    """Peak resident set size of this process in MB (10^6 bytes), from ``VmHWM``.

    ``ru_maxrss`` is carried across ``execve`` on Linux, so a spawned child would report at
    least its parent's peak; ``VmHWM`` is the child's own. Falls back to ``ru_maxrss``.
    """
    try:
        with open('/proc/self/status') as handle:
            for line in handle:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        pass
    scale = 1 if sys.platform == 'darwin' else 1024  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1e6


def shutdown_loky():
    """Kill joblib's reusable loky workers (CTGAN's transformer starts them), or the worker
    process cannot exit until they idle out (300 s)."""
    try:
        from joblib.externals.loky import reusable_executor
    except ImportError:
        return
    executor = getattr(reusable_executor, '_executor', None)
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)


def run_isolated(function, *args):
    """``function(*args)`` in a freshly spawned process (peak memory and imports are its own).

    A one-worker pool raises ``BrokenProcessPool`` if the child is killed (e.g. OOM) instead
    of hanging. ``function`` must be importable (a module-level function of a study).
    """
    context = multiprocessing.get_context('spawn')
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as executor:
        return executor.submit(function, *args).result()


def attempt(function, task, keys, full_error=False):
    """One run of a study: ``function(task)`` isolated and timed, a failure recorded, not raised.

    Returns ``(row, extra)``: ``function``'s row (``error`` None) and what else it returned
    (None when it returns a row only), or on a failure the row of ``task``'s ``keys`` with its
    ``error`` (``full_error``: the whole traceback, else its last line; the traceback goes to
    stderr) and None. ``row['wall_s']`` is the run's wall time, process start included.
    """
    start = time.perf_counter()
    try:
        result = run_isolated(function, task)
    except Exception as error:  # noqa: BLE001 - record it and go on with the next run
        text = ''.join(traceback.format_exception(error)).strip()
        print(text, file=sys.stderr, flush=True)
        row = {key: task.get(key) for key in keys}
        row['error'] = text if full_error else f'{type(error).__name__}: {error}'
        extra = None
    else:
        row, extra = result if isinstance(result, tuple) else (result, None)
        row['error'] = None
    row['wall_s'] = time.perf_counter() - start
    return row, extra


def cpu_model():
    try:
        with open('/proc/cpuinfo') as handle:
            for line in handle:
                if line.lower().startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def memory_gb():
    try:
        with open('/proc/meminfo') as handle:
            for line in handle:
                if line.startswith('MemTotal:'):
                    return int(line.split()[1]) / 1024 ** 2
    except OSError:
        pass
    return None


def git_commit(short=True):
    command = ['git', 'rev-parse'] + (['--short'] if short else []) + ['HEAD']
    try:
        out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


VERSIONED = ('sdv-dpkme', 'sdv', 'ctgan', 'sdmetrics', 'torch', 'scikit-learn', 'xgboost')


def versions(names=VERSIONED):
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = 'not installed'
    return found


def machine(**extra):
    """What a report says about where it ran: date, command, commit, CPU, cores, memory,
    load and package versions."""
    import datetime as _dt

    info = {
        'date': _dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
        'command': 'python ' + ' '.join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
        'commit': git_commit(),
        'cpu': cpu_model(),
        'cores': usable_cores(),
        'memory_gb': memory_gb(),
        'load': os.getloadavg()[0] if hasattr(os, 'getloadavg') else None,
        'python': platform.python_version(),
        'versions': versions(),
    }
    info.update(extra)
    return info


def check_import(statement, cwd=ROOT, timeout=300):
    """``(ok, reason)``: does ``statement`` run in a fresh interpreter?"""
    try:
        done = subprocess.run([sys.executable, '-c', statement], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return False, f'`{statement}` timed out'
    if done.returncode == 0:
        return True, ''
    last = (done.stderr.strip().splitlines() or ['(no output)'])[-1]
    return False, f'`{statement}` fails: {last}'
