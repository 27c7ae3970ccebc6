"""Quality of a large out-of-core fit against the in-memory fit of the same rows (issue 19).

The rows: the first ``--rows`` rows of the scale benchmark's sampled Adult-schema table
(``scale.py``: a DP-HP model fitted on the bundled public Adult sample, then sampled; nothing
private). Both paths fit the same synthesizer (``adult.py``'s bundled domain, ε = 1,
``random_state``, default training steps) with the same test-only ``noise_seed``, so they draw
the same noise: the pandas path with ``synth.fit`` in memory, the Parquet path with
``fit_distributed`` out of core. Each then samples as many rows as Adult's train split and is
scored with ``adult.py``'s protocol against Adult's real test split (SDMetrics quality, TSTR
ROC-AUC / PR-AUC of its classifiers, 3- and 4-way marginal TV). Also recorded: the largest
relative difference between the two paths' released values (the releases, not the training,
are what the paths compute differently: only the order of float additions).

    python benchmarks/scale_quality.py --rows 1000000 --method dpmerf

Writes ``results/scale_quality.json`` (records appended) and ``results/scale_quality.md``.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import adult  # noqa: E402  (split and scoring of the protocol benchmark)
import scale  # noqa: E402  (the sampled tables)

RESULTS = HERE / 'results'
BASE_ROWS = 1_000_000  # scale.py's default base table


def run_one(path, method, rows, seed, noise_seed, releases_out, steps=None, classifiers=None):
    import numpy as np
    import pandas as pd
    import torch

    import sdv_dpkme
    from sdv_dpkme.privacy.mechanisms import GaussianMechanism

    folder = scale.table_dir(rows, BASE_ROWS)
    train, test, metadata, domain = adult._load_split(quick=False)
    released = []
    release = GaussianMechanism.release

    def record(self, value, **kwargs):
        noisy = release(self, value, **kwargs)
        released.append(torch.as_tensor(noisy).double().flatten().numpy().copy())
        return noisy

    GaussianMechanism.release = record
    synth = getattr(sdv_dpkme, scale.METHODS[method])(
        metadata, epsilon=1.0, delta=adult.DELTA, domain=domain, target_column=adult.TARGET,
        random_state=seed, noise_seed=noise_seed, verbose=False,
        **({} if steps is None else {'steps': steps}))
    row = dict(path=path, method=method, rows=rows, seed=seed, noise_seed=noise_seed,
               steps=synth.steps, load_start=os.getloadavg()[0])
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        start = time.perf_counter()
        if path == 'pandas':
            synth.fit({adult.TABLE: pd.read_parquet(folder)})
        else:
            sdv_dpkme.fit_distributed(synth, folder)
        row['fit_s'] = time.perf_counter() - start
        table = synth.sample(len(train))[adult.TABLE]
    row['peak_mb'] = adult._vm_hwm_mb()
    row['epsilon_spent'] = float(synth.get_privacy_report().epsilon_spent)
    np.savez(releases_out, *released)
    scores, _ = adult._scores(test, table, metadata, domain, classifiers)
    row.update(scores)
    row['load'] = os.getloadavg()[0]
    return row


def release_gap(a, b):
    """Largest |a - b| / max|a| over the releases of two fits."""
    import numpy as np

    left, right = np.load(a), np.load(b)
    assert list(left) == list(right)
    return max(float(np.abs(left[k] - right[k]).max() / max(np.abs(left[k]).max(), 1e-300))
               for k in left)


def write_report(records):
    keys = ['quality', 'column_shapes', 'column_pair_trends', 'tstr_roc_auc', 'tstr_pr_auc',
            'tv_alpha3', 'tv_alpha4']
    lines = ['# A 1M-row out-of-core fit against the in-memory fit (issue 19)', '',
             'Written by `benchmarks/scale_quality.py` (see its docstring for the protocol).', '',
             '| method | path | rows | fit s | peak MB | ' + ' | '.join(keys)
             + ' | max relative release gap | load |',
             '|---|---|---:|---:|---:|' + '---:|' * len(keys) + '---:|---:|']
    for r in records:
        gap = f"{r['release_gap']:.1e}" if r.get('release_gap') is not None else '–'
        lines.append(f"| {r['method']} | {r['path']} | {r['rows']:,} | {r['fit_s']:.0f} | "
                     f"{r['peak_mb']:.0f} | " + ' | '.join(f'{r[k]:.4f}' for k in keys)
                     + f" | {gap} | {r['load']:.1f} |")
    (RESULTS / 'scale_quality.md').write_text('\n'.join(lines) + '\n')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rows', type=int, default=1_000_000)
    parser.add_argument('--method', default='dpmerf', choices=sorted(scale.METHODS))
    parser.add_argument('--paths', default='pandas,parquet')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--noise-seed', type=int, default=5)
    parser.add_argument('--steps', type=int, help='training steps (default: the default)')
    parser.add_argument('--smoke', action='store_true',
                        help="2 classifiers (adult.py's quick set), report not written")
    parser.add_argument('--run', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_one(**json.loads(args.run))))
        return
    RESULTS.mkdir(exist_ok=True)
    store = RESULTS / 'scale_quality.json'
    records = json.loads(store.read_text()) if store.exists() else []
    scale.make_base(BASE_ROWS)
    outs = {}
    new = []
    for path in args.paths.split(','):
        outs[path] = str(scale.CACHE / f'releases_{path}_{args.method}_{args.rows}.npz')
        spec = dict(path=path, method=args.method, rows=args.rows, seed=args.seed,
                    noise_seed=args.noise_seed, releases_out=outs[path], steps=args.steps,
                    classifiers=list(adult.QUICK_CLASSIFIERS) if args.smoke else None)
        print(f'{args.method} {path} {args.rows:,} rows ...', flush=True)
        out = subprocess.run([sys.executable, __file__, '--run', json.dumps(spec)],
                             capture_output=True, text=True)
        try:
            row = json.loads(out.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            raise SystemExit(out.stderr[-3000:])
        print('  ', row, flush=True)
        new.append(row)
    first = args.paths.split(',')[0]
    for row in new:
        row['release_gap'] = (None if row['path'] == first
                              else release_gap(outs[first], outs[row['path']]))
    if args.smoke:
        return
    records += new
    store.write_text(json.dumps(records, indent=1))
    write_report(records)
    print(f"wrote {RESULTS / 'scale_quality.md'}")


if __name__ == '__main__':
    main()
