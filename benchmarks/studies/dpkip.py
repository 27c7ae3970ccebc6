"""DP-KIP against DP-HP and DP-MERF on UCI Adult and KDD Census (TSTR, ROC-AUC / PR-AUC).

Every method is fitted on the FULL train split (Adult: the seeded 80/20 stratified split of
``adult.py``, 39,073 rows; Census: the official census-income.data, 199,523 rows) with the
public domain declared and every other argument at its default (δ = 1e-5, ``random_state`` =
seed; the privacy noise is always fresh). Two protocols, both with the 12 DP-MERF / DP-HP
classifiers of ``sdv_dpkme.evaluation.tstr`` (mean ROC-AUC / PR-AUC over the 12 on real test
rows; positive class = the second public class, '>50K' / '50000+'):

* ``paper`` (DP-KIP only, the DP-KIP paper's protocol): the classifiers are trained on the
  distilled rows, ``synth.get_distilled_data()``.
* ``tstr`` (the project's protocol, every method): trained on ``synth.sample(N)``,
  N = min(train rows, ``--tstr-rows``, default 20,000). For DP-KIP that repeats the distilled
  rows (its ``DistilledDataWarning`` is suppressed here).

Test rows: Adult, the whole 20 % test split (9,769 rows); Census, a fixed stratified subsample
of 20,000 rows of census-income.test (seed 0; the same rows for every method).

Every fit runs in a freshly spawned process (``harness.attempt``) with one torch
thread and ``n_jobs=1`` classifiers; peak memory is that process's VmHWM after fit + sample
(data loading included). Raw results go to ``results/dpkip.jsonl`` (one line per finished run,
appended as it ends; reruns skip what is there) and ``results/dpkip_classifiers.csv``; the
markdown ``results/dpkip.md`` is rewritten after every run and by ``--report-only``.

    python benchmarks/studies/dpkip.py --quick                  # smoke run (2,000 rows, 1 seed)
    python benchmarks/studies/dpkip.py --deadline 05:20         # full run; no run starts that would end later
    python benchmarks/studies/dpkip.py --report-only            # rebuild the markdown from the JSONL
"""

import argparse
import datetime as _dt
import json
import os
import sys
import time
import warnings
from pathlib import Path

# one BLAS thread per run (the 2 cores are shared); set before numpy loads, also in the children
for _name in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_name, '1')

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402
from benchmarks.harness import BENCH, DELTA  # noqa: E402

TARGET = harness.TARGET
TSTR_ROWS = 20_000
QUICK_ROWS = 2_000
QUICK_CLASSIFIERS = ('LogisticRegression', 'DecisionTreeClassifier', 'XGBClassifier')
#: quick-mode model kwargs; a key that the class does not take is dropped (its API may move)
QUICK_KWARGS = {'dpkip': {'steps': 10}, 'dphp': {'steps': 50}, 'dpmerf': {'steps': 50},
                'dpmerf_mb': {'steps': 50, 'minibatch_size': 500}}

#: method key -> (label, class name)
METHODS = {'dpkip': ('DP-KIP', 'DPKIPSynthesizer'), 'dphp': ('DP-HP', 'DPHPSynthesizer'),
           'dpmerf': ('DP-MERF', 'DPMERFSynthesizer'),
           'dpmerf_mb': ('DP-MERF minibatch', 'DPMERFSynthesizer')}
#: arguments a method key adds to the defaults (DP-MERF's minibatch mode: DP-SGD-like releases)
METHOD_KWARGS = {'dpmerf_mb': {'releases': 'minibatch'}}
DATASETS = {'adult': 'Adult', 'census': 'Census'}
#: the DP-KIP paper (Vinaroz & Park, TMLR 2024): (method, dataset) -> (ROC-AUC, PR-AUC) at ε = 1
PAPER = {('dpkip', 'adult'): (0.662, 0.365), ('dpkip', 'census'): (0.766, 0.408),
         ('dphp', 'adult'): (0.688, 0.632), ('dphp', 'census'): (0.699, 0.328)}
BAR_EPSILON = 1.0
#: the research code kept this fraction of the majority class of both tables BEFORE its
#: train/test split (algorithms.md §3.5), so its test splits hold more positives than ours
PAPER_UNDERSAMPLE = 0.4
#: rough seconds per run on the 2 shared cores, replaced by measured means once runs exist
RUN_SECONDS = {('dpkip', 'adult'): 60, ('dpkip', 'census'): 560, ('dphp', 'adult'): 240,
               ('dphp', 'census'): 720, ('dpmerf', 'adult'): 200, ('dpmerf', 'census'): 600,
               ('dpmerf_mb', 'adult'): 200, ('dpmerf_mb', 'census'): 600}


# --------------------------------------------------------------------------- child side
def load_data(dataset, quick):
    """``(train, test, metadata, domain)``; the Census test rows are a fixed stratified subsample."""
    split = harness.adult_split if dataset == 'adult' else harness.census_split
    train, test, metadata, domain = split()
    if quick:
        train = train.sample(n=QUICK_ROWS, random_state=0).reset_index(drop=True)
        test = test.sample(n=QUICK_ROWS, random_state=0).reset_index(drop=True)
    return train, test, metadata, domain


