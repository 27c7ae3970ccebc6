"""Tuning loop for DP-KIP on Adult (never Census): fit, then 6 of the 12 paper classifiers on the
distilled rows, scored on 5,000 Adult test rows. Results: benchmarks/results/dpkip_tuning.md.

Usage: python benchmarks/dpkip_tune.py '{"epochs": 2, "sampling_rate": 0.02}' [seeds]
"""
import json, sys, time, warnings
import numpy as np, pandas as pd, torch
torch.set_num_threads(1)
from sdv_dpkme import DPKIPSynthesizer
from sdv_dpkme.datasets import adult_train_test_split, load_adult, load_adult_sample
from sdv_dpkme.evaluation.tstr import tstr_scores
_, metadata, domain = load_adult_sample()
train, test = adult_train_test_split(load_adult())
test = test.sample(5000, random_state=0)
cats = domain['known_categories']
catcols = [c for c in cats if c != 'income']
numcols = [c for c in train.columns if c not in cats]
kw = json.loads(sys.argv[1]); seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
clfs = kw.pop('clfs', ['LogisticRegression', 'GaussianNB', 'RandomForestClassifier', 'XGBClassifier', 'DecisionTreeClassifier', 'AdaBoostClassifier'])
out = []
for seed in range(seeds):
    t = time.time()
    s = DPKIPSynthesizer(metadata, epsilon=kw.pop('epsilon', 1.0) if seed == 0 else s.epsilon, domain=domain, target_column='income', verbose=False, random_state=seed, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        s.fit({'adult': train})
        d = s.get_distilled_data()
        r = tstr_scores(d, test, 'income', catcols, numcols, categories=cats, classifiers=clfs)
    out.append((r.iloc[-1]['roc_auc'], r.iloc[-1]['pr_auc'], time.time() - t))
    print(seed, r[['classifier', 'roc_auc', 'pr_auc']].round(3).to_dict('list') if seed == 0 else '', flush=True)
a = np.array(out)
print(kw, 'ROC %.3f PR %.3f  fit+eval %.0fs' % tuple(a.mean(0)), flush=True)
