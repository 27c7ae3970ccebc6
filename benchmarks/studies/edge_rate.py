"""How often a small fit parks a numeric column at a box edge (issue 42), over many seeds.

80- and 150-row tables of the test suite's schema (``tests.conftest.make_table``: 'age' and
'income' numeric), DP-HP with the suite's fast settings (100 steps) and ``plan='auto'``, the
privacy noise fixed per seed (``fixed_noise``, test only: such fits are not private). Counts
the columns of 'age' and 'income' with > 95 % of 200 sampled values within 1 % of one bound
while < 50 % of the real ones are (``small_marginals.edge_columns``). ``--off`` sets every
objective's noise weight to 1 (the state before ``generator_training.objective_noise_weights``),
for a paired baseline.

    python -m benchmarks.studies.edge_rate --n 80 150 --epsilons 1 0.3 --seeds 20 [--off]
"""

import argparse
import os
import sys
import warnings
from pathlib import Path

os.environ.setdefault('OMP_NUM_THREADS', '1')
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's package

from benchmarks.studies.small_marginals import edge_columns  # noqa: E402


def parked(n, epsilon, seed):
    from sdv_dpkme import DPHPSynthesizer
    from sdv_dpkme.privacy.testing import fixed_noise
    from tests.conftest import BOUNDS, make_table
    from tests.synthesizers.test_contract import build

    data = make_table(n, seed=seed)
    synth = build(DPHPSynthesizer, target_column='label', plan='auto', steps=100,
                  random_state=seed, epsilon=epsilon)
    with fixed_noise(seed), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': data})
    bounds = {c: BOUNDS[c] for c in ('age', 'income')}
    return len(edge_columns(data, synth.sample(200)['t'], bounds))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--n', type=int, nargs='+', default=[80, 150])
    parser.add_argument('--epsilons', type=float, nargs='+', default=[1.0, 0.3])
    parser.add_argument('--seeds', type=int, default=20)
    parser.add_argument('--off', action='store_true', help='every noise weight 1')
    args = parser.parse_args(argv)
    import torch

    from sdv_dpkme.engines import generator_training

    torch.set_num_threads(1)
    if args.off:
        generator_training.objective_noise_weights = \
            lambda objectives, floors, pooled_weight: [1.0] * len(objectives)
    for n in args.n:
        for epsilon in args.epsilons:
            counts = [parked(n, epsilon, seed) for seed in range(args.seeds)]
            print(f'n={n} epsilon={epsilon:g} {"off" if args.off else "on"}: parked columns '
                  f'{sum(counts)} in {args.seeds} fits, per seed {counts}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