def undersampled_test(test, positive, keep=PAPER_UNDERSAMPLE, seed=0):
    """The test rows with the negatives thinned to ``keep`` (fixed seed): the positive share of
    the paper's test splits, so its PR-AUC can be read against ours. Test rows only: the private
    train split and the fit are untouched."""
    negatives = test[test[TARGET] != positive]
    kept = negatives.sample(frac=keep, random_state=seed)
    return pd.concat([test[test[TARGET] == positive], kept]).sort_index().reset_index(drop=True)


def _table(result):
    return next(iter(result.values())) if isinstance(result, dict) else result


def _score(table, test, metadata, domain, classifiers):
    from sdv_dpkme.evaluation._common import infer_column_types
    from sdv_dpkme.evaluation.tstr import tstr_scores

    categorical, numerical = infer_column_types(metadata)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        scores = tstr_scores(table, test, TARGET, categorical, numerical,
                             categories=domain['known_categories'], classifiers=classifiers,
                             random_state=0, n_jobs=1)
    seconds = time.perf_counter() - start
    assert scores.attrs['positive_class'] in ('>50K', '50000+'), scores.attrs['positive_class']
    return scores, seconds


def run_task(task):
    """Fit one synthesizer and score it under both protocols; runs in a fresh spawned process."""
    warnings.filterwarnings('ignore', category=FutureWarning)
    warnings.filterwarnings('ignore', category=DeprecationWarning)
    import torch

    torch.set_num_threads(1)
    import sdv_dpkme
    from sdv_dpkme.synthesizers.dpkip import DistilledDataWarning

    train, test, metadata, domain = load_data(task['dataset'], task['quick'])
    row = {key: task[key] for key in ('method', 'dataset', 'epsilon', 'seed', 'quick')}
    row.update(n_train=len(train), n_test=len(test), base_mb=harness.vm_hwm_mb(),
               load_start=os.getloadavg()[0])
    cls = getattr(sdv_dpkme, METHODS[task['method']][1])
    settings = dict(QUICK_KWARGS.get(task['method'], {})) if task['quick'] else {}
    settings.update(METHOD_KWARGS.get(task['method'], {}))
    synth = harness.make(cls, metadata, task['epsilon'], delta=DELTA, domain=domain,
                         target_column=TARGET, random_state=task['seed'], verbose=False,
                         **settings)
    start = time.perf_counter()
    synth.fit({next(iter(metadata.tables)): train})
    row['fit_s'] = time.perf_counter() - start
    n_rows = min(len(train), task['tstr_rows'])
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DistilledDataWarning)  # DP-KIP repeats its rows
        tables = {'tstr': _table(synth.sample(n_rows))}
    row['sample_s'] = time.perf_counter() - start
    if task['method'] == 'dpkip':
        tables['paper'] = synth.get_distilled_data()
    row['peak_mb'] = harness.vm_hwm_mb()  # imports + data + fit + sample
    row['epsilon_spent'] = float(synth.get_privacy_report().epsilon_spent)
    row['parameters'] = json.dumps(synth.get_parameters(), default=str, sort_keys=True)
    classifiers = []
    for protocol, table in tables.items():
        scores, seconds = _score(table, test, metadata, domain, task['classifiers'])
        per = scores.loc[scores['classifier'] != 'mean']
        row[f'{protocol}_rows'] = len(table)
        row[f'{protocol}_distinct_rows'] = len(table.drop_duplicates())
        row[f'{protocol}_roc_auc'] = float(per['roc_auc'].mean())
        row[f'{protocol}_pr_auc'] = float(per['pr_auc'].mean())
        row[f'{protocol}_n_ok'] = int(per['roc_auc'].notna().sum())
        row[f'{protocol}_eval_s'] = seconds
        classes = table[TARGET].value_counts()
        row[f'{protocol}_class_counts'] = json.dumps({str(k): int(v) for k, v in classes.items()})
        for entry in per.to_dict('records'):
            classifiers.append({**{k: task[k] for k in ('method', 'dataset', 'epsilon', 'seed')},
                                'protocol': protocol, **entry})
    if 'paper' in tables:  # the same distilled rows on a test split with the paper's share
        thin = undersampled_test(test, domain['known_categories'][TARGET][1])
        scores, _ = _score(tables['paper'], thin, metadata, domain, task['classifiers'])
        per = scores.loc[scores['classifier'] != 'mean']
        row['paper_us_roc_auc'] = float(per['roc_auc'].mean())
        row['paper_us_pr_auc'] = float(per['pr_auc'].mean())
        row['paper_us_positive_share'] = float(
            (thin[TARGET] == domain['known_categories'][TARGET][1]).mean())
    row['load_end'] = os.getloadavg()[0]
    harness.shutdown_loky()
    return row, classifiers


# -------------------------------------------------------------------------- parent side
def _key(method, dataset, epsilon, seed):
    return (method, dataset, float(epsilon), int(seed))


def _priority(task, first_seed):
    """Run order, so that a cut (``--deadline``) loses the least: the bar (DP-KIP at ε = 1)
    first, then the peers at ε = 1 on Adult, DP-KIP's other ε on Adult (cheap), the slow Census
    runs with one seed, their other seeds (peers first cut), then the peers at other ε."""
    kip, bar = task['method'] == 'dpkip', task['epsilon'] == BAR_EPSILON
    census, extra_seed = task['dataset'] == 'census', task['seed'] != first_seed
    if kip and bar:
        return 0
    if bar and not census:
        return 1
    if kip and not census:
        return 2
    if bar and not extra_seed:
        return 3
    if kip and not extra_seed:
        return 4
    if bar:
        return 5
    return 6 if kip else 7


