"""The "real data" reference of benchmarks/studies/dpkip.py: the same 12 classifiers trained on real
train rows (no privacy), scored on the same test rows.

The DP-KIP paper's Table 5 has such a column (Census 0.776 / 0.408 for DP-KIP against 0.776 /
0.433 for real data). Ours tells how far the distilled rows are from what the real rows give
under this benchmark's protocol, and what PR-AUC the test split allows (its positive share is
the PR-AUC of a random guess).

    python benchmarks/studies/dpkip_real_reference.py [adult,census] [rows]

Trains on ``rows`` (default 20,000, the TSTR size of dpkip.py) real train rows drawn with seed 0
and on 10 real rows per class (the size of a distilled set, seeds 0-2), scored on the test rows
and on the test rows with the negatives thinned as the paper's were. Writes JSON lines to
results/dpkip_real_reference.jsonl (one file per run of this script), which dpkip.py's report
shows.
"""

import argparse
import json
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402
from benchmarks.studies.dpkip import (PAPER_UNDERSAMPLE, TARGET, _score, load_data,  # noqa: E402
                                      undersampled_test)

OUT = harness.RESULTS / 'dpkip_real_reference.jsonl'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('datasets', nargs='?', default='adult,census')
    parser.add_argument('rows', nargs='?', type=int, default=20_000)
    args = parser.parse_args(argv)
    datasets, rows = args.datasets.split(','), args.rows
    lines = []
    for dataset in datasets:
        train, full_test, metadata, domain = load_data(dataset, False)
        positive = domain['known_categories'][TARGET][1]
        for thinned in (False, True):
            test = undersampled_test(full_test, positive) if thinned else full_test
            lines += _cases(dataset, train, test, metadata, domain, rows, thinned)
    OUT.write_text('\n'.join(lines) + '\n')
    return 0


def _cases(dataset, train, test, metadata, domain, rows, thinned):
    """The reference lines of one test split."""
    lines = []
    share = float((test[TARGET] == domain['known_categories'][TARGET][1]).mean())
    cases = [('real rows', train.sample(n=min(rows, len(train)), random_state=0))]
    for seed in range(3):
        tiny = pd.concat([group.sample(n=10, random_state=seed)
                          for _, group in train.groupby(TARGET, observed=True)])
        cases.append((f'10 real rows per class, seed {seed}', tiny))
    for name, table in cases:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            scores, seconds = _score(table, test, metadata, domain, None)
        per = scores.loc[scores['classifier'] != 'mean']
        lines.append(json.dumps({'dataset': dataset, 'train': name, 'rows': len(table),
                                 'test': f'negatives thinned to {PAPER_UNDERSAMPLE:g}'
                                 if thinned else 'full',
                                 'test_positive_share': round(share, 4),
                                 'roc_auc': round(float(per['roc_auc'].mean()), 4),
                                 'pr_auc': round(float(per['pr_auc'].mean()), 4),
                                 'seconds': round(seconds, 1)}))
        print(lines[-1], flush=True)
    return lines


if __name__ == '__main__':
    sys.exit(main())
