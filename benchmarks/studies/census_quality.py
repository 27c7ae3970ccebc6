"""DP-HP against MST on KDD Census-Income at ε = 1: SDMetrics quality and TSTR (issue 16).

Issue 16 asks: "on Census (KDD census-income): SDMetrics quality and TSTR of DP-HP >= MST's,
both run the same way". This script runs that comparison at ε = 1, δ = 1e-5.

Protocol
--------
* Data: ``sdv_dpkme.datasets.load_census``. Train = the official ``census-income.data``
  (199,523 rows, 41 columns: 7 integer numeric, 33 categorical, label ``income``), or, with
  ``--train-rows N``, a fixed public subsample of it (``DataFrame.sample(N, random_state=0)``;
  the same rows for every method and seed). Test = a fixed stratified subsample of 20,000 rows of
  the official ``census-income.test`` (``train_test_split(..., stratify=income, random_state=0)``,
  as ``benchmarks/studies/dpkip.py``), the same rows for every run.
* Public domain: ``load_census``'s domain (``census_domain.json``, written from documentation).
* DP-HP (``dphp``): ``DPHPSynthesizer`` with the PLAIN declaration of Census, built by
  ``harness.declaration(domain, 'plain', target=True)``: ``known_min_max_values`` and
  ``known_categories`` of the domain plus ``target_column='income'``; every other argument
  default (``epsilon=1``, ``delta=1e-5``, ``random_state=seed``, ``verbose=False``; no integer
  columns, no scales: the package's defaults decide). One torch thread.
* MST (``mst``): smartnoise-synth 1.0.8 MST through ``benchmarks/peers/run_smartnoise.py``
  under ``benchmarks/.venv-smartnoise`` (``bash benchmarks/peers/setup_smartnoise.sh``), exactly
  as ``benchmarks/studies/adult.py`` runs it for Adult: the domain JSON (public bounds, public category
  lists, integer columns) is written to a temporary folder with the train rows, and
  ``--rows`` = train rows. ``run_smartnoise.py`` bins numeric columns on explicit public edges;
  it ships edges for Adult only (other columns fall back to 10 equal-width bins on the bounds,
  which would put every capital-gain amount below 10,000 in the same bin as 0). The public Census
  edges in ``CENSUS_BIN_EDGES`` below (chosen a priori from the documented bounds, never from the
  rows: 0 gets its own bin for the money columns and for weeks worked, 52 weeks too) go to it in
  the domain file's ``bin_edges``; nothing else changes.
* Both: as many synthetic rows as train rows; the fit runs in a freshly spawned process (peak
  memory = that process's VmHWM; for MST, the smartnoise subprocess's own VmHWM), with
  OMP/MKL/OPENBLAS = 1 thread, XLA single-threaded, under the caller's ``nice``.
* Scoring, identical for every method and for the real-data reference row (the train rows
  themselves, scored the same way): ``sdv_dpkme.evaluation.evaluate(test, synthetic, ...)`` on
  the whole synthetic table against the 20,000 real test rows:
  - SDMetrics ``QualityReport`` (overall quality, Column Shapes, Column Pair Trends over all 820
    pairs) and ``DiagnosticReport``;
  - TSTR: classifiers trained on the synthetic table, scored on the real test rows (ROC-AUC and
    PR-AUC, positive class ``'50000+'``, 6.2 % of the test rows); ``--classifiers`` (default
    ``LogisticRegression,XGBClassifier``: the 12-classifier suite of adult.py costs minutes per
    run on 200k rows, GradientBoosting alone ~6 min), mean over the classifiers;
  - TV3: mean total-variation distance over ALL 3-way marginals of the 41 columns (10,660
    triples; numeric columns on 10 equal-width bins of the public bounds), lower is better.
    TV4 (101,270 quadruples) is not computed.
* Code pinning: ``--package-ref REF`` runs DP-HP on ``sdv_dpkme`` of git commit REF, extracted
  with ``git archive`` into a temp folder that the run imports first (the working tree is left
  alone). Without it DP-HP imports the working tree as it stands when the run starts, which
  changes if the package is edited during the benchmark. Each run records the package it
  imported (``package``, ``package_root``) and a hash of its .py files (``code_hash``); DP-HP runs
  of different packages are kept apart (``--resume`` and the report key on it).
* Outputs (``--out``, default ``benchmarks/results/census_quality``): ``runs{suffix}.jsonl``
  (one JSON line per finished run, appended when it ends; ``--resume`` skips the runs already
  there), ``details{suffix}.jsonl`` (per run: every column-shape and pair-trend score and the
  per-classifier TSTR scores) and ``census_quality{suffix}.md`` (a table per method, per seed and
  mean ± std; the paired difference DP-HP − MST by seed; the worst columns and pairs). The suffix
  is empty for the full train split and ``_train{N}`` with ``--train-rows N``.

Usage::

    # smoke run (20,000 train rows, one seed)
    nice -n 10 .venv/bin/python benchmarks/studies/census_quality.py --train-rows 20000 --seeds 0
    # the comparison (full train split, seeds 0, 1, 2), DP-HP on the committed package
    nice -n 10 .venv/bin/python benchmarks/studies/census_quality.py --seeds 0,1,2 --package-ref HEAD --resume
    # rebuild the markdown only
    .venv/bin/python benchmarks/studies/census_quality.py --report-only
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

# one BLAS / OpenMP thread per run (the 2 cores are shared); set before numpy loads
for _name in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_name, '1')

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402
from benchmarks.harness import DELTA, ROOT, TARGET  # noqa: E402

TABLE = 'census'
POSITIVE = '50000+'
EPSILON = 1.0
ALPHAS = (3,)
DEFAULT_CLASSIFIERS = ('LogisticRegression', 'XGBClassifier')
SMARTNOISE_TIMEOUT_S = 3600
METHODS = {'dphp': 'DP-HP (plain declaration)', 'mst': 'MST (smartnoise)'}
REFERENCE = 'reference'
REFERENCE_LABEL = 'real training data'

#: Public bin edges of the numeric Census columns for MST (bins [e_i, e_{i+1}); integer columns,
#: so the last edge is hi + 1). Chosen a priori from the documented bounds of census_domain.json
#: (age 0..90, wage_per_hour 0..9,999 cents, money 0..99,999, employer size codes 0..6, weeks
#: 0..52) and general knowledge (most people have no capital income, no dividends, are not paid by
#: the hour; 0 and 52 weeks are the common answers), never from the rows.
CENSUS_BIN_EDGES = {
    'age': [0, 5, 10, 15, 18, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 91],
    'wage_per_hour': [0, 1, 500, 750, 1000, 1250, 1500, 2000, 3000, 5000, 10000],
    'capital_gains': [0, 1, 1000, 2000, 3000, 4000, 5000, 7500, 10000, 15000, 20000, 30000,
                      50000, 100000],
    'capital_losses': [0, 1, 500, 1000, 1500, 2000, 2500, 3000, 5000, 100000],
    'dividends_from_stocks': [0, 1, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000,
                              100000],
    'num_persons_worked_for_employer': 'integers',
    'weeks_worked_in_year': [0, 1, 10, 20, 30, 40, 48, 52, 53],
}

#: summary columns: (key, header, format, higher_is_better)
METRICS = tuple((key, header, spec, key != 'tv_alpha3') for key, header, spec in harness.columns(
    'quality', 'column_shapes', 'column_pair_trends', 'tstr_roc_auc', 'tstr_pr_auc', 'tv_alpha3',
    'diagnostic', tv_alpha3=('TV3 (lower better)', '{:.4f}')))
COSTS = harness.columns('fit_s', 'sample_s', 'peak_mb', 'eval_s', 'positive_share',
                        fit_s=('fit s', '{:.0f}'), positive_share=('share 50000+', '{:.3f}'))


# --------------------------------------------------------------------------- child side
def _fit_dphp(task, train, metadata, domain, row):
    from sdv_dpkme import DPHPSynthesizer

    declaration = harness.declaration(domain, 'plain', target=True)
    settings = json.loads(task.get('dphp_kwargs') or '{}')
    noise = None if task.get('noise_seed') is None else task['noise_seed'] + task['seed']
    row['dphp_kwargs'] = task.get('dphp_kwargs')
    caught = []
    with warnings.catch_warnings(record=True) as log, harness.fixed_noise(noise):
        warnings.simplefilter('always')
        synth = harness.make(DPHPSynthesizer, metadata, EPSILON, delta=DELTA,
                             random_state=task['seed'], verbose=False, **declaration, **settings)
        table = harness.fit_sample(synth, train, row, TABLE)
        caught = list(log)
    table = table[TABLE] if isinstance(table, dict) else table
    gen = synth._model.generator
    heads = [b.name for b in gen.blocks if b.kind == 'categorical']
    row['link_parents'] = {heads[j]: [heads[i] for i in ps]
                           for j, ps in enumerate(getattr(gen, '_parents', [])) if ps}
    row['selected_pairs'] = synth._model.loss_values.attrs.get('selected_pairs')
    seen = {}
    for w in caught:
        if issubclass(w.category, (DeprecationWarning, FutureWarning)):
            continue
        text = f'{w.category.__name__}: {str(w.message)[:400]}'
        seen.setdefault(text, f'{Path(w.filename).name}:{w.lineno}')
    row['warnings'] = [f'{text} ({where})' for text, where in seen.items()]
    try:
        row['epsilon_spent'] = float(synth.get_privacy_report().epsilon_spent)
    except Exception as error:  # noqa: BLE001 - informative only
        row['epsilon_spent'] = None
        row['warnings'].append(f'get_privacy_report failed: {error!r}')
    try:
        row['parameters'] = json.dumps(synth.get_parameters(), default=str, sort_keys=True)
    except Exception:  # noqa: BLE001
        row['parameters'] = None
    row['declaration'] = {k: (sorted(v) if isinstance(v, dict) else v)
                          for k, v in declaration.items()}
    return table


def _align_types(table, train):
    """Give the synthetic columns the train split's dtypes where the values allow it (the MST
    CSV round trip and a generator may hand back ints as floats or codes as strings)."""
    table = table[list(train.columns)].copy()
    for column in train.columns:
        if table[column].dtype == train[column].dtype:
            continue
        try:
            table[column] = table[column].astype(train[column].dtype)
        except (TypeError, ValueError):
            pass
    return table


def run_task(task):
    """Fit + sample + score one run; executes in a freshly spawned process."""
    warnings.filterwarnings('ignore', category=FutureWarning)
    warnings.filterwarnings('ignore', category=DeprecationWarning)
    if task.get('package_dir'):  # a pinned snapshot of the package, ahead of the editable one
        sys.path.insert(0, task['package_dir'])
    import torch

    import sdv_dpkme

    package_root = Path(sdv_dpkme.__file__).resolve().parent
    if task.get('package_dir') and not package_root.is_relative_to(Path(task['package_dir'])):
        raise RuntimeError(f'pinned package not imported: sdv_dpkme from {package_root}')
    torch.set_num_threads(1)
    train, test, metadata, domain = harness.census_split(task['train_rows'])
    row = {'method': task['method'], 'seed': task['seed'], 'epsilon': EPSILON, 'delta': DELTA,
           'rows': len(train), 'n_test': len(test), 'base_mb': harness.vm_hwm_mb(),
           'load_start': os.getloadavg()[0], 'code_hash': _code_hash(package_root),
           'package': task.get('package', 'worktree'), 'package_root': str(package_root),
           'classifiers': list(task['classifiers'])}
    if task['method'] == REFERENCE:
        table = train
    elif task['method'] == 'dphp':
        table = _fit_dphp(task, train, metadata, domain, row)
    else:
        table, info = harness.run_smartnoise(
            'mst', train, domain, EPSILON, DELTA, task['seed'], row,
            python=task['smartnoise_python'], timeout=task['smartnoise_timeout'],
            bin_edges=CENSUS_BIN_EDGES, one_thread=True)
        row.update(mst_bin_edges=info.get('bin_edges'), mst_cardinalities=info.get('cardinalities'),
                   smartnoise_versions=info.get('versions'),
                   warnings=row.pop('smartnoise_warnings'))
    row['n_synthetic'] = len(table)
    table = _align_types(table, train)
    row['positive_share'] = float((table[TARGET] == POSITIVE).mean())
    row['n_distinct_rows'] = int(len(table.drop_duplicates()))
    scores, details = harness.score(test, table, metadata, domain, task['classifiers'],
                                    task['alphas'], worst=5, random_state=0, n_jobs=1)
    row.update(scores)
    row['load_end'] = os.getloadavg()[0]
    harness.shutdown_loky()
    return row, details


# -------------------------------------------------------------------------- parent side
def _code_hash(package_root=None):
    """sha256 (12 hex) of the package's .py files: the code state a run used (the package is
    edited while benchmarks run; computed in the run's own process, when it imports it)."""
    package_root = Path(package_root or ROOT / 'sdv_dpkme')
    digest = hashlib.sha256()
    for path in sorted(package_root.rglob('*.py')):
        digest.update(str(path.relative_to(package_root.parent)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def pin_package(ref):
    """Extract ``sdv_dpkme`` of git ``ref`` (``git archive``, the working tree untouched) into
    a folder under the temp dir; return ``(folder, label)``. Runs given the folder import the
    package from there, so every DP-HP run uses the same committed code."""
    sha = _git('rev-parse', '--verify', f'{ref}^{{commit}}')
    if not sha:
        raise SystemExit(f'--package-ref {ref!r} is not a commit')
    folder = Path(tempfile.gettempdir()) / 'census_quality_pkg' / sha[:12]
    if not (folder / 'sdv_dpkme' / '__init__.py').exists():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(['git', 'archive', '--format=tar', sha, 'sdv_dpkme'], cwd=ROOT,
                                 capture_output=True, check=True)
        subprocess.run(['tar', '-x', '-C', str(folder)], input=archive.stdout, check=True)
    return str(folder), f'git {sha[:7]}'


def _git(*args):
    try:
        out = subprocess.run(['git', *args], cwd=ROOT, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _key(record):
    seed = record.get('seed')
    package = record.get('package', 'worktree') if record['method'] == 'dphp' else None
    return (record['method'], None if seed is None else int(seed), int(record['rows']), package)


# ------------------------------------------------------------------------------ report
def _diff(a, b, key):
    if a.get(key) is None or b.get(key) is None:
        return None
    return float(a[key]) - float(b[key])


def _latest(runs):
    """The last successful run per (method, seed, rows)."""
    latest = {}
    for run in runs:
        if run.get('error'):
            continue
        latest[_key(run)] = run
    return latest


def _arm_label(method, package):
    if method == 'dphp':
        code = ('the working tree as it stood when each run started' if package == 'worktree'
                else f'pinned to {package}')
        return f'{METHODS[method]}, sdv_dpkme {code}'
    return REFERENCE_LABEL if method == REFERENCE else METHODS[method]


def _links(run):
    try:
        return str(json.loads(run.get('parameters') or '{}').get('category_links', 'absent'))
    except ValueError:
        return '?'


def write_markdown(path, runs, details, rows, machine):
    latest = {k: v for k, v in _latest(runs).items() if k[2] == rows}
    failed = [r for r in runs if r.get('error') and int(r['rows']) == rows]
    header = ['seed'] + [h for _, h, _, _ in METRICS] + [h for _, h, _ in COSTS]
    out = ['# DP-HP vs MST on KDD Census-Income at ε = 1 (issue 16)', '',
           f'Written {machine["date"]} by `{machine["command"]}`; git {machine["git"]}. CPU: '
           f'{machine["cpu"]}, {machine["cores"]} cores shared with other jobs (load average '
           f'{machine["load"]} during the runs), 1 thread per run, `nice -n 10`: the wall times '
           f'are inflated and noisy. Versions: {machine["versions"]}; smartnoise venv: '
           f'{machine["smartnoise"]}.', '',
           '## Protocol', '',
           f'- Train: {"the full official census-income.data" if rows == 199_523 else "a fixed public subsample (random_state=0) of census-income.data"} '
           f'({rows:,} rows, 41 columns); the same rows for both methods. Test: a fixed stratified '
           f'subsample of {harness.tables.CENSUS_TEST_ROWS:,} rows of census-income.test (seed 0), the same for every run. '
           f'ε = {EPSILON:g}, δ = {DELTA:g}; {rows:,} synthetic rows per run.',
           '- DP-HP: `DPHPSynthesizer(metadata, epsilon=1, delta=1e-5, random_state=seed, '
           'verbose=False, known_min_max_values=..., known_categories=..., target_column=\'income\')` '
           '(the plain declaration of `harness.declaration(domain, \'plain\', target=True)` with the '
           'public Census domain), every other argument default. The package was edited while '
           'this benchmark ran (its defaults changed: `category_links` became True for DP-HP), so '
           'each DP-HP table below names the code it ran on; `links` = the run\'s '
           '`category_links` parameter, `code` = sha256 of the package .py files it imported.',
           '- MST: smartnoise-synth 1.0.8 via `benchmarks/peers/run_smartnoise.py` with the same '
           'public domain (bounds, category lists, integer columns) and the public bin edges '
           '`CENSUS_BIN_EDGES` of this script (no budget spent on preprocessing).',
           '- Scoring (identical for both and for the real-data row, which is the train rows '
           'themselves): `sdv_dpkme.evaluation.evaluate(test, synthetic)` on the whole synthetic '
           'table: SDMetrics QualityReport (quality = mean of Column Shapes and Column Pair Trends) '
           f'and DiagnosticReport; TSTR mean over {", ".join(machine["classifiers"])} (trained on '
           'the synthetic table, ROC-AUC / PR-AUC on the real test rows, positive class 50000+); '
           'TV3 = mean total variation over all 10,660 3-way marginals (numeric columns on 10 '
           'equal-width bins of the public bounds), lower is better.',
           '- SDMetrics 0.32 scores a column pair only where the REAL table is associated '
           '(`QualityReport` thresholds: |Pearson| > 0.5 for two numeric columns, Cramér\'s V > 0.3 '
           'otherwise); the other pairs are NaN and left out of Column Pair Trends. On these test '
           f'rows that keeps {machine.get("pairs_scored", "?")} of the 820 pairs (the same pairs for every '
           'method): pair trends measures the strongly associated pairs only '
           '(industry x major industry, occupation x major occupation, household detail x '
           'summary, ...). TV3 covers every triple.', '']
    reference = latest.get((REFERENCE, None, rows, None))
    if reference:
        out += ['## Real training data (reference)', '',
                harness.markdown_table(['rows'] + [h for _, h, _, _ in METRICS] + ['eval s', 'share 50000+'],
                       [[f'{rows:,}'] + [harness.fmt(reference.get(k), f) for k, _, f, _ in METRICS]
                        + [harness.fmt(reference.get('eval_s'), '{:.0f}'),
                           harness.fmt(reference.get('positive_share'), '{:.3f}')]]), '']
    arms = sorted({(k[0], k[3]) for k in latest if k[0] != REFERENCE},
                  key=lambda a: (a[0] != 'dphp', a[1] == 'worktree', str(a[1])))
    per_arm = {}
    for method, package in arms:
        group = sorted((v for k, v in latest.items() if (k[0], k[3]) == (method, package)),
                       key=lambda r: r['seed'])
        per_arm[(method, package)] = {int(r['seed']): r for r in group}
        extra = ['links', 'code'] if method == 'dphp' else []
        body = [[r['seed']] + [harness.fmt(r.get(k), f) for k, _, f, _ in METRICS]
                + [harness.fmt(r.get(k), f) for k, _, f in COSTS]
                + ([_links(r), r.get('code_hash', '?') if r.get('package_root') else
                    f"{r.get('code_hash', '?')} (taken at the launch, not per run)"]
                   if extra else []) for r in group]
        body.append([f'**mean ± std (n={len(group)})**']
                    + [harness.mean_std([r.get(k) for r in group], f) for k, _, f, _ in METRICS]
                    + [harness.mean_std([r.get(k) for r in group], f) for k, _, f in COSTS]
                    + ['', ''][:len(extra)])
        out += [f'## {_arm_label(method, package)}', '', harness.markdown_table(header + extra, body), '']
    mst = per_arm.get(('mst', None), {})
    pinned = any(m == 'dphp' and p != 'worktree' for m, p in arms)
    for method, package in arms:
        if method != 'dphp' or (pinned and package == 'worktree'):
            continue  # the working-tree runs mix code versions once a pinned arm exists
        dphp = per_arm[(method, package)]
        seeds = sorted(set(dphp) & set(mst))
        if not seeds:
            continue
        body, verdicts = [], []
        for seed in seeds:
            a, b = dphp[seed], mst[seed]
            body.append([seed] + [harness.fmt(_diff(a, b, k), '{:+.4f}') for k, _, _, _ in METRICS]
                        + [harness.fmt(_diff(a, b, 'fit_s'), '{:+.0f}')])
        diffs = {k: [_diff(dphp[s], mst[s], k) for s in seeds] for k, _, _, _ in METRICS}
        diffs = {k: v for k, v in diffs.items() if None not in v}
        body.append([f'**mean ± std (n={len(seeds)})**']
                    + [harness.mean_std(diffs.get(k, []), '{:+.4f}') for k, _, _, _ in METRICS]
                    + [harness.mean_std([_diff(dphp[s], mst[s], 'fit_s') for s in seeds], '{:+.0f}')])
        for key, name, _, higher in METRICS:
            if key not in diffs:
                continue
            values = diffs[key]
            mean = float(np.mean(values))
            dphp_better = mean > 0 if higher else mean < 0
            wins = sum((d > 0) if higher else (d < 0) for d in values)
            verdicts.append([name, f'{mean:+.4f}', f'{wins}/{len(values)}',
                             'DP-HP' if dphp_better else 'MST',
                             ('yes' if dphp_better or abs(mean) < 5e-4 else 'NO')])
        out += [f'## Paired difference DP-HP − MST (same seed; DP-HP {package})', '',
                'Positive = DP-HP higher; for TV3 lower is better, so a negative TV3 difference '
                'favours DP-HP.', '',
                harness.markdown_table(['seed'] + [h for _, h, _, _ in METRICS] + ['fit s'], body), '',
                f'### Who wins (mean over paired seeds; DP-HP {package})', '',
                harness.markdown_table(['metric', 'mean DP-HP − MST', 'seeds DP-HP better', 'better on mean',
                        'DP-HP >= MST (issue 16)? (abs(Δ) < 0.0005 counts as a tie)'], verdicts), '']
    # per classifier TSTR
    lines = []
    for method, package in [(REFERENCE, None)] + arms:
        entries = [d for d in details if int(d['rows']) == rows and _key(d) in latest
                   and (d['method'], _key(d)[3]) == (method, package)]
        by_clf = {}
        for entry in entries:
            for t in entry['tstr']:
                by_clf.setdefault(t['classifier'], []).append(t)
        for clf, values in by_clf.items():
            lines.append([_arm_label(method, package), clf,
                          len(values), harness.mean_std([v['roc_auc'] for v in values], '{:.3f}'),
                          harness.mean_std([v['pr_auc'] for v in values], '{:.3f}'),
                          harness.mean_std([v['fit_seconds'] for v in values], '{:.1f}')])
    if lines:
        out += ['## TSTR per classifier (mean ± std over seeds)', '',
                harness.markdown_table(['method', 'classifier', 'runs', 'ROC-AUC', 'PR-AUC', 'fit s'], lines), '']
    # worst columns and pairs
    for method, package in arms:
        entries = [d for d in details if int(d['rows']) == rows and _key(d) in latest
                   and (d['method'], _key(d)[3]) == (method, package)]
        if not entries:
            continue
        shapes = pd.DataFrame([s for e in entries for s in e['shapes']],
                              columns=['column', 'metric', 'score'])
        pairs = pd.DataFrame([p for e in entries for p in e['pairs']],
                             columns=['column 1', 'column 2', 'metric', 'score'])
        shapes = shapes.groupby(['column', 'metric'])['score'].mean().sort_values().head(8)
        pairs = pairs.dropna(subset=['score']).groupby(['column 1', 'column 2', 'metric'])[
            'score'].mean().sort_values().head(8)
        out += [f'## Worst columns and pairs: {_arm_label(method, package)} (mean over '
                f'{len(entries)} run(s))', '',
                harness.markdown_table(['column', 'metric', 'score'],
                       [[c, m, f'{s:.3f}'] for (c, m), s in shapes.items()]), '',
                harness.markdown_table(['column 1', 'column 2', 'metric', 'score'],
                       [[a, b, m, f'{s:.3f}'] for (a, b, m), s in pairs.items()]), '']
    warned = sorted({w for r in latest.values() if r['method'] == 'dphp'
                     for w in r.get('warnings') or []})
    if warned:
        out += ['## Warnings raised by DP-HP fit/sample', ''] + [f'- `{w}`' for w in warned] + ['']
    if failed:
        out += ['## Failed runs', ''] + [f'- {r["method"]} seed {r.get("seed")}: '
                                          f'{str(r["error"]).strip().splitlines()[-1][:300]}'
                                          for r in failed] + ['']
    mst_edges = next((r.get('mst_bin_edges') for r in latest.values() if r.get('mst_bin_edges')),
                     None)
    if mst_edges:
        out += ['## MST public bin edges used', '',
                harness.markdown_table(['column', 'edges'], [[c, ', '.join(f'{e:g}' for e in edges)]
                                             for c, edges in mst_edges.items()]), '']
    path.write_text('\n'.join(out), encoding='utf-8')


def _pairs_scored(details):
    counts = sorted({sum(p[3] is not None for p in d['pairs']) for d in details})
    return '/'.join(str(c) for c in counts) or '?'


def _machine(args, runs, details=()):
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for name in ('sdv', 'sdmetrics', 'torch', 'scikit-learn', 'xgboost'):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = 'not installed'
    sn = next((r.get('smartnoise_versions') for r in reversed(runs)
               if r.get('smartnoise_versions')), None)
    loads = [r[k] for r in runs for k in ('load_start', 'load_end') if r.get(k) is not None]
    return {
        'date': _dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z'),
        'command': 'python benchmarks/studies/census_quality.py ' + ' '.join(sys.argv[1:]),
        'cpu': harness.cpu_model(), 'cores': harness.usable_cores(),
        'git': (_git('rev-parse', '--short', 'HEAD') or '?') + ' + uncommitted changes'
        if _git('status', '--porcelain', 'sdv_dpkme') else _git('rev-parse', '--short', 'HEAD'),
        'versions': ', '.join(f'{k} {v}' for k, v in versions.items()),
        'smartnoise': ', '.join(f'{k} {v}' for k, v in (sn or {}).items()) or '–',
        'load': f'{min(loads):.1f}–{max(loads):.1f}' if loads else '?',
        'classifiers': args.classifier_list,
        'pairs_scored': _pairs_scored(details),
        'python': platform.python_version(),
    }


# ------------------------------------------------------------------------------- main
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--methods', default='dphp,mst',
                        help='comma-separated subset of dphp,mst (the real-data reference row '
                             'is added unless --no-reference)')
    parser.add_argument('--seeds', default='0,1,2', help='comma-separated seeds')
    parser.add_argument('--train-rows', type=int, default=0,
                        help='fixed public subsample (random_state=0) of the train split; '
                             '0 = the full 199,523 rows')
    parser.add_argument('--classifiers', default=','.join(DEFAULT_CLASSIFIERS),
                        help='TSTR classifiers (names of sdv_dpkme.evaluation.tstr)')
    parser.add_argument('--no-tv', action='store_true', help='skip the TV3 score')
    parser.add_argument('--no-reference', action='store_true',
                        help='do not score the real train rows')
    parser.add_argument('--out', default=str(harness.RESULTS / 'census_quality'))
    parser.add_argument('--resume', action='store_true',
                        help='skip the runs already in runs*.jsonl (method, seed, rows)')
    parser.add_argument('--report-only', action='store_true',
                        help='run nothing, rewrite the markdown from the JSONL')
    parser.add_argument('--package-ref', default=None,
                        help='run DP-HP on the sdv_dpkme of this git commit (e.g. HEAD), extracted '
                             'with git archive to a temp folder, instead of the working tree '
                             '(which may be edited while the benchmark runs)')
    parser.add_argument('--dphp-kwargs', default=None,
                        help='JSON of flat DP-HP settings (harness.make: constructor arguments '
                             'and kernel / training fields by name); use its own --out, as '
                             '--resume and the report do not key on it')
    parser.add_argument('--noise-seed', type=int, default=None,
                        help='TEST ONLY: fix DP-HP\'s privacy noise at this + seed (paired arms; '
                             'voids the guarantee, the report says so)')
    parser.add_argument('--smartnoise-python', default=str(harness.SMARTNOISE_PYTHON))
    parser.add_argument('--smartnoise-timeout', type=int, default=SMARTNOISE_TIMEOUT_S)
    args = parser.parse_args(argv)
    args.method_list = [m.strip() for m in args.methods.split(',') if m.strip()]
    unknown = [m for m in args.method_list if m not in METHODS]
    if unknown:
        parser.error(f'unknown method(s) {unknown}; choose from {list(METHODS)}')
    args.seed_list = [int(s) for s in args.seeds.split(',') if s.strip()]
    args.classifier_list = [c.strip() for c in args.classifiers.split(',') if c.strip()]
    return args


def main(argv=None):
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    full_rows = 199_523
    rows = args.train_rows if args.train_rows and args.train_rows < full_rows else full_rows
    suffix = '' if rows == full_rows else f'_train{rows}'
    paths = {'runs': out / f'runs{suffix}.jsonl', 'details': out / f'details{suffix}.jsonl',
             'md': out / f'census_quality{suffix}.md'}
    runs = harness.read_jsonl(paths['runs'])
    details = harness.read_jsonl(paths['details'])
    done = set(_latest(runs)) if args.resume else set()

    tasks = []
    if not args.report_only:
        package_dir, package = (pin_package(args.package_ref) if args.package_ref
                                else (None, 'worktree'))
        base = dict(train_rows=rows if rows < full_rows else 0, classifiers=args.classifier_list,
                    alphas=() if args.no_tv else ALPHAS, package_dir=package_dir,
                    smartnoise_python=args.smartnoise_python,
                    smartnoise_timeout=args.smartnoise_timeout, dphp_kwargs=args.dphp_kwargs,
                    noise_seed=args.noise_seed)
        if not args.no_reference:
            tasks.append(dict(base, method=REFERENCE, seed=None))
        for seed in args.seed_list:  # paired: both methods of a seed before the next seed
            for method in args.method_list:
                tasks.append(dict(base, method=method, seed=seed))
        for task in tasks:
            task['package'] = package if task['method'] == 'dphp' else None
        tasks = [t for t in tasks if (t['method'], t['seed'], rows, t['package']) not in done]
        print(f'{len(tasks)} run(s) to do ({rows:,} train rows) -> {paths["runs"]}', flush=True)

    for index, task in enumerate(tasks, 1):
        label = task['method'] + ('' if task['seed'] is None else f' seed={task["seed"]}')
        print(f'[{index}/{len(tasks)}] {label} started {time.strftime("%H:%M:%S")}', flush=True)
        row, detail = harness.attempt(run_task, task, ('method', 'seed'), full_error=True)
        if detail is None:
            row.update(epsilon=EPSILON, rows=rows, package=task['package'] or 'worktree')
        row['finished'] = _dt.datetime.now().astimezone().isoformat(timespec='seconds')
        harness.append_jsonl(paths['runs'], row)
        runs.append(row)
        if detail is not None:
            detail.update(method=task['method'], seed=task['seed'], rows=rows,
                          package=row.get('package', 'worktree'))
            harness.append_jsonl(paths['details'], detail)
            details.append(detail)
            print(f'    quality={row["quality"]:.4f} shapes={row["column_shapes"]:.4f} '
                  f'pairs={row["column_pair_trends"]:.4f} roc={row["tstr_roc_auc"]:.4f} '
                  f'pr={row["tstr_pr_auc"]:.4f} tv3={row.get("tv_alpha3", float("nan")):.4f} '
                  + (f'fit={row["fit_s"]:.0f}s sample={row["sample_s"]:.1f}s '
                     f'peak={row["peak_mb"]:.0f}MB ' if 'fit_s' in row else '')
                  + f'eval={row["eval_s"]:.0f}s wall={row["wall_s"]:.0f}s', flush=True)
        else:
            print(f'    FAILED after {row["wall_s"]:.0f}s', flush=True)
        write_markdown(paths['md'], runs, details, rows, _machine(args, runs, details))

    if not runs:
        print('nothing to report')
        return 1
    write_markdown(paths['md'], runs, details, rows, _machine(args, runs, details))
    print(f'wrote {paths["md"]}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