def build_tasks(args):
    tasks = []
    for epsilon in args.epsilon_list:
        for method in args.method_list:
            if method != 'dpkip' and epsilon != BAR_EPSILON and not args.peers_all_epsilons:
                continue
            for dataset in args.dataset_list:
                for seed in args.seed_list:
                    tasks.append(dict(method=method, dataset=dataset, epsilon=epsilon, seed=seed,
                                      quick=args.quick, tstr_rows=args.tstr_rows,
                                      classifiers=args.classifiers))
    tasks.sort(key=lambda t: _priority(t, args.seed_list[0]))  # stable: input order within
    return tasks


def _estimate(task, done):
    same = [r['wall_s'] for r in done if r['method'] == task['method']
            and r['dataset'] == task['dataset'] and 'wall_s' in r]
    if same:
        return float(np.mean(same))
    return RUN_SECONDS[(task['method'], task['dataset'])] / (5 if task['quick'] else 1)


def read_raw(path):
    """``(runs, sessions)``; a ``superseded`` record moves the earlier runs of its key out of
    ``runs`` (into the sessions' ``superseded`` list, for the report), so they are redone."""
    runs, sessions, superseded = [], [], []
    if path.exists():
        for line in path.read_text(encoding='utf-8').splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            if record.get('kind') == 'session':
                sessions.append(record)
            elif record.get('kind') == 'superseded':
                key = _key(*record['key'])
                gone = [r for r in runs if _key(r['method'], r['dataset'], r['epsilon'],
                                                r['seed']) == key]
                runs = [r for r in runs if r not in gone]
                superseded += [{**r, 'superseded_because': record['reason']} for r in gone]
            else:
                runs.append(record)
    if superseded:
        sessions.append({'kind': 'superseded_runs', 'runs': superseded})
    return runs, sessions


# ------------------------------------------------------------------------------ report
def _ms(values, fmt='{:.3f}'):
    return harness.mean_std([v for v in values if v is not None], fmt)


def _summary(frame):
    rows = []
    for (method, dataset, epsilon), group in frame.groupby(['method', 'dataset', 'epsilon'],
                                                           sort=False):
        paper = (_ms(group['paper_roc_auc']), _ms(group['paper_pr_auc'])) \
            if method == 'dpkip' else ('–', '–')
        rows.append([METHODS[method][0], DATASETS[dataset], f'{epsilon:g}', len(group),
                     ', '.join(str(int(s)) for s in sorted(group['seed'])), *paper,
                     _ms(group['tstr_roc_auc']), _ms(group['tstr_pr_auc']),
                     _ms(group['fit_s'], '{:.1f}'), _ms(group['peak_mb'], '{:.0f}'),
                     harness.largest(group['epsilon_spent'], '{:.4g}')])
    return rows


def _bars(frame):
    lines = []
    for dataset in DATASETS:
        roc_bar, pr_bar = PAPER[('dpkip', dataset)]
        group = frame.loc[(frame['method'] == 'dpkip') & (frame['dataset'] == dataset)
                          & (frame['epsilon'] == BAR_EPSILON)]
        if group.empty:
            lines.append([DATASETS[dataset], f'> {roc_bar} / > {pr_bar}', '–', '–', 'NOT RUN'])
            continue
        for protocol in ('paper', 'paper_us', 'tstr'):
            if f'{protocol}_pr_auc' not in group or group[f'{protocol}_pr_auc'].isna().all():
                continue
            roc, pr = group[f'{protocol}_roc_auc'].mean(), group[f'{protocol}_pr_auc'].mean()
            verdict = 'PASS' if roc > roc_bar and pr > pr_bar else 'FAIL'
            parts = []
            if not roc > roc_bar:
                parts.append('ROC')
            if not pr > pr_bar:
                parts.append('PR')
            detail = f' ({" and ".join(parts)} not above)' if parts else ''
            seeds = ', '.join(f'{a:.3f}/{b:.3f}' for a, b in
                              zip(group[f'{protocol}_roc_auc'], group[f'{protocol}_pr_auc']))
            label = {'paper': 'paper protocol (distilled rows) — the bar',
                     'paper_us': 'paper protocol, test negatives thinned to '
                                 f'{PAPER_UNDERSAMPLE:g} (the paper\'s positive share)',
                     'tstr': 'TSTR protocol (sample(N)), for information'}[protocol]
            lines.append([DATASETS[dataset], f'> {roc_bar} / > {pr_bar}', label,
                          f'{roc:.3f} / {pr:.3f} (n={len(group.dropna(subset=[f"{protocol}_pr_auc"]))}; '
                          f'per seed {seeds})',
                          verdict + detail if protocol != 'tstr' else
                          ('above' if verdict == 'PASS' else 'not above') + detail])
    return lines


