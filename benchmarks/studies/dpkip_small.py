"""DP-KIP on a small table: 4,000 Adult rows at epsilon = 1 distilled into 20 rows (issue 40).

The case "tried as a new user would": the Adult schema's public bounds and categories declared
(``domain=``), ``target_column='income'``, every other argument default, epsilon = 1,
delta = 1e-5. For each seed s: 4,000 rows drawn from the Adult train split of
``benchmarks/studies/adult.py`` (``sample(4000, random_state=s)``), a fit with ``random_state=s``
(fresh privacy noise), a logistic regression (``sdv_dpkme.evaluation.tstr``'s, sklearn defaults,
max_iter 1000) trained on the 20 distilled rows (``get_distilled_data()``) and scored (ROC-AUC,
PR-AUC) on the whole real Adult test split (9,769 rows).

    python benchmarks/studies/dpkip_small.py                         # the plain user path, seeds 0-2
    python benchmarks/studies/dpkip_small.py --kwargs '{"steps": 50}' --seeds 0,1,2,3,4
    python benchmarks/studies/dpkip_small.py --record --label plain  # append to results/dpkip_small.jsonl
    python benchmarks/studies/dpkip_small.py --report                # its section of results/dpkip.md

Results: results/dpkip_small.jsonl (one line per run) and the section of results/dpkip.md.
"""

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

for _name in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_name, '1')

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402
from sdv_dpkme import DPKIPSynthesizer  # noqa: E402
from sdv_dpkme.evaluation.tstr import tstr_scores  # noqa: E402

ROWS = 4000
EPSILON = 1.0
DELTA = 1e-5
JSONL = harness.RESULTS / 'dpkip_small.jsonl'
REPORT = harness.RESULTS / 'dpkip.md'
START, END = '<!-- section:dpkip-small -->', '<!-- /section:dpkip-small -->'
RESOLVED = ('steps', 'sampling_rate', 'clip_norm', 'learning_rate', 'regularization',
            'class_balance', 'support_init')


def run(seed, kwargs, data, rows=ROWS, epsilon=EPSILON, declare='plain'):
    train, test, metadata, domain = data
    private = train.sample(rows, random_state=seed).reset_index(drop=True)
    categories = domain['known_categories']
    categorical = [c for c in categories if c != 'income']
    numerical = [c for c in train.columns if c not in categories]
    start = time.perf_counter()
    # plain: bounds and categories, as a new user declares them; domain: the bundled domain
    # (it adds scale hints: log for the capital columns)
    declared = harness.declaration(domain, 'bundled' if declare == 'domain' else 'plain',
                                   target=True)
    synth = harness.make(DPKIPSynthesizer, metadata, epsilon, delta=DELTA, verbose=False,
                         random_state=seed, **declared, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'adult': private})
        fit_s = time.perf_counter() - start
        table = tstr_scores(synth.get_distilled_data(), test, 'income', categorical, numerical,
                            categories=categories, classifiers=['LogisticRegression'])
    report = synth.get_privacy_report()
    resolved = synth.resolved_parameters()
    row = table.iloc[0]
    return {'seed': seed, 'kwargs': kwargs, 'rows': rows, 'epsilon': epsilon, 'declare': declare,
            'roc_auc': float(row['roc_auc']), 'pr_auc': float(row['pr_auc']),
            'fit_s': round(fit_s, 1), 'epsilon_spent': float(report.epsilon_spent),
            'resolved': {k: v for k, v in resolved.items() if k in RESOLVED},
            'sigma_over_c': {r.name: round(r.noise_multiplier, 3) for r in report.releases},
            'accountant_name': accountant_name(report.accountant)}


