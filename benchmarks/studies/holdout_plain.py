"""A plain declaration on a held-out table, before and after the default encoding rule (issue 16).

UCI hypothyroid (3,163 rows; the public facts of ``workflow_hypothyroid.py``: categories and
flags of ``hypothyroid.names``, round clinical caps for the lab values, which columns can be
missing). Nothing here was tuned on this table. Arms, paired on the seed (model seed and
split; the privacy noise is fresh in every fit unless ``--paired-noise``):

* ``plain-linear``: bounds, categories and nullable columns, every numerical column declared
  ``scale='linear'`` (what a plain declaration gave before the rule);
* ``plain``: the same declaration without scales, so the rule of docs/domains.md decides;
* ``plain-reweight``: ``plain`` plus ``reweight_generated_rows=4000``;
* ``plain-previous``: ``plain`` with DP-HP's training defaults before stop 33
  (``PREVIOUS_DPHP_TRAINING``);
* ``plain-unsmoothed``: ``plain`` with ``category_smoothing=0``;
* ``plain-linked`` / ``plain-unlinked``: ``plain`` with ``category_links=True`` / ``False``.

``--paired-noise`` draws the same privacy noise in every arm of a seed (``noise_seed``).

DP-HP (or ``--method dpmerf``), ε = 1, every other argument default (no target_column). Scored
against a seeded 80/20 stratified test split: SDMetrics quality, column shapes, pair trends, TSTR
ROC / PR (12 classifiers, target ``class``), 3-way TV on 10 bins of the public bounds, fit s.

    python benchmarks/holdout_plain.py --seeds 0,1,2 --out /tmp/holdout.csv
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workflow_hypothyroid as hypo  # noqa: E402


#: DP-HP's generator-training defaults before stop 33 (issue 16: fitting the releases better)
PREVIOUS_DPHP_TRAINING = dict(pair_weight=1.0, learning_rate_schedule='constant',
                              category_smoothing=0.0, steps=500)


def declaration(arm):
    categories = {'class': ['hypothyroid', 'negative'], 'sex': ['F', 'M']}
    categories.update({f: ['f', 't'] for f in hypo.FLAGS})
    categories.update({f'{lab}_measured': ['n', 'y'] for lab in hypo.LABS})
    bounds = {'age': (0, 100), **hypo.LABS}
    kwargs = dict(known_min_max_values=bounds, known_categories=categories,
                  nullable_columns=['age', 'sex', *hypo.LABS])
    if arm == 'plain-linear':
        kwargs['domain'] = {'columns': {c: {'scale': 'linear'} for c in bounds}}
    if arm == 'plain-reweight':
        kwargs['reweight_generated_rows'] = 4000
    if arm == 'plain-previous':  # DP-HP's training defaults before stop 33
        kwargs.update(PREVIOUS_DPHP_TRAINING)
    if arm == 'plain-unsmoothed':
        kwargs['category_smoothing'] = 0.0
    if arm == 'plain-unlinked':
        kwargs['category_links'] = False
    if arm == 'plain-linked':
        kwargs['category_links'] = True
    if arm in ('plain-calibrated', 'plain-uncalibrated'):  # a class attribute, set after
        kwargs['_attributes'] = {'calibration_parents': 2 if arm == 'plain-calibrated' else 0}
    return kwargs, bounds, categories


def run(arm, seed, method, data, meta, paired_noise=False):
    import torch
    from sklearn.model_selection import train_test_split

    import sdv_dpkme
    from sdv_dpkme.evaluation import evaluate

    torch.set_num_threads(1)
    train, test = train_test_split(data, test_size=0.2, random_state=seed,
                                   stratify=data['class'])
    kwargs, bounds, categories = declaration(arm)
    cls = sdv_dpkme.DPHPSynthesizer if method == 'dphp' else sdv_dpkme.DPMERFSynthesizer
    if paired_noise:  # every arm of a seed draws the same privacy noise
        kwargs['noise_seed'] = 1000 + seed
    attributes = kwargs.pop('_attributes', {})
    synth = cls(meta, epsilon=1.0, random_state=seed, verbose=False, **kwargs)
    for name, value in attributes.items():
        setattr(synth, name, value)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        start = time.perf_counter()
        synth.fit({hypo.TABLE: train})
        fit_s = time.perf_counter() - start
        table = synth.sample(len(train))[hypo.TABLE]
        scores = evaluate(test, table, meta, target_column='class', categories=categories,
                          bounds=bounds, alphas=(3,))
    scales = {c: d.scale for c, d in synth._domains.items() if d.sdtype == 'numerical'}
    return {'method': method, 'arm': arm, 'seed': seed, 'quality': scores['quality'],
            'column_shapes': scores['column_shapes'],
            'column_pair_trends': scores['column_pair_trends'],
            'tstr_roc_auc': scores['tstr_roc_auc'], 'tstr_pr_auc': scores['tstr_pr_auc'],
            'tv_alpha3': scores['tv_alpha3'], 'fit_s': fit_s,
            'worst_shapes': '; '.join(
                f"{r['Column']} {r['Score']:.3f}" for _, r in
                scores['column_shape_details'].dropna(subset=['Score']).head(4).iterrows()),
            'scales': ' '.join(f'{c}:{s}' for c, s in scales.items() if s != 'linear')}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', default='0,1,2')
    parser.add_argument('--method', default='dphp', choices=('dphp', 'dpmerf'))
    parser.add_argument('--out', required=True, help='CSV, appended after every fit')
    parser.add_argument('--arms', default='plain-linear,plain',
                        help='comma-separated arms to run (plain-linear, plain, plain-reweight, '
                             'plain-previous, plain-unsmoothed, plain-unlinked, plain-linked, '
                             'plain-calibrated, plain-uncalibrated)')
    parser.add_argument('--paired-noise', action='store_true',
                        help='noise_seed = 1000 + seed in every arm (paired noise, not fresh)')
    args = parser.parse_args(argv)
    data, meta = hypo.load(), hypo.metadata()
    out = Path(args.out)
    rows = pd.read_csv(out).to_dict('records') if out.exists() else []
    done = {(r['method'], r['arm'], int(r['seed'])) for r in rows}
    for seed in [int(s) for s in args.seeds.split(',')]:
        for arm in args.arms.split(','):
            if (args.method, arm, seed) in done:
                continue
            row = run(arm, seed, args.method, data, meta, args.paired_noise)
            rows.append(row)
            pd.DataFrame(rows).to_csv(out, index=False)
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()},
                  flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