def _classifier_table(classifiers, frame):
    if classifiers.empty:
        return []
    sub = classifiers.loc[(classifiers['epsilon'] == BAR_EPSILON)]
    rows = []
    order = list(dict.fromkeys(sub['classifier']))
    combos = [(m, d, p) for m in METHODS for d in DATASETS for p in ('paper', 'tstr')
              if ((sub['method'] == m) & (sub['dataset'] == d) & (sub['protocol'] == p)).any()]
    header = ['classifier'] + [f'{METHODS[m][0]} {DATASETS[d]} {p}' for m, d, p in combos]
    for name in order:
        row = [name]
        for m, d, p in combos:
            part = sub.loc[(sub['method'] == m) & (sub['dataset'] == d) & (sub['protocol'] == p)
                           & (sub['classifier'] == name)]
            roc = pd.to_numeric(part['roc_auc'], errors='coerce')
            failed = int(roc.isna().sum())
            cell = f'{roc.mean():.3f}' if roc.notna().any() else '–'
            row.append(cell + (f' ({failed} failed)' if failed else ''))
        rows.append(row)
    return header, rows


def _sizes(frame, dataset, column):
    if frame.empty or column not in frame:
        return '?'
    values = frame.loc[frame['dataset'] == dataset, column]
    values = sorted({int(v) for v in values.dropna()})
    return '/'.join(f'{v:,}' for v in values) or '?'


def _standing(frame):
    """The paragraph on where DP-KIP stands against DP-HP, from the measured means at ε = 1."""
    def mean(method, dataset, column, epsilon=BAR_EPSILON):
        values = frame.loc[(frame['method'] == method) & (frame['dataset'] == dataset)
                           & (frame['epsilon'] == epsilon), column].dropna()
        return f'{values.mean():.3f}' if len(values) else '?'

    def roc(epsilon):
        return ', '.join(f'{DATASETS[d]} {mean("dpkip", d, "paper_roc_auc", epsilon)}'
                         for d in DATASETS)

    def gap(d):
        peer, kip = mean('dphp', d, 'tstr_roc_auc'), mean('dpkip', d, 'paper_roc_auc')
        shown = '?' if '?' in (peer, kip) else f'{float(peer) - float(kip):.3f}'
        return f'{shown} on {DATASETS[d]}'

    gaps = ' and '.join(gap(d) for d in DATASETS)
    pairs = '; '.join(
        f'{DATASETS[d]}: DP-KIP {mean("dpkip", d, "paper_roc_auc")} / '
        f'{mean("dpkip", d, "paper_pr_auc")} from its 20 rows, DP-HP '
        f'{mean("dphp", d, "tstr_roc_auc")} / {mean("dphp", d, "tstr_pr_auc")} from '
        f'{_sizes(frame, d, "tstr_rows")} generated rows' for d in DATASETS)
    return ['## Where DP-KIP stands', '',
            f'At ε = 1 (ROC / PR, 12-classifier means): {pairs}. DP-HP is ahead in ROC by '
            f'{gaps} (DP-MERF alike, table above), and it gives a full synthetic '
            'table with every column\'s distribution. DP-KIP gives a labelled training set of '
            '`support_per_class` rows per class: use it when that is what is wanted (a tiny, '
            'shareable training or teaching set, a seed for a model that is trained on few rows, '
            'or a fast fit: 15-40 s on Adult). Its rows are not a sample of the population, and '
            'repeating them (`sample(N)`) adds nothing the classifiers can use. Its scores move '
            f'little with ε (ROC at ε = 0.3: {roc(0.3)}; at ε = 10: {roc(10.0)}; the per-seed '
            'spread is in the table above): the defaults (100 steps, q = 0.02, chosen at ε = 1) '
            'are not re-tuned per ε, and 20 rows bound what the classifiers can learn.'
            + _against_real_rows(), '']


def _against_real_rows():
    path = BENCH / 'results' / 'dpkip_real_reference.jsonl'
    if not path.exists():
        return ''
    rows = pd.DataFrame([json.loads(line) for line in path.read_text().splitlines() if line])
    full = rows['test'].fillna('full') == 'full' if 'test' in rows else True
    tiny = rows[rows['train'].str.startswith('10 real rows') & full].groupby('dataset')[
        ['roc_auc', 'pr_auc']].mean()
    shown = '; '.join(f'{DATASETS[d]} {r.roc_auc:.3f} / {r.pr_auc:.3f}' for d, r in tiny.iterrows())
    return (' For scale: the same classifiers trained on 10 real rows per class (no privacy) '
            f'score {shown} (ROC / PR, mean of 3 draws).')


def _undersampled_section(frame):
    """DP-KIP's paper-protocol scores on the test split thinned as the paper's was."""
    if 'paper_us_pr_auc' not in frame:
        return []
    runs = frame.dropna(subset=['paper_us_pr_auc'])
    runs = runs[runs['method'] == 'dpkip']
    if not len(runs):
        return []
    body = []
    for (dataset, eps), g in runs.groupby(['dataset', 'epsilon']):
        paper = PAPER.get(('dpkip', dataset)) if eps == BAR_EPSILON else None
        body.append([DATASETS[dataset], f'{eps:g}', ', '.join(str(s) for s in g['seed']),
                     f'{g["paper_us_positive_share"].mean():.3f}',
                     f'{g["paper_roc_auc"].mean():.3f} / {g["paper_pr_auc"].mean():.3f}',
                     f'{g["paper_us_roc_auc"].mean():.3f} / {g["paper_us_pr_auc"].mean():.3f}',
                     '–' if paper is None else f'{paper[0]:.3f} / {paper[1]:.3f}'])
    return ['## DP-KIP on a test split with the paper\'s positive share', '',
            f'The research code kept {PAPER_UNDERSAMPLE:g} of the majority class of Adult and '
            'Census before its train/test split (algorithms.md §3.5), so its test splits hold '
            'more positives than ours (Census: about 14% against 6.2%), and PR-AUC rises with '
            'the positive share (ROC-AUC does not). Here the same distilled rows of each run '
            f'are also scored on our test rows with the negatives thinned to {PAPER_UNDERSAMPLE:g} '
            '(seed 0; test rows only, the fit is unchanged). Runs from before this column have '
            'no entry.', '',
            harness.markdown_table(['dataset', 'ε', 'seeds', 'thinned positive share',
                                   'paper protocol, our test split (ROC / PR)',
                                   'paper protocol, thinned test split (ROC / PR)',
                                   'paper\'s DP-KIP'], body), '']


