"""``edge_snap`` on and off from ONE fit (issue 42), on the tuning tables: Adult and Census (the
plain declaration with the target: the user path), and ``adult_sample``: ``--n`` rows of the
bundled Adult sample (its bundled domain, target 'income', as ``small_marginals``), where
``--float-amounts`` makes the capital amounts floats with most rows at 0
(``small_marginals.float_amounts``).

The snap is post-processing at sampling time and draws no random numbers, so each fit (fixed
privacy noise ``--noise-seed + seed``, test only; random_state ``seed``) is sampled twice from
the same sampling state, once per arm: the two samples differ only where a value was snapped.
Scored against the test split (SDMetrics quality, shapes, pair trends; TSTR with two fast
classifiers). Rows go to a CSV.

    python benchmarks/studies/edge_snap.py --table adult --seeds 0,1 --out /tmp/edge_snap.csv
    python benchmarks/studies/edge_snap.py --table adult_sample --n 215 --epsilon 0.3 \
        --float-amounts --seeds 0,1,2 --out /tmp/edge_snap.csv
"""

import argparse
import os
import sys
import warnings
from pathlib import Path

for _name in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_name, '1')

import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's package
from benchmarks import harness  # noqa: E402

ARMS = {'snap 0.01': 0.01, 'off': 0.0}
CLASSIFIERS = ('LogisticRegression', 'GaussianNB')


def split(table, n, amounts):
    """(train, test, metadata, domain, flat declaration, table name)."""
    if table != 'adult_sample':
        train, test, metadata, domain = (harness.adult_split if table == 'adult'
                                         else harness.census_split)()
        return train, test, metadata, domain, harness.declaration(domain, 'plain', True), table
    from benchmarks.studies.small_marginals import adult_sample_split

    train, test, metadata, domain = adult_sample_split(n, amounts)
    return train, test, metadata, domain, dict(domain=domain, target_column='income'), 'adult'


def run(table, seed, noise_seed, threads, epsilon=1.0, n=None, amounts=False):
    import torch

    from sdv_dpkme import DPHPSynthesizer

    torch.set_num_threads(threads)
    train, test, metadata, domain, declared, name = split(table, n, amounts)
    synth = harness.make(DPHPSynthesizer, metadata, epsilon, delta=harness.DELTA,
                         random_state=seed, verbose=False, **declared)
    with warnings.catch_warnings(), harness.fixed_noise(noise_seed + seed):
        warnings.simplefilter('ignore')
        synth.fit({name: train})
    rows = []
    for arm, snap in ARMS.items():
        synth._model.generator.edge_snap = snap
        synth.reset_sampling()
        out = synth.sample(len(test))[name]
        row, _ = harness.score(test, out, metadata, domain, classifiers=CLASSIFIERS, alphas=())
        rows.append({'table': table, 'rows': len(train), 'epsilon': epsilon,
                     'float_amounts': amounts, 'seed': seed, 'noise_seed': noise_seed + seed,
                     'arm': arm,
                     **{k: row[k] for k in ('quality', 'column_shapes', 'column_pair_trends',
                                            'tstr_roc_auc', 'tstr_pr_auc')}})
        print(rows[-1], flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--table', choices=('adult', 'census', 'adult_sample'), default='adult')
    parser.add_argument('--n', type=int, default=215, help='adult_sample: training rows')
    parser.add_argument('--epsilon', type=float, default=1.0)
    parser.add_argument('--float-amounts', action='store_true')
    parser.add_argument('--seeds', default='0,1')
    parser.add_argument('--noise-seed', type=int, default=300)
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--out', default='/tmp/edge_snap.csv')
    args = parser.parse_args(argv)
    rows = pd.read_csv(args.out).to_dict('records') if os.path.exists(args.out) else []
    for seed in harness.parse_ints(args.seeds):
        rows += run(args.table, seed, args.noise_seed, args.threads, args.epsilon, args.n,
                    args.float_amounts)
        pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == '__main__':
    sys.exit(main())
