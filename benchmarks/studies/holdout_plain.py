"""A plain declaration on a held-out table, before and after the default encoding rule (issue 16).

UCI hypothyroid (3,163 rows; the public facts of ``workflow_hypothyroid.py``: categories and
flags of ``hypothyroid.names``, round clinical caps for the lab values, which columns can be
missing). Nothing here was tuned on this table. Arms, paired on the seed (model seed and
split; the privacy noise is fresh in every fit unless ``--paired-noise``):

* ``plain-linear``: bounds, categories and nullable columns, every numerical column declared
  ``scale='linear'`` (what a plain declaration gave before the rule);
* ``plain``: the same declaration without scales, so the rule of docs/domains.md decides;
* ``plain-reweight``: ``plain`` plus ``reweight_generated_rows=4000``;
* ``plain-previous``: ``plain`` with DP-HP's training defaults before 2026-11-25
  (``PREVIOUS_DPHP_TRAINING``);
* ``plain-unsmoothed``: ``plain`` with ``category_smoothing=0``;
* ``plain-linked`` / ``plain-unlinked``: ``plain`` with ``category_links=True`` / ``False``;
* ``plain-calibrated`` / ``plain-uncalibrated``: ``plain`` with ``calibration_parents=2`` / ``0``.

``--paired-noise`` draws the same privacy noise in every arm of a seed (test-only fixed noise).

DP-HP (or ``--method dpmerf``), ε = 1, every other argument default (no target_column). Scored
against a seeded 80/20 stratified test split: SDMetrics quality, column shapes, pair trends, TSTR
ROC / PR (12 classifiers, target ``class``), 3-way TV on 10 bins of the public bounds, fit s.

    python benchmarks/studies/holdout_plain.py --seeds 0,1,2 --out /tmp/holdout.csv
"""

import argparse
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402

#: DP-HP's generator-training defaults before 2026-11-25 (issue 16: fitting the releases better)
PREVIOUS_DPHP_TRAINING = dict(pair_weight=1.0, learning_rate_schedule='constant',
                              category_smoothing=0.0, steps=500)
#: arm -> flat settings on top of the plain declaration
ARMS = {
    'plain-linear': None,  # every numerical column declared linear (below)
    'plain': {},
    'plain-reweight': dict(reweight_generated_rows=4000),
    'plain-previous': PREVIOUS_DPHP_TRAINING,
    'plain-unsmoothed': dict(category_smoothing=0.0),
    'plain-unlinked': dict(category_links=False),
    'plain-linked': dict(category_links=True),
    'plain-calibrated': dict(calibration_parents=2),
    'plain-uncalibrated': dict(calibration_parents=0),
}


def run(arm, seed, method, data, meta, declared, paired_noise=False):
    import torch
    from sklearn.model_selection import train_test_split

    import sdv_dpkme

    torch.set_num_threads(1)
    train, test = train_test_split(data, test_size=0.2, random_state=seed,
                                   stratify=data['class'])
    bounds = declared['known_min_max_values']
    settings = dict(declared, **(ARMS[arm] or {}))
    if arm == 'plain-linear':
        settings['domain'] = {'columns': {c: {'scale': 'linear'} for c in bounds}}
    cls = sdv_dpkme.DPHPSynthesizer if method == 'dphp' else sdv_dpkme.DPMERFSynthesizer
    row = {'method': method, 'arm': arm, 'seed': seed}
    # paired noise: every arm of a seed draws the same privacy noise
    with warnings.catch_warnings(), harness.fixed_noise(1000 + seed if paired_noise else None):
        warnings.simplefilter('ignore')
        synth = harness.make(cls, meta, 1.0, random_state=seed, verbose=False, **settings)
        table = harness.fit_sample(synth, train, row, harness.heldout.HYPOTHYROID)
    from sdv_dpkme.evaluation import evaluate

    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        scores = evaluate(test, table, meta, target_column='class',
                          categories=declared['known_categories'], bounds=bounds, alphas=(3,))
    row.update({k: scores[k] for k in ('quality', 'column_shapes', 'column_pair_trends',
                                      'tstr_roc_auc', 'tstr_pr_auc', 'tv_alpha3')})
    row['worst_shapes'] = '; '.join(
        f"{r['Column']} {r['Score']:.3f}" for _, r in
        scores['column_shape_details'].dropna(subset=['Score']).head(4).iterrows())
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', default='0,1,2')
    parser.add_argument('--method', default='dphp', choices=('dphp', 'dpmerf'))
    parser.add_argument('--out', required=True, help='CSV, appended after every fit')
    parser.add_argument('--arms', default='plain-linear,plain',
                        help=f'comma-separated arms to run ({", ".join(ARMS)})')
    parser.add_argument('--paired-noise', action='store_true',
                        help='TEST ONLY fixed noise seed 1000 + seed in every arm (paired noise, '
                             'not fresh)')
    args = parser.parse_args(argv)
    unknown = set(args.arms.split(',')) - set(ARMS)
    if unknown:
        parser.error(f'unknown arm(s) {sorted(unknown)}; choose from {list(ARMS)}')
    data, meta, declared = harness.hypothyroid()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = pd.read_csv(out).to_dict('records') if out.exists() else []
    done = {(r['method'], r['arm'], int(r['seed'])) for r in rows}
    for seed in [int(s) for s in args.seeds.split(',')]:
        for arm in args.arms.split(','):
            if (args.method, arm, seed) in done:
                continue
            row = run(arm, seed, args.method, data, meta, declared, args.paired_noise)
            rows.append(row)
            pd.DataFrame(rows).to_csv(out, index=False)
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()},
                  flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
