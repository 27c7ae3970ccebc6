"""The collapse fallback (issue 42, stop 60), paired on small Adult samples (the tuning table).

``training.collapse_fallback`` trains the generator again, on the releases shrunk toward a
public prior, only when the first generator collapsed; a fit that did not collapse is the same
either way. So each cell (n rows, epsilon, seed) is fitted once with the default (fallback on)
and, where the fallback ran, once more with it off: same fixed noise (``harness.fixed_noise``,
seed = the noise seed) and random_state, so the two arms share the releases and the first
training, and differ only by the retraining. Fits and scores as ``small_marginals.run_one``
(target 'income', plain declaration, SDMetrics quality against the test split, TSTR ROC).

    python -m benchmarks.studies.collapse_fallback --method dphp --n 100 215 \
        --epsilons 0.1 0.3 --seeds 5 --out /tmp/collapse_fallback.csv
"""

import argparse
import os

import pandas as pd

from benchmarks.studies import small_marginals


def fit_one(n, epsilon, seed, method, fallback):
    synth, _, test, metadata, domain, out, fit_s = small_marginals.fit_sample(
        n, epsilon, seed, {'collapse_fallback': fallback}, 'income', method)
    ran = synth.get_loss_values().attrs.get('collapse_fallback')
    scores = small_marginals.score(test, out, metadata, domain, 'income')
    return dict(method=method, n=n, epsilon=epsilon, seed=seed,
                arm='fallback' if fallback else 'off', fit_s=round(fit_s, 2),
                collapsed_first=' '.join(map(str, ran['collapsed'])) if ran else '',
                collapsed_final=' '.join(map(str, synth._model.collapsed_classes)),
                **{k: round(float(v), 4) for k, v in scores.items()})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--method', choices=('dphp', 'dpmerf'), default='dphp')
    parser.add_argument('--n', type=int, nargs='+', default=[100, 215])
    parser.add_argument('--epsilons', type=float, nargs='+', default=[0.1, 0.3])
    parser.add_argument('--seeds', type=int, default=5)
    parser.add_argument('--out', default='/tmp/collapse_fallback.csv')
    args = parser.parse_args(argv)
    for n in args.n:
        for epsilon in args.epsilons:
            for seed in range(args.seeds):
                rows = [fit_one(n, epsilon, seed, args.method, True)]
                if rows[0]['collapsed_first']:  # the fallback ran: the arm without it
                    rows.append(fit_one(n, epsilon, seed, args.method, False))
                for row in rows:
                    print(row, flush=True)
                frame = pd.DataFrame(rows)
                frame.to_csv(args.out, mode='a', index=False, header=not os.path.exists(args.out),
                             lineterminator='\n')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
