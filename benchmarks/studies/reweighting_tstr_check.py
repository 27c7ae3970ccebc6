"""A second look at TSTR in part (b) of benchmarks/studies/reweighting.py (Adult, biased public subset).

Fits the reweighting release 3 times (fresh privacy noise) and scores TSTR (logistic regression,
random forest, XGBoost; mean ROC-AUC / PR-AUC on the real test split) of public rows resampled
in four ways, 2 draws each:
- uniform, and the release's simplex weights (the two arms of part (b));
- two diagnostic arms that use the PRIVATE share of '>50K', so they are not DP and only explain
  the result: uniform rows resampled to the private class share, and the release's weights with
  the class shares put back to the public ones.

Usage: python benchmarks/studies/reweighting_tstr_check.py   (about 10 min on 2 cores)
The numbers are quoted in benchmarks/results/reweighting.md.
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks.studies.reweighting import adult_split, fit_reweighting  # noqa: E402

CLASSIFIERS = ['LogisticRegression', 'RandomForestClassifier', 'XGBClassifier']


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, default=3, help='fits (fresh noise each)')
    parser.add_argument('--draws', type=int, default=2, help='resampling draws per arm and fit')
    args = parser.parse_args(argv)
    from sdv_dpkme.evaluation.tstr import tstr_scores

    seeds, draws = args.seeds, args.draws
    private, public, test, metadata, domain = adult_split()
    categories = domain['known_categories']
    categorical = [c for c in categories if c != 'income']
    numerical = [c for c in private.columns if c not in categories]

    def tstr(table):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            scores = tstr_scores(table, test, 'income', categorical, numerical,
                                 categories=categories, classifiers=CLASSIFIERS)
        scores = scores[scores.classifier == 'mean']
        return float(scores.roc_auc.mean()), float(scores.pr_auc.mean())

    positive = (public.income == '>50K').to_numpy()
    private_share = (private.income == '>50K').mean()  # not DP: diagnostic arms only
    results = {}
    for seed in range(seeds):
        synth, _ = fit_reweighting(private, public, metadata, domain, seed)
        weights = synth.weighted_public_data()['sampling_probability'].to_numpy()
        private_prior = np.where(positive, private_share / positive.mean(),
                                 (1 - private_share) / (1 - positive.mean()))
        public_prior = weights.copy()
        for cls in (True, False):
            rows = positive == cls
            public_prior[rows] = weights[rows] / weights[rows].sum() * rows.mean()
        rng = np.random.default_rng(seed)
        arms = [('uniform', np.ones(len(public))),
                ('uniform, private class share (not DP)', private_prior),
                ('reweighted', weights), ('reweighted, public class share', public_prior)]
        for name, prob in arms:
            for _ in range(draws):
                pick = rng.choice(len(public), size=len(private), replace=True,
                                  p=prob / prob.sum())
                results.setdefault(name, []).append(tstr(public.iloc[pick]))
        print(f'after fit {seed}:', {k: np.round(np.mean(v, 0), 4).tolist()
                                     for k, v in results.items()}, flush=True)


if __name__ == '__main__':
    sys.exit(main())
