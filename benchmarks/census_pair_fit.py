"""Where Census pair trends are lost: the release's noise or the generator's fit (issue 16).

One DP-HP fit on the full Census train split (plain declaration + target, as
``census_quality.py``) at a given ε (``inf``: every release exact). For a few strongly associated
categorical pairs it writes the total variation, against the train rows, of

* ``tv_release``: the released table (pooled over classes with the released class weights, as
  the generator's target), and ``tv_release_clipped``: the same clipped at 0 and renormalised;
* ``tv_generated``: the synthetic table's (and against the test rows, and train against test);

then scores the synthetic table as ``census_quality.py`` does (LogisticRegression only).

    python benchmarks/census_pair_fit.py --epsilon inf --out /tmp/pair_fit.csv
    python benchmarks/census_pair_fit.py --epsilon inf --kwargs '{"steps": 2400}' --out ...
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import adult  # noqa: E402
import census_quality as cq  # noqa: E402

PAIRS = [('detailed_industry_recode', 'major_industry_code'),
         ('detailed_occupation_recode', 'major_occupation_code'),
         ('detailed_industry_recode', 'detailed_occupation_recode'),
         ('detailed_household_and_family_stat', 'detailed_household_summary_in_household'),
         ('education', 'marital_stat'), ('marital_stat', 'detailed_household_and_family_stat'),
         ('sex', 'marital_stat')]


def _capture_objectives(kme):
    """Wrap ``kme.train`` to keep the class weights and objectives it is given (public)."""
    captured = {}
    train = kme.train

    def spy(blocks, columns, target, weights, objectives, *args):
        captured['weights'] = np.asarray(weights, dtype=float).reshape(-1)
        captured['objectives'] = [(o.name, o.feature_map, o.target) for o in objectives]
        return train(blocks, columns, target, weights, objectives, *args)

    kme.train = spy
    return captured


def _table(frame, a, b, categories):
    cats = {c: [str(v) for v in categories[c]] for c in (a, b)}
    counts = pd.crosstab(pd.Categorical(frame[a].astype(str), categories=cats[a]),
                         pd.Categorical(frame[b].astype(str), categories=cats[b]), dropna=False)
    return counts.to_numpy() / len(frame)


def pair_rows(captured, categories, train, synthetic, test):
    rows = []
    for name, fmap, target in captured['objectives']:
        if not hasattr(fmap, 'joint_tables') or callable(target):
            continue
        names = set(fmap.pair_names())
        for a, b in PAIRS:
            key = (a, b) if (a, b) in names else (b, a) if (b, a) in names else None
            if key is None:
                continue
            tables = fmap.joint_tables(target.double(), [key])[key].numpy()
            if key != (a, b):
                tables = tables.transpose(0, 2, 1)
            released = np.tensordot(captured['weights'] / captured['weights'].sum(), tables, 1)
            released = released[:len(categories[a]), :len(categories[b])]  # no out-of-domain
            clipped = np.clip(released, 0, None)
            clipped /= clipped.sum()
            true, gen, tst = (_table(f, a, b, categories) for f in (train, synthetic, test))
            rows.append(dict(term=name, pair=f'{a} x {b}', cells=true.size,
                             tv_release=0.5 * np.abs(released - true).sum(),
                             tv_release_clipped=0.5 * np.abs(clipped - true).sum(),
                             tv_generated=0.5 * np.abs(gen - true).sum(),
                             tv_generated_vs_test=0.5 * np.abs(gen - tst).sum(),
                             tv_train_vs_test=0.5 * np.abs(true - tst).sum()))
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--epsilon', type=float, default=float('inf'))
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--kwargs', default='{}', help='JSON of extra DPHPSynthesizer arguments')
    parser.add_argument('--out', required=True, help='CSV of the pair rows; .json: the scores')
    args = parser.parse_args(argv)

    import torch

    from sdv_dpkme import DPHPSynthesizer
    from sdv_dpkme.engines import kme

    torch.set_num_threads(1)
    train, test, metadata, domain = cq.load_split(0)
    declaration = adult._declaration(domain, 'plain', target=True)
    captured = _capture_objectives(kme)
    synth = DPHPSynthesizer(metadata, epsilon=args.epsilon, delta=cq.DELTA, random_state=args.seed,
                            verbose=False, **declaration, **json.loads(args.kwargs))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        start = time.perf_counter()
        synth.fit({cq.TABLE: train})
        fit_s = time.perf_counter() - start
        synthetic = synth.sample(len(train))[cq.TABLE]
    rows = pair_rows(captured, declaration['known_categories'], train, synthetic, test)
    rows.to_csv(args.out, index=False)
    print(rows.round(4).to_string())
    scores, details = cq.score(test, synthetic, metadata, domain, ['LogisticRegression'], ())
    scores.update(epsilon=args.epsilon, kwargs=args.kwargs, fit_s=fit_s, details=details,
                  selected_pairs=synth._model.loss_values.attrs.get('selected_pairs'))
    Path(args.out).with_suffix('.json').write_text(json.dumps(scores, default=str, indent=1))
    print({k: scores[k] for k in ('quality', 'column_shapes', 'column_pair_trends',
                                  'tstr_roc_auc', 'tstr_pr_auc', 'fit_s')})
    print(scores['worst_pairs'])


if __name__ == '__main__':
    main()