def _real_reference():
    """Report lines for results/dpkip_real_reference.jsonl (dpkip_real_reference.py), if any."""
    path = BENCH / 'results' / 'dpkip_real_reference.jsonl'
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    body = [[DATASETS[r['dataset']], r['train'], f'{r["rows"]:,}', r.get('test', 'full'),
             f'{r["roc_auc"]:.3f}', f'{r["pr_auc"]:.3f}', f'{r["test_positive_share"]:.3f}']
            for r in rows]
    return ['### Real rows under the same protocol (no privacy; `dpkip_real_reference.py`)', '',
            harness.markdown_table(['dataset', 'classifiers trained on', 'rows', 'test rows',
                                   'ROC', 'PR', 'test positive share (PR of a random guess)'],
                                  body), '',
            'ROC-AUC does not depend on the test split\'s positive share; PR-AUC does (a random '
            'guess scores the share). The paper does not state the positive share of its Census '
            'test split: its research code undersampled the majority class before splitting, '
            'at rates that differ between its tables (algorithms.md §1.6, §2.6, §3.5; seed '
            'Table 15; 0.4 for DP-KIP\'s tables). The rows "negatives thinned to 0.4" are '
            'scored on our test rows with the negatives thinned that way (next section).', '']


def write_report(path, runs, sessions, classifiers, args):
    frame = pd.DataFrame([r for r in runs if not r.get('error')])
    failed = [r for r in runs if r.get('error')]
    superseded = [r for s in sessions if s.get('kind') == 'superseded_runs' for r in s['runs']]
    sessions = [s for s in sessions if s.get('kind') != 'superseded_runs']
    total = sum(s['elapsed_s'] for s in sessions)
    machine = {'cpu': harness.cpu_model(), 'cores': harness.usable_cores(),
               'memory': f'{harness.memory_gb() or 0:.0f} GB'}
    versions = harness.versions()
    versions.pop('ctgan', None)
    versions.pop('sdmetrics', None)
    versions['numpy'] = np.__version__
    versions['pandas'] = pd.__version__
    quick = ' (QUICK smoke run: 2,000 train / 2,000 test rows, 10 / 50 steps, 3 classifiers)' \
        if args.quick else ''
    lines = [
        f'# DP-KIP vs DP-HP / DP-MERF on Adult and Census{quick}', '',
        f'Generated by `benchmarks/studies/dpkip.py` on '
        f'{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC.', '',
        '## Machine and run', '',
        f'- Commands: ' + '; '.join(f'`{s["command"]}` ({s["start"]} → {s["end"]} UTC, '
                                     f'{s["elapsed_s"] / 60:.1f} min)' for s in sessions),
        f'- Total wall time: {total / 60:.1f} min over {len(sessions)} invocation(s); '
        f'{len(frame)} successful run(s), {len(failed)} failed.',
        f'- Machine: {machine["cpu"]}, {machine["cores"]} usable cores, {machine["memory"]} RAM; '
        'CPU only; torch / BLAS threads = 1 and classifier n_jobs = 1 per run, one run at a time. '
        'The 2 cores were SHARED with other engineers\' jobs (tuning, tests) during the run '
        '(1-min load average at the start of each run is in the per-run table; mean of start/end '
        + (f'{frame[["load_start", "load_end"]].mean().mean():.1f}' if len(frame) else '?')
        + '), so fit times are upper bounds of idle-machine times.',
        f'- Versions: python {sys.version.split()[0]}, '
        + ', '.join(f'{k} {v}' for k, v in versions.items()),
        f'- Git commit: {harness.git_commit()} at report time; HEAD when each run ended: '
        + (', '.join(sorted({str(g) for g in frame['git'].dropna()})) if 'git' in frame else '?')
        + ' (recorded from the resumed invocation on; the working tree may hold other engineers\' '
        'uncommitted edits; the DP-KIP parameters actually used are below).', '',
        '## Protocol', '',
        '- Fit on the FULL train split: Adult = the seeded 80/20 stratified split of '
        f'`benchmarks/studies/adult.py` ({_sizes(frame, "adult", "n_train")} train rows); Census = '
        f'official census-income.data ({_sizes(frame, "census", "n_train")} rows, 41 columns). '
        'Public domain declared (`domain=...`), δ = 1e-5, `random_state` = seed, every other '
        'argument default; the privacy noise is fresh in every run. Census is held out: run '
        'with the defaults only, nobody tuned on it.',
        f'- Test rows: Adult, the whole test split ({_sizes(frame, "adult", "n_test")} rows); '
        f'Census, a fixed stratified subsample of {_sizes(frame, "census", "n_test")} rows of '
        'census-income.test (seed 0; the same rows for every method and run).',
        '- Classifiers: the 12 of `sdv_dpkme.evaluation.tstr.DEFAULT_CLASSIFIERS` (sklearn '
        'defaults, random_state 0, n_jobs 1); ROC-AUC / PR-AUC of each on the real test rows, '
        'then the mean over the classifiers that could be fitted. Positive class = the second '
        "public class ('>50K' for Adult, '50000+' for Census; asserted in the script).",
        '- **paper** protocol (DP-KIP only; the DP-KIP paper\'s): classifiers trained on the '
        'distilled rows, `synth.get_distilled_data()`.',
        f'- **TSTR** protocol (the project\'s; every method): classifiers trained on '
        f'`synth.sample(N)`, N = min(train rows, {args.tstr_rows:,}) = '
        f'{_sizes(frame, "adult", "tstr_rows")} (Adult) / {_sizes(frame, "census", "tstr_rows")} '
        '(Census) for every method (the cap bounds the classifier time; `adult.py` uses 39,073 for Adult, so its '
        'DP-HP/DP-MERF numbers are not byte-comparable). For DP-KIP, `sample(N)` repeats the '
        'distilled rows (each about N/m times); its `DistilledDataWarning` is suppressed here.',
        '- Fit time = wall time of `fit`; peak MB = VmHWM of the fresh spawned process that ran '
        'the fit, after fit + sample (imports and data loading included; `base_mb` in the CSV is '
        'the VmHWM before the fit).', '',
    ]
    if len(frame):
        params = frame.loc[frame['method'] == 'dpkip', 'parameters']
        if len(params):
            shown = {k: v for k, v in json.loads(params.iloc[0]).items()
                     if k not in ('domain', 'metadata')}
            lines += ['DP-KIP `get_parameters()` of the first DP-KIP run (domain omitted):', '',
                      '```', json.dumps(shown, indent=1, default=str), '```', '']
            configs = {}
            for _, r in frame.loc[frame['method'] == 'dpkip'].iterrows():
                p = {k: v for k, v in json.loads(r['parameters']).items()
                     if k not in ('epsilon', 'random_state', 'domain') and v is not None}
                configs.setdefault(json.dumps(p, sort_keys=True, default=str), []).append(
                    f'{DATASETS[r["dataset"]]} ε={r["epsilon"]:g} s{int(r["seed"])}')
            if len(configs) > 1:
                lines += ['**The DP-KIP code changed during the run** (other engineers\' commits); '
                          'the runs used these parameter sets (non-None values, ε and '
                          'random_state left out):', '']
                for text, names in configs.items():
                    lines += [f'- `{text}`: {", ".join(names)}']
                lines.append('')
            else:
                lines += ['All DP-KIP runs used these parameters (up to ε and random_state).', '']
        lines += ['## Results (mean ± std over seeds)', '',
                  harness.markdown_table(
                      ['method', 'dataset', 'ε', 'n', 'seeds', 'paper ROC', 'paper PR',
                       'TSTR ROC', 'TSTR PR', 'fit s', 'peak MB', 'ε spent'], _summary(frame)),
                  '', '"paper" = classifiers on the distilled rows (DP-KIP only). For DP-HP / '
                  'DP-MERF the TSTR protocol is also the one of their own papers.', '',
                  f'## The bar: DP-KIP at ε = 1 beats the paper\'s own DP-KIP numbers', '',
                  harness.markdown_table(['dataset', 'bar ROC / PR', 'protocol', 'measured',
                                         'verdict'], _bars(frame)), '',
                  'Reference figures from the DP-KIP paper at ε = 1 (the bar above; DP-HP as listed in its '
                  'Table 5):', '',
                  harness.markdown_table(
                      ['method', 'Adult ROC / PR', 'Census ROC / PR'],
                      [[METHODS[m][0], *[f'{PAPER[(m, d)][0]} / {PAPER[(m, d)][1]}'
                                         for d in DATASETS]] for m in ('dpkip', 'dphp')]), '']
        lines += _real_reference() + _undersampled_section(frame) + _standing(frame)
        table = _classifier_table(classifiers, frame)
        if table:
            lines += [f'## ROC-AUC per classifier at ε = {BAR_EPSILON:g} (mean over seeds)', '',
                      harness.markdown_table(*table), '']
        notes = classifiers.loc[classifiers['note'].fillna('') != ''] \
            if not classifiers.empty else classifiers
        if len(notes):
            counts = notes.groupby(['method', 'dataset', 'protocol', 'classifier', 'note']) \
                .size().reset_index(name='runs')
            lines += ['Classifier notes (failed / not converged):', '',
                      harness.markdown_table(list(counts.columns), counts.values.tolist()), '']
        cols = ['method', 'dataset', 'epsilon', 'seed', 'paper_roc_auc', 'paper_pr_auc',
                'tstr_roc_auc', 'tstr_pr_auc', 'paper_n_ok', 'tstr_n_ok', 'paper_class_counts',
                'tstr_distinct_rows', 'fit_s', 'sample_s', 'peak_mb', 'epsilon_spent', 'wall_s',
                'load_start']
        per_run = []
        for _, r in frame.iterrows():
            per_run.append([
                METHODS[r['method']][0], DATASETS[r['dataset']], f'{r["epsilon"]:g}',
                int(r['seed']), *[harness.fmt(r.get(c), '{:.3f}') for c in cols[4:8]],
                *[harness.fmt(r.get(c), '{:.0f}') for c in cols[8:10]],
                (r.get('paper_class_counts') if isinstance(r.get('paper_class_counts'), str)
                 else '–').replace('|', '/'),
                harness.fmt(r.get('tstr_distinct_rows'), '{:.0f}'),
                harness.fmt(r['fit_s'], '{:.1f}'), harness.fmt(r['sample_s'], '{:.1f}'),
                harness.fmt(r['peak_mb'], '{:.0f}'), harness.fmt(r['epsilon_spent'], '{:.4g}'),
                harness.fmt(r.get('wall_s'), '{:.0f}'), harness.fmt(r.get('load_start'), '{:.1f}')])
        lines += ['## Per run', '',
                  harness.markdown_table(['method', 'dataset', 'ε', 'seed', 'paper ROC',
                                         'paper PR', 'TSTR ROC', 'TSTR PR', 'paper n clf',
                                         'TSTR n clf', 'distilled classes', 'TSTR distinct rows',
                                         'fit s', 'sample s', 'peak MB', 'ε spent', 'run s',
                                         'load'], per_run), '']
    if superseded:
        lines += ['## Superseded runs (redone; not in the tables above)', '']
        lines += [f'- {r["method"]} {r["dataset"]} ε={r["epsilon"]:g} seed={r["seed"]} '
                  f'(HEAD {r.get("git")}, finished {r.get("finished")}): paper '
                  f'{harness.fmt(r.get("paper_roc_auc"), "{:.3f}")} / '
                  f'{harness.fmt(r.get("paper_pr_auc"), "{:.3f}")}, TSTR '
                  f'{harness.fmt(r.get("tstr_roc_auc"), "{:.3f}")} / '
                  f'{harness.fmt(r.get("tstr_pr_auc"), "{:.3f}")}, fit '
                  f'{harness.fmt(r.get("fit_s"), "{:.0f}")} s. Why: {r["superseded_because"]}'
                  for r in superseded]
        lines.append('')
    skipped = [s for sess in sessions for s in sess.get('skipped', [])]
    if failed or skipped:
        lines += ['## Not run / failed', '']
        lines += [f'- FAILED {r["method"]} {r["dataset"]} ε={r["epsilon"]:g} seed={r["seed"]}: '
                  f'{r["error"]}' for r in failed]
        lines += [f'- not started ({s["reason"]}): {s["task"]}' for s in skipped]
        lines.append('')
    path.write_text(_keep_sections(path, '\n'.join(lines)), encoding='utf-8')


