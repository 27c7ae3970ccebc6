"""Quality of a large out-of-core fit against the in-memory fit of the same rows (issue 19).

The rows: the first ``--rows`` rows of the scale study's sampled Adult-schema table
(``scale.py``: a DP-HP model fitted on the bundled public Adult sample, then sampled; nothing
private). Both paths fit the same synthesizer (the bundled Adult domain, ε = 1, ``random_state``,
default training steps) under the same test-only fixed noise seed, so they draw the same noise:
the pandas path with ``synth.fit`` in memory, the Parquet path with ``fit_distributed`` out of
core. Each then samples as many rows as Adult's train split and is scored as ``adult.py`` scores
(SDMetrics quality, TSTR ROC-AUC / PR-AUC, 3- and 4-way marginal TV) against Adult's real test
split. That the two paths release the same values (up to the order of float additions) is a test
(tests/scale/test_fit_distributed.py), not measured here.

    python benchmarks/studies/scale_quality.py --rows 1000000 --method dpmerf

Writes ``results/scale_quality.json`` (records appended) and ``results/scale_quality.md``.
"""

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402
from benchmarks.studies import scale  # noqa: E402  (the sampled tables)

BASE_ROWS = 1_000_000  # scale.py's default base table
QUICK_CLASSIFIERS = ('LogisticRegression', 'XGBClassifier')
KEYS = ['quality', 'column_shapes', 'column_pair_trends', 'tstr_roc_auc', 'tstr_pr_auc',
        'tv_alpha3', 'tv_alpha4']


def run_one(task):
    import pandas as pd

    import sdv_dpkme

    folder = scale.table_dir(task['rows'], BASE_ROWS)
    train, test, metadata, domain = harness.adult_split()
    row = dict(task, load_start=os.getloadavg()[0])
    with warnings.catch_warnings(), harness.fixed_noise(task['noise_seed']):
        warnings.simplefilter('ignore')
        synth = harness.make(getattr(sdv_dpkme, scale.METHODS[task['method']]), metadata, 1.0,
                             delta=harness.DELTA, domain=domain, target_column=harness.TARGET,
                             random_state=task['seed'], verbose=False,
                             **({} if task['steps'] is None else {'steps': task['steps']}))
        start = time.perf_counter()
        if task['path'] == 'pandas':
            synth.fit({scale.TABLE: pd.read_parquet(folder)})
        else:
            sdv_dpkme.fit_distributed(synth, folder)
        row['fit_s'] = time.perf_counter() - start
        table = synth.sample(len(train))[scale.TABLE]
    row['peak_mb'] = harness.vm_hwm_mb()
    scores, _ = harness.score(test, table, metadata, domain, task['classifiers'])
    row.update(scores)
    row['load'] = os.getloadavg()[0]
    return row


def write_report(records):
    rows = [[r['method'], r['path'], f"{r['rows']:,}", f"{r['fit_s']:.0f}", f"{r['peak_mb']:.0f}",
             *(f'{r[k]:.4f}' for k in KEYS), f"{r['load']:.1f}"] for r in records]
    table = harness.markdown_table(['method', 'path', 'rows', 'fit s', 'peak MB', *KEYS, 'load'],
                                   rows)
    harness.write_report(harness.RESULTS / 'scale_quality.md',
                         'A 1M-row out-of-core fit against the in-memory fit (issue 19)',
                         [(None, 'Written by `benchmarks/studies/scale_quality.py` (see its '
                                 'docstring for the protocol).'), (None, table)])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rows', type=int, default=1_000_000)
    parser.add_argument('--method', default='dpmerf', choices=sorted(scale.METHODS))
    parser.add_argument('--paths', default='pandas,parquet')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--noise-seed', type=int, default=5,
                        help='TEST ONLY fixed noise seed shared by the paths')
    parser.add_argument('--steps', type=int, help='training steps (default: the default)')
    parser.add_argument('--smoke', action='store_true',
                        help='2 classifiers, report not written')
    args = parser.parse_args(argv)
    store = harness.RESULTS / 'scale_quality.json'
    records = json.loads(store.read_text()) if store.exists() else []
    scale.make_base(BASE_ROWS)
    new = []
    for path in args.paths.split(','):
        task = dict(path=path, method=args.method, rows=args.rows, seed=args.seed,
                    noise_seed=args.noise_seed, steps=args.steps,
                    classifiers=list(QUICK_CLASSIFIERS) if args.smoke else None)
        print(f'{args.method} {path} {args.rows:,} rows ...', flush=True)
        row = harness.run_isolated(run_one, task)
        print('  ', row, flush=True)
        new.append(row)
    if args.smoke:
        return 0
    records += new
    store.write_text(json.dumps(records, indent=1))
    write_report(records)
    return 0


if __name__ == '__main__':
    sys.exit(main())
