"""Does private domain discovery cost utility? DP-HP on Adult, declared vs discovered domains.

Two arms at the same budget (ε = 1, δ = 1e-5), same seeds, same default model:

* *declared*: the public Adult domain (bounds and category lists, ``load_adult_sample()``);
* *discovered*: nothing declared; every modelled column's domain is found at fit by one DP release
  that spends ``domain_budget_share`` (default 0.1) of the budget, and 10% of δ for the category
  threshold.

Each fit runs in a fresh spawned process on the seeded 80/20 split of the full Adult table; as
many synthetic rows as training rows are scored against the real test split: TSTR (the 12
DP-MERF/DP-HP classifiers, mean ROC-AUC / PR-AUC, target ``income``) and the SDMetrics quality
score. The bar: |discovered − declared| <= 0.02 for each of the three means.

Usage::

    nice -n 10 python benchmarks/studies/adult_discovery.py            # 2 arms x 3 seeds
    python benchmarks/studies/adult_discovery.py --quick               # smoke run, _quick outputs
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402
from benchmarks.harness import DELTA, TARGET  # noqa: E402

EPSILON = 1.0
BAR = 0.02
ARMS = ('declared', 'discovered')
METRICS = (('tstr_roc_auc', 'TSTR ROC-AUC'), ('tstr_pr_auc', 'TSTR PR-AUC'),
           ('quality', 'SDMetrics quality'))
QUICK = dict(rows=10_000, steps=50, classifiers=['LogisticRegression', 'XGBClassifier'])


def run_task(task):
    """Fit + sample + score one (arm, seed); runs in a freshly spawned process."""
    warnings.filterwarnings('ignore', category=FutureWarning)
    warnings.filterwarnings('ignore', category=DeprecationWarning)
    from sdv_dpkme import DPHPSynthesizer
    from sdv_dpkme.domain import DomainDiscoveryWarning
    from sdv_dpkme.evaluation import evaluate

    train, test, metadata, domain = harness.adult_split(QUICK['rows'] if task['quick'] else None)
    declared = task['arm'] == 'declared'
    kwargs = dict(known_min_max_values=domain['known_min_max_values'],
                  known_categories=domain['known_categories']) if declared else {}
    synth = harness.make(DPHPSynthesizer, metadata, EPSILON, delta=DELTA, target_column=TARGET,
                         random_state=task['seed'], verbose=False,
                         domain_budget_share=task['share'], **kwargs, **task['model_kwargs'])
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always', DomainDiscoveryWarning)
        synth.fit({'adult': train})
    fit_s = time.perf_counter() - start
    table = synth.sample(len(train))['adult']
    report = synth.get_privacy_report()
    result = evaluate(test, table, metadata, target_column=TARGET,
                      categories=domain['known_categories'], alphas=(),
                      classifiers=task['classifiers'])
    releases = report.to_frame()
    discovery = releases.loc[releases['name'] == 'domain_discovery']
    row = {
        'arm': task['arm'], 'seed': task['seed'], 'n_train': len(train), 'fit_s': fit_s,
        'quality': float(result['quality']),
        'tstr_roc_auc': float(result['tstr_roc_auc']),
        'tstr_pr_auc': float(result['tstr_pr_auc']),
        'epsilon_spent': float(report.epsilon_spent),
        'gaussian_delta': float(report.gaussian_delta),
        'reserved_delta': float(sum(r.delta for r in report.reserved_delta)),
        'discovery_epsilon_alone': (float(discovery.iloc[0]['details']['epsilon_alone'])
                                    if len(discovery) else np.nan),
        'discovered': '; '.join(f'{c}: {v}' for c, v in
                                (synth._discovery.summary.items() if synth._discovery else [])),
        'warnings': len([w for w in caught if issubclass(w.category, DomainDiscoveryWarning)]),
    }
    return row


def write_markdown(frame, path, args, elapsed):
    ok = frame.loc[frame['error'].isna()]
    lines = ['# Private domain discovery on UCI Adult (DP-HP, ε = 1)'
             + (' — QUICK SMOKE RUN (not a result)' if args.quick else ''), '']
    lines.append(f'Generated {_dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} by '
                 f'`python benchmarks/studies/adult_discovery.py{" " + " ".join(sys.argv[1:]) if len(sys.argv) > 1 else ""}`'
                 + (f' in {elapsed / 60:.1f} min.' if elapsed else ' from the CSV of earlier runs.')
                 + ' CPU: 2 cores shared with other work (fit times are indicative only).')
    lines += ['', '## Protocol', '',
              f'- Full Adult, seeded 80/20 split (train {int(ok["n_train"].max()) if len(ok) else "?"} rows); '
              f'`DPHPSynthesizer(epsilon={EPSILON:g}, delta={DELTA:g}, target_column="income", '
              f'random_state=seed)`, default model{", " + str(args.model_kwargs) if args.model_kwargs else ""}; '
              f'seeds {args.seed_list}; the privacy noise is always fresh.',
              '- *declared*: `known_min_max_values` + `known_categories` = the public Adult domain.',
              f'- *discovered*: nothing declared; `domain_budget_share={args.share:g}` of the budget '
              '(precision share) and 10% of δ go to one discovery release.',
              '- Synthetic rows = train rows; TSTR = mean over the '
              + ('12 DP-MERF/DP-HP classifiers' if not args.quick else ', '.join(QUICK['classifiers']))
              + ' trained on synthetic, tested on the real test split; quality = SDMetrics '
              'QualityReport vs the real test split.', '']
    lines += ['## Results (mean ± std over seeds)', '',
              '| arm | runs | ' + ' | '.join(label for _, label in METRICS)
              + ' | ε spent | discovery ε alone |', '|' + '---|' * (len(METRICS) + 4)]
    for arm in ARMS:
        group = frame.loc[frame['arm'] == arm]
        good = group.loc[group['error'].isna()]
        cells = [harness.mean_std(good[m]) for m, _ in METRICS]
        spent = f'{good["epsilon_spent"].max():.4g}' if len(good) else '–'
        alone = (f'{good["discovery_epsilon_alone"].mean():.3g}'
                 if len(good) and good['discovery_epsilon_alone'].notna().any() else '–')
        lines.append(f'| {arm} | {len(good)}/{len(group)} | ' + ' | '.join(cells)
                     + f' | {spent} | {alone} |')
    lines += ['', f'## Bar: |discovered − declared| <= {BAR:g} (difference of the means)', '',
              '| metric | declared | discovered | difference | verdict |', '|---|---|---|---|---|']
    for metric, label in METRICS:
        means = {arm: ok.loc[ok['arm'] == arm, metric].mean() for arm in ARMS}
        if any(pd.isna(v) for v in means.values()):
            lines.append(f'| {label} | – | – | – | NOT RUN |')
            continue
        diff = means['discovered'] - means['declared']
        lines.append(f'| {label} | {means["declared"]:.3f} | {means["discovered"]:.3f} | '
                     f'{diff:+.3f} | {"PASS" if abs(diff) <= BAR else "FAIL"} |')
    lines += ['', '## Per run', '', '| arm | seed | ROC-AUC | PR-AUC | quality | fit s | ε spent | '
              'discovered domains / error |', '|---|---|---|---|---|---|---|---|']
    for _, row in frame.iterrows():
        if pd.notna(row.get('error')):
            lines.append(f'| {row["arm"]} | {row["seed"]} | – | – | – | – | – | ERROR: '
                         f'{str(row["error"]).splitlines()[0][:150]} |')
            continue
        lines.append(f'| {row["arm"]} | {row["seed"]} | {row["tstr_roc_auc"]:.3f} | '
                     f'{row["tstr_pr_auc"]:.3f} | {row["quality"]:.3f} | {row["fit_s"]:.0f} | '
                     f'{row["epsilon_spent"]:.4g} | '
                     f'{row["discovered"] if isinstance(row["discovered"], str) and row["discovered"] else "(all declared)"} |')
    lines.append('')
    Path(path).write_text('\n'.join(lines), encoding='utf-8')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', default='0,1,2')
    parser.add_argument('--share', type=float, default=0.1, help='domain_budget_share')
    parser.add_argument('--out', default=str(harness.RESULTS))
    parser.add_argument('--quick', action='store_true', help='10,000 train rows, 50 steps, seed 0, 2 classifiers')
    parser.add_argument('--resume', action='store_true',
                        help='keep the successful runs of an earlier CSV, redo the rest')
    parser.add_argument('--report-only', action='store_true',
                        help='rewrite the markdown from the existing CSV, run nothing')
    args = parser.parse_args(argv)
    args.seed_list = [0] if args.quick else [int(s) for s in args.seeds.split(',') if s.strip()]
    args.model_kwargs = {'steps': QUICK['steps']} if args.quick else {}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = 'adult_discovery_quick' if args.quick else 'adult_discovery'

    tasks = [dict(arm=arm, seed=seed, share=args.share, quick=args.quick,
                  model_kwargs=args.model_kwargs,
                  classifiers=QUICK['classifiers'] if args.quick else None)
             for seed in args.seed_list for arm in ARMS]
    started, rows = time.perf_counter(), []
    if args.report_only:
        frame = pd.read_csv(out / f'{stem}.csv')
        frame = frame.astype({'seed': int}).sort_values(['seed', 'arm'], kind='stable')
        write_markdown(frame.reset_index(drop=True), out / f'{stem}.md', args, 0.0)
        return 0
    if args.resume and (out / f'{stem}.csv').exists():
        earlier = pd.read_csv(out / f'{stem}.csv')
        earlier = earlier.loc[earlier['error'].isna()]
        rows = earlier.to_dict('records')
        done = {(r['arm'], int(r['seed'])) for r in rows}
        tasks = [t for t in tasks if (t['arm'], t['seed']) not in done]
    for index, task in enumerate(tasks, 1):
        row, _ = harness.attempt(run_task, task, ('arm', 'seed'))
        rows.append(row)
        print(f'[{index}/{len(tasks)}] {task["arm"]} seed={task["seed"]}: '
              + (f'roc={row["tstr_roc_auc"]:.3f} pr={row["tstr_pr_auc"]:.3f} '
                 f'quality={row["quality"]:.3f} fit={row["fit_s"]:.0f}s'
                 if row['error'] is None else f'FAILED {row["error"]}'), flush=True)
        pd.DataFrame(rows).to_csv(out / f'{stem}.csv', index=False)
    frame = pd.DataFrame(rows)
    frame['seed'] = frame['seed'].astype(int)
    frame = frame.sort_values(['seed', 'arm'], kind='stable').reset_index(drop=True)
    write_markdown(frame, out / f'{stem}.md', args, time.perf_counter() - started)
    print(f'wrote {out / stem}.md and .csv')
    return 1 if frame['error'].notna().any() else 0


if __name__ == '__main__':
    sys.exit(main())