def _keep_sections(path, text):
    """``text`` with the hand-written or other scripts' sections of the old file (between
    ``<!-- section:NAME -->`` and ``<!-- /section:NAME -->``, e.g. ``dpkip_small.py``'s) put back
    after the first paragraph, so a regenerated report does not drop them."""
    import re

    old = path.read_text(encoding='utf-8') if path.exists() else ''
    blocks = re.findall(r'<!-- section:([\w-]+) -->.*?<!-- /section:\1 -->', old, flags=re.S)
    kept = [m.group(0) for m in re.finditer(r'<!-- section:([\w-]+) -->.*?<!-- /section:\1 -->',
                                             old, flags=re.S)]
    if not blocks:
        return text
    head, _, rest = text.partition('\n\n## ')
    return head + '\n\n' + '\n\n'.join(kept) + '\n\n## ' + rest


# ------------------------------------------------------------------------------- main
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--datasets', default='adult,census')
    parser.add_argument('--epsilons', default='1,0.3,10')
    parser.add_argument('--seeds', default='0,1,2')
    parser.add_argument('--methods', default='dpkip,dphp,dpmerf')
    parser.add_argument('--peers-all-epsilons', action='store_true',
                        help='also run DP-HP / DP-MERF at ε != 1 (after every DP-KIP run)')
    parser.add_argument('--tstr-rows', type=int, default=TSTR_ROWS,
                        help='cap on the rows sampled for the TSTR protocol')
    parser.add_argument('--deadline', default=None,
                        help='HH:MM (UTC, today): start no run whose estimated end is later')
    parser.add_argument('--out', default=None, help='markdown path (default results/dpkip.md)')
    parser.add_argument('--report-only', action='store_true')
    parser.add_argument('--redo', action='append', default=[], metavar='M,D,EPS,SEED',
                        help='mark the stored run(s) of this task superseded and run it again')
    parser.add_argument('--redo-reason', default='', help='why (written to the report)')
    parser.add_argument('--quick', action='store_true',
                        help=f'smoke run: {QUICK_ROWS} train/test rows, seed 0, ε = 1, '
                             f'DP-KIP 10 steps, DP-HP/DP-MERF 50 steps, '
                             f'{len(QUICK_CLASSIFIERS)} classifiers; writes dpkip_quick.*')
    args = parser.parse_args(argv)
    args.method_list = [m for m in args.methods.split(',') if m]
    args.dataset_list = [d for d in args.datasets.split(',') if d]
    assert set(args.method_list) <= set(METHODS) and set(args.dataset_list) <= set(DATASETS)
    args.epsilon_list = harness.parse_floats(args.epsilons)
    args.seed_list = harness.parse_ints(args.seeds)
    args.classifiers = list(QUICK_CLASSIFIERS) if args.quick else None
    if args.quick:
        if args.epsilons == '1,0.3,10':
            args.epsilon_list = [1.0]
        if args.seeds == '0,1,2':
            args.seed_list = [0]
    return args


