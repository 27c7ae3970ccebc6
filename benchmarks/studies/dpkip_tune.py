"""Tuning loop for DP-KIP on Adult (never on Census, the held-out table); results in
benchmarks/results/dpkip_tuning.md.

Fits DPKIPSynthesizer on the Adult train split with the given flat settings, trains 6 of the 12
paper classifiers on the distilled rows and scores them on up to 5,000 rows of the test split
(a fixed sample). Prints the mean ROC-AUC / PR-AUC over seeds and the per-seed scores.

``--positive-rate r`` makes an imbalanced proxy (used to choose the ``class_balance`` default):
the train and test splits keep each '>50K' row with probability r (0.2 gives 6.1 % positives;
Census has 6.2 %); 1 is plain Adult.

    python benchmarks/studies/dpkip_tune.py '{"epochs": 2, "sampling_rate": 0.02}' --seeds 1
    python benchmarks/studies/dpkip_tune.py '{"class_balance": 0.5}' --positive-rate 0.2 --seeds 3
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402

CLASSIFIERS = ['LogisticRegression', 'GaussianNB', 'RandomForestClassifier', 'XGBClassifier',
               'DecisionTreeClassifier', 'AdaBoostClassifier']


def thin(frame, rate, seed):
    """Keep each '>50K' row with probability ``rate`` (a fixed draw)."""
    keep = (frame['income'] != '>50K') | (np.random.default_rng(seed).random(len(frame)) < rate)
    return frame[keep].reset_index(drop=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('settings', type=json.loads,
                        help='JSON of flat DPKIPSynthesizer settings (epsilon defaults to 1)')
    parser.add_argument('--positive-rate', type=float, default=1.0,
                        help="share of the '>50K' rows kept (1: plain Adult)")
    parser.add_argument('--first-seed', type=int, default=0)
    parser.add_argument('--seeds', type=int, default=1)
    args = parser.parse_args(argv)
    import torch

    from sdv_dpkme import DPKIPSynthesizer
    from sdv_dpkme.evaluation.tstr import tstr_scores

    torch.set_num_threads(1)
    train, test, metadata, domain = harness.adult_split()
    train, test = thin(train, args.positive_rate, 1), thin(test, args.positive_rate, 2)
    test = test.sample(min(5000, len(test)), random_state=0)
    print(f'positive share {(train.income == ">50K").mean():.3f} of {len(train)} rows', flush=True)
    categories = domain['known_categories']
    categorical = [c for c in categories if c != 'income']
    numerical = [c for c in train.columns if c not in categories]
    settings = dict(args.settings)
    epsilon = settings.pop('epsilon', 1.0)
    scores = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            synth = harness.make(DPKIPSynthesizer, metadata, epsilon, domain=domain,
                                 target_column='income', verbose=False, random_state=seed,
                                 **settings)
            synth.fit({'adult': train})
            table = tstr_scores(synth.get_distilled_data(), test, 'income', categorical,
                                numerical, categories=categories, classifiers=CLASSIFIERS)
        mean = table.iloc[-1]
        scores.append((mean['roc_auc'], mean['pr_auc'], time.perf_counter() - start))
    roc, pr, seconds = np.mean(scores, axis=0)
    print(f'{settings} eps {epsilon} rate {args.positive_rate}: ROC {roc:.3f} PR {pr:.3f} '
          f'(fit+eval {seconds:.0f} s); per seed '
          f'{[(round(a, 3), round(b, 3)) for a, b, _ in scores]}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