def report():
    """Rewrite the small-table section of results/dpkip.md from the JSONL, one row per label."""
    runs = harness.read_jsonl(JSONL)
    groups = {}
    for run_ in runs:
        groups.setdefault(run_['label'], []).append(run_)
    lines = [START, '## Small table: 4,000 Adult rows at ε = 1, 20 distilled rows (issue 40)', '',
             'Written by `benchmarks/studies/dpkip_small.py --report` from `results/dpkip_small.jsonl`. '
             'Per seed s: 4,000 rows of the Adult train split (`sample(4000, random_state=s)`), '
             'ε = 1, δ = 1e-5, `random_state=s`, fresh privacy noise, `support_per_class=10` '
             '(the 2 income classes: 20 rows); a logistic regression trained on '
             '`get_distilled_data()`, ROC-AUC / PR-AUC on the whole Adult test split (9,769 '
             'rows). "plain": bounds and categories as `known_min_max_values` / '
             '`known_categories`, the target declared, every other argument default. '
             'Accountant: the one of the commit named (σ/C = the `kip_gradients` noise '
             'multiplier).', '',
             '| label | commit | arguments | seeds | LR ROC per seed | mean ROC | mean PR | '
             'steps / q / σ | fit s | accountant | date |',
             '|---|---|---|---|---|---|---|---|---|---|---|']
    for label, group in groups.items():
        rocs = [r['roc_auc'] for r in group]
        first = group[0]
        resolved = first.get('resolved', {})
        sigma = first.get('sigma_over_c', {}).get('kip_gradients')
        lines.append(
            f"| {label} | {first['commit']} | `{json.dumps(first['kwargs'])}` {first['declare']} | "
            f"{', '.join(str(r['seed']) for r in group)} | "
            f"{', '.join(f'{v:.3f}' for v in rocs)} | **{np.mean(rocs):.3f}** | "
            f"{np.mean([r['pr_auc'] for r in group]):.3f} | {resolved.get('steps', '?')} / "
            f"{resolved.get('sampling_rate', float('nan')):.4g} / {sigma} | "
            f"{np.mean([r['fit_s'] for r in group]):.1f} | {first.get('accountant_name', '')} | "
            f"{first['date'][:10]} |")
    lines.append(END)
    section = '\n'.join(lines)
    text = REPORT.read_text(encoding='utf-8')
    if START in text:
        text = text[:text.index(START)] + section + text[text.index(END) + len(END):]
    else:
        head, _, rest = text.partition('\n\n## ')
        text = head + '\n\n' + section + '\n\n## ' + rest
    REPORT.write_text(text, encoding='utf-8')
    print(f'wrote the small-table section of {REPORT}')


def accountant_name(text):
    """Short name of the accountant that a privacy report's ``accountant`` text describes."""
    pld = 'PLD' in text or 'privacy loss distribution' in text.lower()
    return 'PLD (dp-accounting)' if pld else 'RDP / exact Gaussian (before PLD)'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--kwargs', default='{}', help='JSON of flat DPKIPSynthesizer settings')
    parser.add_argument('--seeds', default='0,1,2')
    parser.add_argument('--rows', type=int, default=ROWS)
    parser.add_argument('--epsilon', type=float, default=EPSILON)
    parser.add_argument('--declare', choices=('plain', 'domain'), default='plain')
    parser.add_argument('--record', action='store_true', help='append the runs to the JSONL')
    parser.add_argument('--label', default='')
    parser.add_argument('--report', action='store_true', help='only rewrite the report section')
    args = parser.parse_args()
    if args.report:
        return report()
    torch.set_num_threads(1)
    data = harness.adult_split()
    kwargs = json.loads(args.kwargs)
    commit = harness.git_commit()
    results = []
    for seed in [int(s) for s in args.seeds.split(',')]:
        result = run(seed, kwargs, data, args.rows, args.epsilon, args.declare)
        result.update(label=args.label, commit=commit,
                      date=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()))
        results.append(result)
        print(json.dumps(result), flush=True)
        if args.record:
            harness.append_jsonl(JSONL, result)
    rocs = [r['roc_auc'] for r in results]
    print(f'{args.label} {args.declare} {kwargs} rows {args.rows} eps {args.epsilon}: LR ROC mean '
          f'{np.mean(rocs):.3f} per seed {[round(r, 3) for r in rocs]} PR mean '
          f'{np.mean([r["pr_auc"] for r in results]):.3f}', flush=True)


if __name__ == '__main__':
    sys.exit(main())