def main(argv=None):
    args = parse_args(argv)
    md = Path(args.out) if args.out else BENCH / 'results' / (
        'dpkip_quick.md' if args.quick else 'dpkip.md')
    md.parent.mkdir(parents=True, exist_ok=True)
    raw, clf_csv, run_csv = (md.with_suffix('.jsonl'), md.with_name(md.stem + '_classifiers.csv'),
                             md.with_suffix('.csv'))
    for item in args.redo:
        method, dataset, epsilon, seed = item.split(',')
        harness.append_jsonl(raw, {'kind': 'superseded', 'key': [method, dataset, float(epsilon), int(seed)],
                      'reason': args.redo_reason, 'at': f'{_dt.datetime.utcnow():%H:%M}'})
    runs, sessions = read_raw(raw)
    classifiers = pd.read_csv(clf_csv) if clf_csv.exists() else pd.DataFrame()
    if not classifiers.empty:  # per-classifier rows of superseded runs go too
        kept = {_key(r['method'], r['dataset'], r['epsilon'], r['seed']) for r in runs}
        classifiers = classifiers.loc[[_key(r['method'], r['dataset'], r['epsilon'], r['seed'])
                                       in kept for _, r in classifiers.iterrows()]]

    def report():
        pd.DataFrame(runs).drop(columns=['parameters'], errors='ignore').to_csv(run_csv,
                                                                                index=False)
        classifiers.to_csv(clf_csv, index=False)
        write_report(md, runs, sessions, classifiers, args)

    if args.report_only:
        report()
        print(f'wrote {md}')
        return 0

    done = {_key(r['method'], r['dataset'], r['epsilon'], r['seed'])
            for r in runs if not r.get('error')}
    runs = [r for r in runs if not r.get('error')]  # a failed run is retried
    tasks = [t for t in build_tasks(args)
             if _key(t['method'], t['dataset'], t['epsilon'], t['seed']) not in done]
    deadline = None
    if args.deadline:
        hour, minute = map(int, args.deadline.split(':'))
        now = _dt.datetime.now(_dt.timezone.utc)
        deadline = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if deadline <= now:  # a clock time past midnight means tomorrow's
            deadline += _dt.timedelta(days=1)
    estimate = sum(_estimate(t, runs) for t in tasks)
    print(f'{len(tasks)} run(s) to do ({len(done)} already done); estimated '
          f'{estimate / 60:.0f} min', flush=True)
    session = {'kind': 'session', 'command': 'python benchmarks/studies/dpkip.py ' + ' '.join(
        sys.argv[1:] if argv is None else argv), 'start': f'{_dt.datetime.utcnow():%H:%M}',
        'skipped': []}
    started = time.perf_counter()
    for index, task in enumerate(tasks, 1):
        name = f'{task["method"]} {task["dataset"]} eps={task["epsilon"]:g} seed={task["seed"]}'
        if deadline is not None:
            end = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(
                seconds=_estimate(task, runs))
            if end > deadline:
                print(f'[{index}/{len(tasks)}] {name}: not started, would end ~{end:%H:%M} '
                      f'after the deadline', flush=True)
                session['skipped'].append({'task': name, 'reason': f'deadline {args.deadline}'})
                continue
        row, per_classifier = harness.attempt(run_task, task,
                                              ('method', 'dataset', 'epsilon', 'seed', 'quick'))
        row['git'] = harness.git_commit()
        row['finished'] = f'{_dt.datetime.utcnow():%H:%M:%S}'
        harness.append_jsonl(raw, row)
        runs.append(row)
        if per_classifier:
            classifiers = pd.concat([classifiers, pd.DataFrame(per_classifier)],
                                    ignore_index=True)
        if row['error']:
            print(f'[{index}/{len(tasks)}] {name}: FAILED {row["error"]}', flush=True)
        else:
            paper = (f'paper={row["paper_roc_auc"]:.3f}/{row["paper_pr_auc"]:.3f} '
                     if 'paper_roc_auc' in row else '')
            print(f'[{index}/{len(tasks)}] {name}: {paper}tstr={row["tstr_roc_auc"]:.3f}/'
                  f'{row["tstr_pr_auc"]:.3f} fit={row["fit_s"]:.0f}s peak={row["peak_mb"]:.0f}MB '
                  f'(run {row["wall_s"]:.0f}s, load {row["load_start"]:.1f})', flush=True)
        session['elapsed_s'] = time.perf_counter() - started
        session['end'] = f'{_dt.datetime.utcnow():%H:%M}'
        report_sessions = sessions + [session]
        pd.DataFrame(runs).drop(columns=['parameters'], errors='ignore').to_csv(run_csv,
                                                                                index=False)
        classifiers.to_csv(clf_csv, index=False)
        write_report(md, runs, report_sessions, classifiers, args)
    session['elapsed_s'] = time.perf_counter() - started
    session['end'] = f'{_dt.datetime.utcnow():%H:%M}'
    sessions.append(session)
    harness.append_jsonl(raw, session)
    report()
    print(f'wrote {md}; session {session["elapsed_s"] / 60:.1f} min', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
