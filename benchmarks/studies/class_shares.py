"""Class shares at tiny n (issue 42): the lone 'class_proportions' release against the shares
combined with every class-conditional release, paired, on 215 Adult rows.

DP-HP with every default on 215 rows drawn (seed 0) from the bundled Adult sample (bundled
domain, target 'income'; quality and TSTR against the other rows of the sample: the tuning
table of ``release_plan``), at epsilon 0.3 and 1. Arms, all from the same releases:

- ``lone``: the shares from the 'class_proportions' release alone, negative ones clipped to 0
  (the former rule, restored here by replacing ``kme.shared_class_weights``);
- ``combined_clip``: the inverse-variance combination, negative shares clipped to 0;
- ``combined``: the default (the combination, a share <= 0 kept at its mean given >= 0).

Each seed fixes the model seed and the privacy noise (test-only ``fixed_noise``), shared by the
arms: the releases are byte-identical across arms, only their post-processing differs. A fit is
'one-class' when its synthetic 'income' holds a single class.

    python -m benchmarks.run class_shares --seeds 8     # writes results/class_shares_adult.csv
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402

ARMS = ('lone', 'combined_clip', 'combined')


def adult_215():
    from sdv_dpkme.datasets import load_adult_sample

    data, metadata, domain = load_adult_sample()
    train = data.sample(n=215, random_state=0)
    test = data.drop(index=train.index).reset_index(drop=True)
    return train.reset_index(drop=True), test, metadata, domain


def _arm(arm):
    """Replace the engine's class-share step for ``arm`` (post-processing only); returns the
    undo."""
    from sdv_dpkme.engines import kme, kme_plan

    original = kme.shared_class_weights
    if arm == 'lone':
        def shares(proportions, std, terms, releases):
            return (*kme_plan.class_weights(proportions), std, 1)
    elif arm == 'combined_clip':
        def shares(proportions, std, terms, releases):
            from sdv_dpkme.engines.class_shares import combined_shares

            if proportions is None:
                return original(proportions, std, terms, releases)
            estimate, combined, count = combined_shares(
                proportions, std, [(t.feature_map, r[0], r[1], t.pooled)
                                   for t, r in zip(terms, releases)])
            return (*kme_plan.class_weights(estimate), combined, count)
    else:
        shares = original
    kme.shared_class_weights = shares
    return lambda: setattr(kme, 'shared_class_weights', original)


def run_one(arm, epsilon, seed, spec):
    from sdmetrics.reports.single_table import QualityReport

    from sdv_dpkme import DPHPSynthesizer
    from sdv_dpkme.evaluation import evaluate

    train, test, metadata, domain = spec
    synth = harness.make(DPHPSynthesizer, metadata, epsilon, random_state=seed, verbose=False,
                         domain=domain, target_column='income')
    row = {'table': 'adult_215', 'arm': arm, 'epsilon': epsilon, 'seed': seed,
           'commit': harness.git_commit()}
    undo = _arm(arm)
    try:
        with warnings.catch_warnings(), harness.fixed_noise(seed):
            warnings.simplefilter('ignore')
            start = time.perf_counter()
            synth.fit({'adult': train})
            row['fit_s'] = time.perf_counter() - start
            out = synth.sample(len(test))
    finally:
        undo()
    out = out['adult'] if isinstance(out, dict) else out
    report = QualityReport()
    report.generate(test, out, metadata.to_dict()['tables']['adult'], verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        utility = evaluate(test, out, metadata, target_column='income', alphas=(),
                           categories=domain['known_categories'],
                           bounds=domain['known_min_max_values'])
    weights = synth._model.class_weights
    plan = {p['group']: p for p in synth.get_privacy_report().plan}
    reason = plan['class_proportions']['reason']
    row.update(
        quality=report.get_score(),
        shapes=report.get_properties().set_index('Property').loc['Column Shapes', 'Score'],
        pairs=report.get_properties().set_index('Property').loc['Column Pair Trends', 'Score'],
        tstr_roc=float(utility['tstr_roc_auc']), tstr_pr=float(utility['tstr_pr_auc']),
        classes=int(out['income'].nunique()),
        synthetic_share=float((out['income'] == '>50K').mean()),
        weights=' '.join(f'{w:.3f}' for w in weights),
        shares_std=reason.split('noise std per share ')[1].split(' ')[0]
        if 'noise std per share' in reason else '',
    )
    print(row, flush=True)
    return row


def write(frame, path, real_share):
    lines = ['| epsilon | arm | seeds | one-class fits | quality | column shapes | pair trends '
             '| TSTR ROC (two-class fits) | share of >50K: mean, min-max (real '
             f'{real_share:.3f}) |', '|---|---|---|---|---|---|---|---|---|']
    for (epsilon, arm), g in frame.groupby(['epsilon', 'arm'], sort=False):
        s = g['synthetic_share']
        lines.append(
            f"| {epsilon:g} | {arm} | {len(g)} | {int((g['classes'] < 2).sum())} | "
            f"{g['quality'].mean():.3f} ± {g['quality'].std():.3f} | {g['shapes'].mean():.3f} | "
            f"{g['pairs'].mean():.3f} | {g['tstr_roc'].mean():.3f} | "
            f'{s.mean():.3f}, {s.min():.3f}-{s.max():.3f} |')
    lines += ['', 'Paired difference to `lone` (mean ± sd over seeds):', '',
              '| epsilon | arm | quality | pair trends | TSTR ROC |', '|---|---|---|---|---|']
    for epsilon, g in frame.groupby('epsilon', sort=False):
        base = g[g['arm'] == 'lone'].set_index('seed')
        for arm in ARMS[1:]:
            other = g[g['arm'] == arm].set_index('seed')
            seeds = base.index.intersection(other.index)
            cells = []
            for key in ('quality', 'pairs', 'tstr_roc'):
                d = (other.loc[seeds, key] - base.loc[seeds, key]).dropna()
                cells.append(f'{d.mean():+.3f} ± {d.std():.3f}')
            lines.append(f'| {epsilon:g} | {arm} | ' + ' | '.join(cells) + ' |')
    Path(path).write_text('\n'.join(lines) + '\n')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, default=6)
    parser.add_argument('--epsilons', default='0.3,1')
    parser.add_argument('--arms', default=','.join(ARMS))
    parser.add_argument('--out', default=str(harness.RESULTS / 'class_shares_adult'))
    args = parser.parse_args(argv)
    spec = adult_215()
    real = (spec[1]['income'] == '>50K').mean()
    rows = []
    for epsilon in (float(e) for e in args.epsilons.split(',')):
        for seed in range(args.seeds):
            for arm in args.arms.split(','):
                rows.append(run_one(arm, epsilon, seed, spec))
                frame = pd.DataFrame(rows)
                frame.to_csv(args.out + '.csv', index=False)
                write(frame, args.out + '.md', real)
    return 0


if __name__ == '__main__':
    np.seterr(all='ignore')
    sys.exit(main())
