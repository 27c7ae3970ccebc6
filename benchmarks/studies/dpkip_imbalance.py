"""DP-KIP on an imbalanced proxy: Adult with its '>50K' rows thinned (never Census, the held-out
table). Used to choose the ``class_balance`` default (results/dpkip_tuning.md).

Train and test splits of benchmarks/adult.py keep each positive row with probability ``rate``
(0.2 gives 6.1% positives, Census has 6.2%); rate 1 is plain Adult. Score: the mean ROC-AUC /
PR-AUC of dpkip_tune.py's 6 classifiers trained on the distilled rows, on up to 5,000 test rows.

    python benchmarks/dpkip_imbalance.py '{"class_balance": 0.5}' 0.2 [first_seed] [seeds]

The exploration before the option existed scaled the clipped gradients with weights from the
EXACT class counts (``"oracle_weights": b``, not DP, tuning only); ``class_balance`` itself takes
them from a noisy count release.
"""

import json
import sys
import warnings

import numpy as np
import torch

from dpkip_tune import CLASSIFIERS
from sdv_dpkme import DPKIPSynthesizer
from sdv_dpkme.datasets import adult_train_test_split, load_adult, load_adult_sample
from sdv_dpkme.engines import kip
from sdv_dpkme.evaluation.tstr import tstr_scores


def thin(frame, rate, seed):
    keep = (frame['income'] != '>50K') | (np.random.default_rng(seed).random(len(frame)) < rate)
    return frame[keep].reset_index(drop=True)


def oracle_weights(train, exponent):
    """(n_min / n_c)^b from the exact counts, for the '<=50K', '>50K', out-of-domain buckets."""
    counts = np.array([(train.income == '<=50K').sum(), (train.income == '>50K').sum()], float)
    weights = torch.tensor(list(np.minimum(1, counts.min() / counts) ** exponent) + [1.0],
                           dtype=torch.float64)
    plain = kip.clipped_gradient_sum

    def weighted(kernel, support, support_y, x, y, *args):
        return plain(kernel, support, support_y, x, y, *args[:3], weights[y.argmax(1)])

    kip.clipped_gradient_sum = weighted


def main(arguments, rate, first, seeds):
    torch.set_num_threads(1)
    _, metadata, domain = load_adult_sample()
    train, test = adult_train_test_split(load_adult())
    train, test = thin(train, rate, 1), thin(test, rate, 2)
    test = test.sample(min(5000, len(test)), random_state=0)
    print(f'positive share {(train.income == ">50K").mean():.3f} of {len(train)} rows', flush=True)
    if 'oracle_weights' in arguments:
        oracle_weights(train, arguments.pop('oracle_weights'))
        arguments.setdefault('class_balance', 0)  # the paper's loss, weighted by the oracle
    categories = domain['known_categories']
    categorical = [c for c in categories if c != 'income']
    numerical = [c for c in train.columns if c not in categories]
    epsilon = arguments.pop('epsilon', 1.0)
    scores = []
    for seed in range(first, first + seeds):
        synth = DPKIPSynthesizer(metadata, epsilon=epsilon, domain=domain, target_column='income',
                                 verbose=False, random_state=seed, **arguments)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            synth.fit({'adult': train})
            table = tstr_scores(synth.get_distilled_data(), test, 'income', categorical,
                                numerical, categories=categories, classifiers=CLASSIFIERS)
        scores.append((table.iloc[-1]['roc_auc'], table.iloc[-1]['pr_auc']))
    roc, pr = np.mean(scores, axis=0)
    print(f'{arguments} eps {epsilon} rate {rate}: ROC {roc:.3f} PR {pr:.3f} per seed '
          f'{[(round(a, 3), round(b, 3)) for a, b in scores]}', flush=True)


if __name__ == '__main__':
    main(json.loads(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 0.2,
         int(sys.argv[3]) if len(sys.argv) > 3 else 0, int(sys.argv[4]) if len(sys.argv) > 4 else 3)
