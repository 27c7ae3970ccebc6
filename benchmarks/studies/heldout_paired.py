"""Paired arms of DP-HP on the held-out tables (issue 42): a diagnosis, not the suite.

The held-out suite (``heldout.py``) runs each cell once with secret noise, so two code versions
are compared unpaired there. This runs DP-HP arms (flat settings, ``harness.make``) on the
suite's fixed split and declaration with the privacy noise fixed per seed (``fixed_noise``,
test only: such fits are not private), so that the arms of a seed differ only by their
settings, and scores them as the suite does (``heldout._score``). Nothing here chooses a
default: the protocol tunes on Adult and Census only.

    python -m benchmarks.studies.heldout_paired --tables student_placements,breast_cancer \\
        --epsilon 1 --seeds 0,1,2,3,4,5 --arm 'off={"one_way": false}' --arm 'default={}' \\
        --out /tmp/heldout_paired.csv
"""

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

for _name in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_name, '1')

import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's package
from benchmarks import harness  # noqa: E402
from benchmarks.studies import heldout  # noqa: E402


def run_one(table, epsilon, seed, label, settings):
    import torch

    from sdv_dpkme import DPHPSynthesizer

    torch.set_num_threads(1)
    train, test, metadata, declared, target = heldout.split(table)
    synth = harness.make(DPHPSynthesizer, metadata, epsilon, delta=heldout.DELTA,
                         random_state=seed, verbose=False, **declared, **settings)
    row = {}
    with warnings.catch_warnings(), harness.fixed_noise(seed):
        warnings.simplefilter('ignore')
        start = time.perf_counter()
        out = harness.fit_sample(synth, train, row, metadata._get_single_table_name())
        fit_s = time.perf_counter() - start
    scores = heldout._score(train, test, out, metadata, declared, target)
    plan = synth.get_privacy_report().plan
    return dict(table=table, epsilon=epsilon, seed=seed, arm=label, fit_s=round(fit_s, 2),
                **{k: scores[k] for k in ('quality', 'column_shapes', 'column_pair_trends',
                                          'tstr_a', 'tstr_b', 'worst_shapes')},
                plan=' '.join(f"{p['group']}:{p['decision']}" for p in plan))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--tables', default='student_placements,breast_cancer')
    parser.add_argument('--epsilon', type=float, default=1.0)
    parser.add_argument('--seeds', default='0,1,2')
    parser.add_argument('--arm', action='append', required=True,
                        help='label=JSON of flat DP-HP settings (repeat)')
    parser.add_argument('--out', default='/tmp/heldout_paired.csv')
    args = parser.parse_args(argv)
    arms = [(a.split('=', 1)[0], json.loads(a.split('=', 1)[1])) for a in args.arm]
    rows = []
    for table in args.tables.split(','):
        for seed in harness.parse_ints(args.seeds):
            for label, settings in arms:
                rows.append(run_one(table, args.epsilon, seed, label, settings))
                print({k: (round(v, 4) if isinstance(v, float) else v)
                       for k, v in rows[-1].items() if k != 'plan'}, flush=True)
                pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == '__main__':
    sys.exit(main())
