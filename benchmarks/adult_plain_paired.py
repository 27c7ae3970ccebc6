"""Paired arms of DP-HP on Adult's plain declaration, with the same privacy noise in every arm.

The plain declaration of ``adult.py --domain plain --target`` (known_min_max_values,
known_categories, target_column='income'; everything else default) at epsilon 1, scored exactly
as ``adult.py`` scores (SDMetrics quality against the real test split, TSTR with the 12
classifiers, 3-way TV). Each arm adds constructor arguments (``ARMS``); within a seed every arm
uses ``random_state=seed`` and ``noise_seed=1000 + seed``, so two arms differ by their arguments
only, not by their noise draw (``adult.py`` draws fresh noise in every fit).

Every (arm, seed) runs in its own process (torch and BLAS on one thread, so two can share the
2-core machine). Rows are appended to ``--out`` (JSON lines, with each classifier's ROC-AUC);
``--report`` writes the paired markdown table of the arms against ``previous``.

    python benchmarks/adult_plain_paired.py --arms previous,defaults --seeds 0,1,2 \
        --out benchmarks/results/adult_plain/paired/runs.jsonl --jobs 2
    python benchmarks/adult_plain_paired.py --report benchmarks/results/adult_plain/paired/runs.jsonl
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from holdout_plain import PREVIOUS_DPHP_TRAINING  # noqa: E402

#: constructor arguments of each arm on top of the plain declaration with a target
ARMS = {
    'previous': dict(PREVIOUS_DPHP_TRAINING),
    'pair4': {**PREVIOUS_DPHP_TRAINING, 'pair_weight': 4.0},
    'pair4-cosine': {**PREVIOUS_DPHP_TRAINING, 'pair_weight': 4.0,
                     'learning_rate_schedule': 'cosine'},
    'pair4-cosine-800': {**PREVIOUS_DPHP_TRAINING, 'pair_weight': 4.0,
                         'learning_rate_schedule': 'cosine', 'steps': 800},
    'defaults': {},  # the current defaults
}
KEYS = ('quality', 'column_shapes', 'column_pair_trends', 'tstr_roc_auc', 'tstr_pr_auc',
        'tv_alpha3', 'fit_s')


def run_one(arm, seed, epsilon):
    """Fit, sample and score one (arm, seed); returns the row."""
    import torch

    import adult
    import sdv_dpkme

    torch.set_num_threads(1)
    train, test, metadata, domain = adult._load_split(False)
    kwargs = dict(ARMS[arm], **adult._declaration(domain, 'plain', target=True))
    synth = sdv_dpkme.DPHPSynthesizer(metadata, epsilon=epsilon, delta=adult.DELTA,
                                      random_state=seed, noise_seed=1000 + seed, verbose=False,
                                      **kwargs)
    row = {'arm': arm, 'seed': seed, 'epsilon': epsilon, 'kwargs': ARMS[arm]}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        table = adult._timed_fit_sample(synth, train, row)
    scores, per_classifier = adult._scores(test, table, metadata, domain, None)
    row.update(scores)
    row['roc_by_classifier'] = {r['classifier']: r['roc_auc'] for r in per_classifier}
    return row


def _spawn(arm, seed, epsilon, out):
    env = dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1')
    started = time.perf_counter()
    result = subprocess.run([sys.executable, __file__, '--one', arm, str(seed), str(epsilon)],
                            env=env, capture_output=True, text=True)
    if result.returncode != 0:
        print(f'{arm} seed {seed} failed:\n{result.stderr[-2000:]}', flush=True)
        return
    row = json.loads(result.stdout.strip().splitlines()[-1])
    with open(out, 'a') as handle:
        handle.write(json.dumps(row) + '\n')
    print(f'{arm} seed {seed}: quality {row["quality"]:.4f}, ROC {row["tstr_roc_auc"]:.4f}, '
          f'TV3 {row["tv_alpha3"]:.4f} ({time.perf_counter() - started:.0f} s)', flush=True)


def report(path):
    """Markdown: mean of each arm and its paired difference against 'previous' by seed."""
    rows = [json.loads(line) for line in open(path) if line.strip()]
    by = {(r['arm'], r['seed']): r for r in rows}
    arms = [a for a in ARMS if any(k[0] == a for k in by)]
    lines = ['| arm | seeds | ' + ' | '.join(KEYS) + ' | paired quality vs previous |',
             '|---|---|' + '---|' * (len(KEYS) + 1)]
    for arm in arms:
        seeds = sorted(s for a, s in by if a == arm)
        means = [sum(by[arm, s][k] for s in seeds) / len(seeds) for k in KEYS]
        paired = [by[arm, s]['quality'] - by['previous', s]['quality'] for s in seeds
                  if ('previous', s) in by]
        diff = (f'{sum(paired) / len(paired):+.4f} ({sum(d > 0 for d in paired)}/{len(paired)} '
                'better)') if paired and arm != 'previous' else ''
        lines.append(f'| {arm} | {len(seeds)} | '
                     + ' | '.join(f'{m:.1f}' if k == 'fit_s' else f'{m:.4f}'
                                  for k, m in zip(KEYS, means)) + f' | {diff} |')
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--arms', default='previous,defaults',
                        help=f'comma-separated, of {list(ARMS)}')
    parser.add_argument('--seeds', default='0,1,2')
    parser.add_argument('--epsilon', type=float, default=1.0)
    parser.add_argument('--out', help='JSON lines, appended after every run')
    parser.add_argument('--jobs', type=int, default=1, help='runs at once')
    parser.add_argument('--report', help='print the paired table of this JSON-lines file')
    parser.add_argument('--one', nargs=3, help=argparse.SUPPRESS)  # arm seed epsilon (a child)
    args = parser.parse_args(argv)
    if args.one:
        arm, seed, epsilon = args.one
        print(json.dumps(run_one(arm, int(seed), float(epsilon))))
        return 0
    if args.report:
        print(report(args.report))
        return 0
    if not args.out:
        parser.error('--out is required to run arms')
    arms = args.arms.split(',')
    unknown = set(arms) - set(ARMS)
    if unknown:
        parser.error(f'unknown arms {sorted(unknown)}; choose from {list(ARMS)}')
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if Path(args.out).exists():
        done = {(r['arm'], r['seed'], r['epsilon'])
                for r in map(json.loads, filter(str.strip, open(args.out)))}
    tasks = [(arm, int(seed), args.epsilon) for seed in args.seeds.split(',') for arm in arms
             if (arm, int(seed), args.epsilon) not in done]
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(lambda t: _spawn(*t, args.out), tasks))
    print(report(args.out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
