"""Paired FARS check of the pooled 'one_way' release (issue 42): per-column shapes with it off
and on, same random_state and the same fixed noise seed (test-only: not private).

    python -m benchmarks.studies.one_way --rows 8000 --steps 100 --pairs 1:0 --epsilon 1

Per column: SDMetrics' column-shape scores, TVComplement (categorical) and KSComplement
(numeric, the integer columns of the KEEL header), computed here directly as 1 - TV and 1 - KS.
"""

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from benchmarks.studies.sampling import load_fars
from sdv_dpkme import DPHPSynthesizer
from sdv_dpkme.privacy.testing import fixed_noise
from sdv_dpkme.synthesizers.options import build_kwargs


def shapes(real, synthetic, categorical):
    """{column: 1 - TV (categorical) or 1 - KS statistic (numeric)}."""
    out = {}
    for c in real.columns:
        if c in categorical:
            a = real[c].astype(str).value_counts(normalize=True)
            b = synthetic[c].astype(str).value_counts(normalize=True)
            idx = a.index.union(b.index)
            out[c] = 1 - 0.5 * (a.reindex(idx, fill_value=0) - b.reindex(idx, fill_value=0)).abs().sum()
        else:
            a, b = np.sort(real[c].to_numpy(float)), np.sort(synthetic[c].dropna().to_numpy(float))
            grid = np.union1d(a, b)
            ks = np.abs(np.searchsorted(a, grid, 'right') / len(a)
                        - np.searchsorted(b, grid, 'right') / len(b)).max()
            out[c] = 1 - ks
    return out


def _mst(train, metadata, spec, epsilon, seed):
    """MST through the held-out suite's DP-honest adapter (public categories, numeric columns
    on 10 public bins of the declared bounds, values drawn uniformly in a bin)."""
    from benchmarks import harness
    from benchmarks.studies.heldout import DELTA, _codes, _decode

    encoded, domain, plan = _codes(train, metadata, spec)
    codes, _ = harness.run_smartnoise('mst', encoded, domain, epsilon, DELTA, seed, {},
                                      one_thread=True)
    return _decode(codes, plan, train, seed)


def run(rows, steps, pairs, epsilon, arms, sample_rows=None):
    data, metadata, domain, target = load_fars()
    train = data.sample(rows, random_state=0).reset_index(drop=True)
    spec = dict(known_min_max_values={c: (d['min_value'], d['max_value'])
                                      for c, d in domain['columns'].items() if 'min_value' in d},
                known_categories={c: d['category_values'] for c, d in domain['columns'].items()
                                  if 'category_values' in d})
    categorical = set(spec['known_categories'])
    results = []
    for pair in pairs:
        noise, seed = (int(v) for v in pair.split(':'))
        for arm, flat in arms.items():
            if arm == 'mst':
                started = time.time()
                synthetic = _mst(train, metadata, spec, epsilon, seed)
                score = shapes(train, synthetic, categorical)
                results += [dict(pair=pair, arm=arm, column=c, shape=v,
                                 seconds=time.time() - started) for c, v in score.items()]
                print(pair, arm, 'mean shape', round(np.mean(list(score.values())), 4), flush=True)
                continue
            kw = build_kwargs(DPHPSynthesizer, dict(
                epsilon=epsilon, domain=spec, random_state=seed, verbose=False,
                target_column=target, **({} if steps is None else {'steps': steps}), **flat))
            synth = DPHPSynthesizer(metadata, **kw)
            started = time.time()
            with warnings.catch_warnings(), fixed_noise(noise if np.isfinite(epsilon) else None):
                warnings.simplefilter('ignore')
                synth.fit({'fars': train})
            seconds = time.time() - started
            synthetic = synth.sample(sample_rows or rows)
            if isinstance(synthetic, dict):
                synthetic = next(iter(synthetic.values()))
            score = shapes(train, synthetic, categorical)
            for column, value in score.items():
                results.append(dict(pair=pair, arm=arm, column=column, shape=value,
                                    seconds=seconds))
            print(pair, arm, f'{seconds:.0f}s', 'mean shape', round(np.mean(list(score.values())), 4),
                  'worst', sorted(score.items(), key=lambda kv: kv[1])[:4], flush=True)
    return pd.DataFrame(results)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--rows', type=int, default=8000)
    parser.add_argument('--steps', type=int, default=None)
    parser.add_argument('--pairs', default='1:0')
    parser.add_argument('--epsilon', type=float, default=1.0)
    parser.add_argument('--arms', default='off,on')
    parser.add_argument('--out', default=None)
    args = parser.parse_args()
    known = {'off': {'one_way': False}, 'on': {'one_way': True}, 'mst': None,
             # a larger share: MST spends a third of its budget on the one-way marginals
             'on4': {'one_way': True, 'budget_shares': {'one_way': 0.4}}}
    arms = {a: known[a] for a in args.arms.split(',')}
    frame = run(args.rows, args.steps, args.pairs.split(','), args.epsilon, arms)
    if args.out:
        frame.to_csv(args.out, index=False)
    table = frame.pivot_table(index='column', columns=['arm'], values='shape', aggfunc='mean')
    print(table.round(3).to_string())
    print(table.mean().round(4).to_string())


if __name__ == '__main__':
    main()
