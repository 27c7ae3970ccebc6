"""The objectives' noise weights, per coordinate or by total energy, for each method (issue 42,
stop 62): ``training.noise_weights``.

Stop 57 (e8b75be) replaced the total-energy rule by the per-coordinate one for both methods, on
evidence from DP-HP (FARS's CASE_STATE, Adult samples at 215 / 500 rows, Census 3,000 rows).
DP-MERF's held-out rows were not re-run then; at stop 62 they were, and lost at ε = 3. This
study pairs the two rules on Adult samples (the tuning table): ``small_marginals.fit_sample``
(n rows of the bundled sample, target 'income', plain declaration, fixed noise = seed, test
only), scored by ``small_marginals.score``; each fit in its own process
(``harness.run_isolated``).

    python -m benchmarks.studies.noise_weight_rules --methods dpmerf dphp --n 500 2500 \
        --epsilons 3 1 --seeds 0 1 2 --out /tmp/noise_weight_rules.csv

``--heldout TABLE`` fits the held-out table's split and declaration instead (a diagnosis, never a
tuning input), as ``one_way_bins.fit_heldout`` does.
"""

import argparse
import os
import sys
import warnings
from pathlib import Path

for _name in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_name, '1')

import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE))

RULES = ('coordinate', 'total')


def fit_one(method, rule, epsilon, seed, n=None, table=None):
    import torch

    from benchmarks.studies import small_marginals

    torch.set_num_threads(1)
    settings = {'noise_weights': rule}
    if table is None:
        synth, _, test, metadata, domain, out, fit_s = small_marginals.fit_sample(
            n, epsilon, seed, settings, 'income', method)
        scores = small_marginals.score(test, out, metadata, domain, 'income')
        tstr = scores['tstr_roc']
    else:
        import sdv_dpkme
        from benchmarks import harness
        from benchmarks.studies import heldout

        cls = sdv_dpkme.DPMERFSynthesizer if method == 'dpmerf' else sdv_dpkme.DPHPSynthesizer
        train, test, metadata, declared, target = heldout.split(table)
        name = metadata._get_single_table_name()
        synth = harness.make(cls, metadata, epsilon, delta=heldout.DELTA, random_state=seed,
                             verbose=False, **declared, **settings)
        with warnings.catch_warnings(), harness.fixed_noise(seed):
            warnings.simplefilter('ignore')
            synth.fit({name: train})
            out = synth.sample(len(train))[name]
        raw = heldout._score(train, test, out, metadata, declared, target)
        scores = dict(quality=raw['quality'], shapes=raw['column_shapes'],
                      pairs=raw['column_pair_trends'])
        tstr, n, fit_s = raw['tstr_a'], len(train), None
    weights = synth.get_loss_values().attrs.get('objective_noise_weights', {})
    return dict(method=method, rule=rule, table=table or 'adult', n=n, epsilon=epsilon,
                seed=seed, quality=round(float(scores['quality']), 4),
                shapes=round(float(scores['shapes']), 4), pairs=round(float(scores['pairs']), 4),
                tstr=round(float(tstr), 4),
                fit_s=None if fit_s is None else round(fit_s, 1),
                weights=' '.join(f'{k}:{v:.3f}' for k, v in weights.items()))


def _fit_cell(cell):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return fit_one(**cell)


def main(argv=None):
    from benchmarks import harness

    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--methods', nargs='+', default=['dpmerf', 'dphp'])
    parser.add_argument('--n', type=int, nargs='+', default=[500, 2500])
    parser.add_argument('--heldout', nargs='*', help='held-out tables instead of Adult')
    parser.add_argument('--epsilons', type=float, nargs='+', default=[3.0, 1.0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--out', default='/tmp/noise_weight_rules.csv')
    args = parser.parse_args(argv)
    places = [dict(table=t) for t in args.heldout] if args.heldout else \
        [dict(n=n) for n in args.n]
    for method in args.methods:
        for place in places:
            for epsilon in args.epsilons:
                for seed in args.seeds:
                    for rule in RULES:  # each fit in a fresh process
                        row = harness.run_isolated(_fit_cell, dict(
                            method=method, rule=rule, epsilon=epsilon, seed=seed, **place))
                        print(row, flush=True)
                        pd.DataFrame([row]).to_csv(args.out, mode='a', index=False,
                                                   header=not os.path.exists(args.out),
                                                   lineterminator='\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
