"""Tuning loop for DP-KIP on Adult (never on Census, the held-out table).

Fits DPKIPSynthesizer on the Adult train split with the given arguments, trains 6 of the 12 paper
classifiers on the distilled rows and scores them on a fixed 5,000-row sample of the test split.
Prints the mean ROC-AUC / PR-AUC over seeds. Results: benchmarks/results/dpkip_tuning.md.

Usage: python benchmarks/dpkip_tune.py '{"epochs": 2, "sampling_rate": 0.02}' [seeds]
"""

import json
import sys
import time
import warnings

import numpy as np
import torch

from sdv_dpkme import DPKIPSynthesizer
from sdv_dpkme.datasets import adult_train_test_split, load_adult, load_adult_sample
from sdv_dpkme.evaluation.tstr import tstr_scores

CLASSIFIERS = ['LogisticRegression', 'GaussianNB', 'RandomForestClassifier', 'XGBClassifier',
               'DecisionTreeClassifier', 'AdaBoostClassifier']


def main(arguments, seeds):
    torch.set_num_threads(1)
    _, metadata, domain = load_adult_sample()
    train, test = adult_train_test_split(load_adult())
    test = test.sample(5000, random_state=0)
    categories = domain['known_categories']
    categorical = [c for c in categories if c != 'income']
    numerical = [c for c in train.columns if c not in categories]
    epsilon = arguments.pop('epsilon', 1.0)
    scores = []
    for seed in range(seeds):
        start = time.time()
        synth = DPKIPSynthesizer(metadata, epsilon=epsilon, domain=domain, target_column='income',
                                 verbose=False, random_state=seed, **arguments)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            synth.fit({'adult': train})
            table = tstr_scores(synth.get_distilled_data(), test, 'income', categorical,
                                numerical, categories=categories, classifiers=CLASSIFIERS)
        mean = table.iloc[-1]
        scores.append((mean['roc_auc'], mean['pr_auc'], time.time() - start))
    roc, pr, seconds = np.mean(scores, axis=0)
    print(f'{arguments} ROC {roc:.3f} PR {pr:.3f}  fit+eval {seconds:.0f}s', flush=True)


if __name__ == '__main__':
    main(json.loads(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1)
