"""Scale-out benchmark (issue 19): the one-pass fit on pandas, Parquet out-of-core, Dask and Spark.

Data: Adult's schema (15 columns, the public domain ``adult_domain.json``). A DP-HP model is
fitted on the bundled 3,000-row public Adult sample and sampled: ``--base-rows`` rows (default
1M, four ``sample(250_000)`` calls) are written once as Parquet files with 65,536-row row
groups, under ``$SDV_DPKME_SCALE_CACHE`` (default ``cache/scale``; put it outside the repo, e.g.
under /tmp). A table of N rows is a directory of N / base-rows symbolic links to those files, so
the 10M and 50M tables hold the same sampled rows repeated (throughput and memory do not depend
on which rows they are; repeated files are read from the page cache, so disk bandwidth is not
measured).

Every run (path x method x size) is a fresh process: peak memory is that run's alone. Measured:
- the embedding pass (``engines.kme.one_pass``, reading + encoding + feature sums + reduce) and
  its rows per second; the training (``--steps`` steps: it does not depend on n, so the default
  500 steps take 500 / steps times as long); the rest of the fit (processor, releases);
- peak RSS of the driver (VmHWM) and, for Spark, the peak summed RSS of the JVM and its Python
  workers (polled every 0.2 s);
- torch threads: ``--torch-threads`` (default 1) sets OMP_NUM_THREADS for every run, so each
  engine parallelises over partitions its own way (Dask: 2 threads, Spark: 2 worker processes)
  and Parquet / pandas run the pass on one core. With torch's default (2 OpenMP threads per op)
  the small feature chunks of the pass (80 rows then, 320 now, with Adult's 49,422 pairwise
  features) ran about 10x slower on this shared, loaded machine (a 20,000-row Parquet pass:
  14.9 s against 1.4 s);
- the physical limit of the pass: the matmul FLOPs per row of every feature map (counted by the
  torch profiler on 2,048 encoded rows at issue 19; stored in ``results/scale.json`` as
  ``profiles`` and read from there) against the rate of a dense float64 matmul measured on the
  same cores. Each run's share of the limit uses the cores its path runs on.
- the stages of a fit are timed by ``harness.stage_times`` (cProfile, by function name, in the
  calling thread): a stage that runs in other threads shows as 0 s.

    python benchmarks/studies/scale.py --sizes 1000000,10000000 --paths parquet,dask,spark,pandas
    python benchmarks/studies/scale.py --sizes 100000 --methods dpmerf --steps 10   # quick look

Writes ``results/scale.md`` and ``results/scale.json`` (one record per run, appended).
``--note-file`` puts a Markdown text under the title; ``--before OTHER.json`` adds a before/after
table of the pass (the runs of an earlier commit, e.g. ``results/scale_before.json``).

    python benchmarks/studies/scale.py --report-only --note-file benchmarks/results/scale_note.md \
        --before benchmarks/results/scale_before.json
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402

HERE = harness.BENCH
#: where the sampled tables go (big: put it outside the repo, e.g. SDV_DPKME_SCALE_CACHE=/tmp/...)
CACHE = Path(os.environ.get('SDV_DPKME_SCALE_CACHE', HERE / 'cache' / 'scale'))
RESULTS = harness.RESULTS
TABLE = 'adult'
TARGET = 'income'
METHODS = {'dphp': 'DPHPSynthesizer', 'dpmerf': 'DPMERFSynthesizer'}


# ------------------------------------------------------------------------------------ data
def make_base(rows, seed=0):
    """Sample ``rows`` Adult-schema rows from a model fitted on the public bundled sample."""
    base = CACHE / 'base'
    done = base / f'_done_{rows}'
    if done.exists():
        return base
    from sdv_dpkme import DPHPSynthesizer
    from sdv_dpkme.datasets import load_adult_sample

    base.mkdir(parents=True, exist_ok=True)
    for old in base.glob('*.parquet'):
        old.unlink()
    data, metadata, domain = load_adult_sample()
    synth = harness.make(DPHPSynthesizer, metadata, 1.0, domain=domain, target_column=TARGET,
                         random_state=seed, steps=100, verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({TABLE: data})
    per_file = 250_000
    for i, start in enumerate(range(0, rows, per_file)):
        part = synth.sample(min(per_file, rows - start))[TABLE]
        part.to_parquet(base / f'part-{i:03d}.parquet', row_group_size=65_536, index=False)
        print(f'  sampled {start + len(part):,} / {rows:,} rows', flush=True)
    done.touch()
    return base


def table_dir(size, base_rows):
    """A directory of links to the base files that holds ``size`` rows."""
    if size % base_rows and size > base_rows:
        raise SystemExit(f'--sizes must be multiples of --base-rows ({base_rows:,}) above it')
    folder = CACHE / f'rows_{size}'
    if folder.exists():
        return folder
    folder.mkdir(parents=True)
    files = sorted((CACHE / 'base').glob('*.parquet'))
    if size < base_rows:  # a prefix of the first base file
        import pyarrow.parquet as pq

        table = pq.read_table(files[0]).slice(0, size)
        pq.write_table(table, folder / 'part-000.parquet', row_group_size=65_536)
        return folder
    for copy in range(size // base_rows):
        for f in files:
            (folder / f'copy{copy:03d}-{f.name}').symlink_to(f.resolve())
    return folder


# ------------------------------------------------------------------------------ one run
def _status_kb(pid, field):
    try:
        for line in Path(f'/proc/{pid}/status').read_text().splitlines():
            if line.startswith(field + ':'):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return 0
    return 0


def _descendants(pid):
    children = []
    try:
        for task in Path(f'/proc/{pid}/task').iterdir():
            text = (task / 'children').read_text().split()
            children += [int(c) for c in text]
    except (FileNotFoundError, PermissionError):
        return []
    out = list(children)
    for child in children:
        out += _descendants(child)
    return out


class WorkerPeak:
    """Peak of the summed RSS of this process's descendants (Spark's JVM and Python workers)."""

    def __init__(self):
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        me = os.getpid()
        while not self._stop.wait(0.2):
            total = sum(_status_kb(p, 'VmRSS') for p in _descendants(me))
            self.peak_kb = max(self.peak_kb, total)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


#: the fit's stages, by where the package defines them (harness.stage_times: no patching)
STAGES = {'pass': ('sdv_dpkme/engines/', 'one_pass'), 'train': ('sdv_dpkme/engines/kme', 'train')}


def run_one(path, method, size, base_rows, steps, spark_partitions):
    import torch

    import sdv_dpkme
    from sdv_dpkme.datasets import load_adult_sample

    folder = table_dir(size, base_rows)
    _, metadata, domain = load_adult_sample()
    synth = harness.make(getattr(sdv_dpkme, METHODS[method]), metadata, 1.0, domain=domain,
                         target_column=TARGET, random_state=0, steps=steps, verbose=False)
    spark = None
    code = subprocess.run(['git', '-C', str(HERE), 'rev-parse', '--short', 'HEAD'],
                          capture_output=True, text=True).stdout.strip()
    record = dict(path=path, method=method, rows=size, steps=steps,
                  torch_threads=torch.get_num_threads(), code=code,
                  load_start=os.getloadavg()[0])
    with WorkerPeak() as workers, warnings.catch_warnings():
        warnings.simplefilter('ignore')
        start = time.perf_counter()
        if path == 'pandas':
            import pandas as pd

            data = pd.read_parquet(folder)
            record['load_s'] = time.perf_counter() - start
            start = time.perf_counter()
            _, timing = harness.stage_times(lambda: synth.fit({TABLE: data}), STAGES)
        elif path == 'parquet':
            _, timing = harness.stage_times(lambda: sdv_dpkme.fit_distributed(synth, folder),
                                            STAGES)
        elif path == 'dask':
            import dask.dataframe as dd

            frame = dd.read_parquet(str(folder))
            _, timing = harness.stage_times(lambda: sdv_dpkme.fit_distributed(synth, frame),
                                            STAGES)
        elif path == 'spark':
            os.environ['PYSPARK_PYTHON'] = sys.executable
            from pyspark.sql import SparkSession

            spark = (SparkSession.builder.master('local[2]').appName('sdv-dpkme-scale')
                     .config('spark.ui.enabled', 'false')
                     .config('spark.sql.shuffle.partitions', '2')
                     .config('spark.sql.session.timeZone', 'UTC')
                     .config('spark.driver.memory', '2g')
                     .config('spark.sql.files.maxPartitionBytes', str(spark_partitions))
                     .getOrCreate())
            record['spark_start_s'] = time.perf_counter() - start
            start = time.perf_counter()
            frame = spark.read.parquet(str(folder))
            _, timing = harness.stage_times(lambda: sdv_dpkme.fit_distributed(synth, frame),
                                            STAGES)
        record['fit_s'] = time.perf_counter() - start
    if spark is not None:
        spark.stop()
    record.update(pass_s=timing['pass'], train_s=timing['train'])
    record['other_s'] = record['fit_s'] - record['pass_s'] - record['train_s']
    record['pass_rows_per_s'] = size / record['pass_s'] if record['pass_s'] else None
    record['driver_peak_mb'] = _status_kb(os.getpid(), 'VmHWM') / 1024
    record['workers_peak_mb'] = workers.peak_kb / 1024 if path == 'spark' else None
    record['epsilon_spent'] = synth.get_privacy_report().epsilon_spent
    record['load'] = os.getloadavg()[0]
    return record


# ----------------------------------------------------------------------- physical limit
def gemm_rate(size=2048, repeats=5, threads=None):
    import torch

    if threads:
        torch.set_num_threads(threads)
    a = torch.randn(size, size, dtype=torch.float64)
    b = torch.randn(size, size, dtype=torch.float64)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * size**3 / best


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# ------------------------------------------------------------------------------ report
#: cores each path's pass runs on (Parquet and pandas: one reader, one torch thread)
PASS_CORES = {'parquet': 1, 'pandas': 1, 'dask': 2, 'spark': 2}


def _limit(record, profiles, rate, rate_1):
    """Rows/s of the pass if it ran at the matmul rate of the cores its path uses."""
    flops = {p['method']: sum(m['flops_per_row'] for m in p['maps']) for p in profiles}
    if record['method'] not in flops:
        return None
    cores_rate = (rate_1 or rate) if PASS_CORES.get(record['path'], 2) == 1 else rate
    return cores_rate / flops[record['method']]


def write_report(records, profiles, rate, note, rate_1=None, before=None):
    lines = ['# Scale-out: one-pass fits on pandas, Parquet, Dask and Spark (issue 19)', '',
             'Written by `benchmarks/studies/scale.py` (see its docstring for the protocol). '
             f'Machine: {os.cpu_count()} cores shared with other jobs; the load average at '
             'the start and the end of each run is in the table: timings on a loaded machine '
             'are slower and noisier than on an idle one.', '', note, '']
    lines += ['## Fits', '',
              'Share of the limit: the pass\'s rows/s against the matmul-bound rows/s on the '
              'cores the path uses (one for Parquet and pandas, two for Dask and Spark); see '
              '"Physical limit of the pass".', '',
              '| method | path | rows | embedding pass s | rows/s (pass) | share of the limit | '
              'training s (steps) | other s | driver peak MB | workers peak MB | load start / end '
              '| code |',
              '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|']
    for r in records:
        if 'error' in r:
            lines.append(f"| {r['method']} | {r['path']} | {r['rows']:,} | failed: "
                         f"{r['error'][:120]} | | | | | | | | |")
            continue
        workers = f"{r['workers_peak_mb']:.0f}" if r.get('workers_peak_mb') else '–'
        limit = _limit(r, profiles, rate, rate_1)
        share = f"{r['pass_rows_per_s'] / limit:.0%}" if limit and r['pass_rows_per_s'] else '–'
        load = _loads(r)
        lines.append(
            f"| {r['method']} | {r['path']} | {r['rows']:,} | {r['pass_s']:.1f} | "
            f"{r['pass_rows_per_s']:,.0f} | {share} | {r['train_s']:.1f} ({r['steps']}) | "
            f"{r['other_s']:.1f} | {r['driver_peak_mb']:.0f} | {workers} | {load} | "
            f"{r.get('code', '')} |")
    lines += _flatness(records)
    if before:
        lines += _before_after(before, records)
    lines += ['', '## Physical limit of the pass', '',
              f'Dense float64 matmul on this machine: {rate / 1e9:.1f} GFLOP/s on its '
              f'{os.cpu_count()} cores'
              + (f', {rate_1 / 1e9:.1f} GFLOP/s on one' if rate_1 else '')
              + ' (2048 x 2048, torch; the pass runs in float64). The physical limit below is '
              'for all cores; the feature maps are timed on one thread, in the chunks the '
              'distributed pass uses, and compared with the one-core limit.', '']
    for p in profiles:
        total_flops = sum(m['flops_per_row'] for m in p['maps'])
        total_us = sum(m['us_per_row'] for m in p['maps'])
        limit = rate / total_flops if total_flops else float('inf')
        lines += [f"### {p['method']} (defaults; {p['encoded_width']} encoded columns, "
                  f"{p['classes']} classes)", '',
                  '| release | feature map | features | matmul kFLOP/row | measured µs/row | '
                  'share of the feature time | matmul-bound µs/row |',
                  '|---|---|---:|---:|---:|---:|---:|']
        for m in p['maps']:
            lines.append(
                f"| {m['group']} | {m['kind']} | {m['dim']:,} | {m['flops_per_row'] / 1e3:.1f} | "
                f"{m['us_per_row']:.1f} | {m['us_per_row'] / total_us:.0%} | "
                f"{m['flops_per_row'] / rate * 1e6:.2f} |")
        shares = [(r['pass_rows_per_s'] / _limit(r, profiles, rate, rate_1), r) for r in records
                  if r.get('method') == p['method'] and r.get('pass_rows_per_s')]
        best = max(shares, key=lambda s: s[0]) if shares else None
        limit_1 = (rate_1 or rate) / total_flops if total_flops else float('inf')
        lines += ['', f'Matmul FLOPs per row: {total_flops / 1e3:.0f} k, so the physical limit is '
                  f'{limit:,.0f} rows/s ({limit_1:,.0f} on one core); the feature maps alone '
                  f'(one thread, no reading or encoding) run at {1e6 / total_us:,.0f} rows/s '
                  f'({1e6 / total_us / limit_1:.1%} of the one-core limit).'
                  + (f" Best measured pass: {best[1]['pass_rows_per_s']:,.0f} rows/s "
                     f"({best[1]['path']}, {best[1]['rows']:,} rows), {best[0]:.1%} of the limit "
                     'of its cores.' if best else ''), '']
    (RESULTS / 'scale.md').write_text('\n'.join(lines) + '\n')


def _flatness(records):
    """Peak memory per path and method against its 1M-row figure (bar: 50M within 1.2x)."""
    ok = [r for r in records if 'error' not in r]
    lines = ['', '## Memory flatness', '',
             'Peak memory (driver + workers, MB) at each size, and its ratio to the 1M-row '
             'figure of the same path and method (bar: 50M rows within 1.2x).', '',
             '| method | path | 1M | 10M | 50M | 10M / 1M | 50M / 1M |',
             '|---|---|---:|---:|---:|---:|---:|']
    seen = []
    for r in ok:
        if (r['method'], r['path']) not in seen:
            seen.append((r['method'], r['path']))
    for method, path in seen:
        peak = {r['rows']: r['driver_peak_mb'] + (r.get('workers_peak_mb') or 0)
                for r in ok if (r['method'], r['path']) == (method, path)}
        cell = [f'{peak[n]:,.0f}' if n in peak else '–'
                for n in (1_000_000, 10_000_000, 50_000_000)]
        ratio = [f'{peak[n] / peak[1_000_000]:.2f}x' if n in peak and 1_000_000 in peak else '–'
                 for n in (10_000_000, 50_000_000)]
        lines.append(f"| {method} | {path} | {' | '.join(cell)} | {' | '.join(ratio)} |")
    return lines


def _loads(record):
    return (f"{record['load_start']:.1f} / " if 'load_start' in record else '') + \
        f"{record['load']:.1f}"


def _before_after(before, records):
    """The pass's rows/s before this branch's speed-ups and after, same rows and path."""
    lines = ['', '## The pass before and after the speed-ups', '',
             '"Before": the code at the base of this branch (e1cdd4d), run by its own copy of this '
             'script on the '
             'same data; "after": the runs above. Loads differ between runs (start / end; the '
             'before runs recorded the end only).', '',
             '| method | path | rows | before rows/s | load | after rows/s | load | speed-up |',
             '|---|---|---:|---:|---:|---:|---:|---:|']
    for b in before:
        if 'error' in b:
            continue
        after = [r for r in records if 'error' not in r
                 and (r['method'], r['path'], r['rows']) == (b['method'], b['path'], b['rows'])]
        if not after:
            continue
        a = after[-1]
        lines.append(
            f"| {b['method']} | {b['path']} | {b['rows']:,} | {b['pass_rows_per_s']:,.0f} | "
            f"{_loads(b)} | {a['pass_rows_per_s']:,.0f} | {_loads(a)} | "
            f"{a['pass_rows_per_s'] / b['pass_rows_per_s']:.2f}x |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', default='1000000,10000000')
    parser.add_argument('--paths', default='parquet,dask,spark,pandas')
    parser.add_argument('--methods', default='dpmerf,dphp')
    parser.add_argument('--base-rows', type=int, default=1_000_000)
    parser.add_argument('--steps', type=int, default=20)
    parser.add_argument('--spark-partition-bytes', type=int, default=8 << 20)
    parser.add_argument('--pandas-max-rows', type=int, default=1_000_000,
                        help='in-memory fits above this size are not run')
    parser.add_argument('--timeout', type=int, default=1200, help='seconds per run')
    parser.add_argument('--torch-threads', type=int, default=1,
                        help='OMP_NUM_THREADS of every run (driver and Spark workers); 0 = unset')
    parser.add_argument('--note', default='')
    parser.add_argument('--note-file', help='a Markdown file whose text goes under the title')
    parser.add_argument('--report-only', action='store_true',
                        help='rewrite results/scale.md from results/scale.json, run nothing')
    parser.add_argument('--fresh', action='store_true', help='forget earlier records')
    parser.add_argument('--before', help="another scale.json (an earlier commit's runs) for a "
                                         'before/after table of the pass')
    parser.add_argument('--run', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:  # child process: one run, its record as JSON on the last line
        spec = json.loads(args.run)
        print(json.dumps(run_one(**spec)))
        return
    RESULTS.mkdir(exist_ok=True)
    store = RESULTS / 'scale.json'
    saved = {} if args.fresh or not store.exists() else json.loads(store.read_text())
    records = saved.get('records', [])
    note = Path(args.note_file).read_text() if args.note_file else args.note
    before = json.loads(Path(args.before).read_text())['records'] if args.before else None
    if args.report_only:
        write_report(records, saved.get('profiles', []), saved['gemm_flops'], note,
                     saved.get('gemm_flops_1'), before)
        return
    print('sampling the base table ...', flush=True)
    make_base(args.base_rows)
    for size in map(int, args.sizes.split(',')):
        for method in args.methods.split(','):
            for path in args.paths.split(','):
                if path == 'pandas' and size > args.pandas_max_rows:
                    continue
                spec = dict(path=path, method=method, size=size, base_rows=args.base_rows,
                            steps=args.steps, spark_partitions=args.spark_partition_bytes)
                print(f'{method} {path} {size:,} rows ...', flush=True)
                try:
                    env = dict(os.environ)
                    if args.torch_threads:
                        env['OMP_NUM_THREADS'] = str(args.torch_threads)
                    out = subprocess.run([sys.executable, __file__, '--run', json.dumps(spec)],
                                         capture_output=True, text=True, timeout=args.timeout,
                                         env=env)
                    record = json.loads(out.stdout.strip().splitlines()[-1])
                except subprocess.TimeoutExpired:
                    record = dict(path=path, method=method, rows=size,
                                  error=f'over the {args.timeout} s limit')
                except (json.JSONDecodeError, IndexError):
                    record = dict(path=path, method=method, rows=size,
                                  error=(out.stderr.strip().splitlines() or ['?'])[-1])
                print('  ', record, flush=True)
                records = [r for r in records if (r['path'], r['method'], r['rows'])
                           != (path, method, size)] + [record]
                saved['records'] = records
                store.write_text(json.dumps(saved, indent=1))
    if 'gemm_flops' not in saved or args.fresh:
        saved['gemm_flops_1'] = gemm_rate(threads=1)
        saved['gemm_flops'] = gemm_rate(threads=os.cpu_count())
        store.write_text(json.dumps(saved, indent=1))
    write_report(records, saved.get('profiles', []), saved['gemm_flops'], note,
                 saved.get('gemm_flops_1'), before)
    print(f"wrote {RESULTS / 'scale.md'}")


if __name__ == '__main__':
    main()
