"""Benchmark DPHPSynthesizer on the full UCI Adult table across privacy budgets.

For every (epsilon, seed) the synthesizer is fitted on the seeded 80/20 stratified
train split of Adult (48,842 rows), as many synthetic rows as training rows are
sampled, and the synthetic table is scored against the real test split:

* SDMetrics QualityReport (and DiagnosticReport) vs the real test split;
* TSTR: the 12 DP-MERF / DP-HP classifiers trained on the synthetic table, mean
  ROC-AUC and PR-AUC on the real test split (target ``income``);
* mean 3-way marginal total-variation distance (numeric columns on 10 public bins).

A reference row 'real training data' (the real train split scored the same way,
i.e. TSTR trained on real data) is computed once.

Every run (and the reference) executes in its own freshly *spawned* process, so
the reported peak memory belongs to that run alone; fit wall time is measured
with ``time.perf_counter`` around ``fit``.

Outputs (in ``--out``, default ``benchmarks/results``): ``adult_dphp.md``,
``adult_dphp.csv``, ``adult_dphp_tstr.csv`` (per classifier),
``adult_dphp_quality.png`` and ``adult_dphp_time.png``. ``--quick`` writes the same
files with a ``_quick`` suffix so a smoke run never overwrites real results.

Usage::

    python benchmarks/adult_dphp.py                 # full benchmark
    python benchmarks/adult_dphp.py --quick         # smoke run (a few minutes)
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import multiprocessing
import os
import platform
import subprocess
import sys
import time
import traceback
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

DELTA = 1e-5
TARGET = 'income'
QUICK_TRAIN_ROWS = 2_000
QUICK_MODEL_KWARGS = {'steps': 50}
QUICK_CLASSIFIERS = ('LogisticRegression', 'XGBClassifier')
REFERENCE_LABEL = 'real training data'
NON_PRIVATE_LABEL = 'non-private'

#: The bar from the issue, checked at epsilon = 1 (mean over seeds).
#: (column, label, comparison, threshold, unit)
BAR = (
    ('tstr_roc_auc', 'TSTR ROC-AUC', '>=', 0.84, ''),
    ('tstr_pr_auc', 'TSTR PR-AUC', '>=', 0.62, ''),
    ('quality', 'SDMetrics quality', '>=', 0.86, ''),
    ('fit_s', 'fit wall time', '<=', 60.0, ' s'),
    ('peak_mb', 'peak memory (RSS)', '<=', 1500.0, ' MB'),
)
BAR_EPSILON = 1.0

#: Columns of the summary tables: (column, header, format).
METRICS = (
    ('quality', 'quality', '{:.3f}'),
    ('tstr_roc_auc', 'ROC-AUC', '{:.3f}'),
    ('tstr_pr_auc', 'PR-AUC', '{:.3f}'),
    ('tv_alpha3', 'TV3', '{:.3f}'),
    ('fit_s', 'fit s', '{:.1f}'),
    ('peak_mb', 'peak MB', '{:.0f}'),
    ('epsilon_spent', 'ε spent', '{:.4g}'),
)


# --------------------------------------------------------------------------- child side
def _vm_hwm_mb():
    """Peak resident set size of this process in MB (10^6 bytes).

    Read from ``VmHWM`` in ``/proc/self/status``. ``getrusage().ru_maxrss`` is not
    used: Linux carries it across ``execve``, so a spawned child would report at
    least the parent's peak RSS. ``VmHWM`` belongs to the child's own address
    space. Falls back to ``ru_maxrss`` where ``/proc`` is not available.
    """
    try:
        with open('/proc/self/status') as handle:
            for line in handle:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        pass

    import resource

    scale = 1 if sys.platform == 'darwin' else 1024  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1e6


def _load_split(quick):
    from sdv_dpkme.datasets import adult_train_test_split, load_adult, load_adult_sample

    _, metadata, domain = load_adult_sample()
    train, test = adult_train_test_split(load_adult())
    if quick:
        train = train.sample(n=QUICK_TRAIN_ROWS, random_state=0).reset_index(drop=True)

    return train, test, metadata, domain


def _scores(test, table, metadata, domain, classifiers):
    """Score ``table`` against the real test split.

    ``evaluate(test, table)`` gives exactly the numbers of
    ``evaluate(train, table, real_test=test)`` (with ``real_test`` given, the test
    split is the reference for the quality report, the TSTR test set and TV), but
    skips the train-real-test-real baseline that the latter refits for every run;
    that baseline is the 'real training data' row, computed once.
    """
    from sdv_dpkme.evaluation import evaluate

    start = time.perf_counter()
    result = evaluate(
        test,
        table,
        metadata,
        target_column=TARGET,
        categories=domain['known_categories'],
        bounds=domain['known_min_max_values'],
        alphas=(3,),
        classifiers=None if classifiers is None else list(classifiers),
    )
    seconds = time.perf_counter() - start
    keys = (
        'quality', 'column_shapes', 'column_pair_trends', 'diagnostic',
        'tstr_roc_auc', 'tstr_pr_auc', 'tv_alpha3',
    )
    row = {key: float(result[key]) for key in keys}
    tstr = result['tstr_table']
    per_classifier = tstr.loc[tstr['classifier'] != 'mean']
    row['n_classifiers'] = int(per_classifier['roc_auc'].notna().sum())
    row['eval_s'] = seconds
    table_rows = per_classifier[['classifier', 'roc_auc', 'pr_auc', 'fit_seconds', 'note']]
    return row, table_rows.to_dict('records')


def run_task(task):
    """Fit + sample + evaluate one configuration; runs in a freshly spawned process."""
    warnings.filterwarnings('ignore', category=FutureWarning)
    warnings.filterwarnings('ignore', category=DeprecationWarning)
    import torch

    from sdv_dpkme import DPHPSynthesizer

    train, test, metadata, domain = _load_split(task['quick'])
    row = {
        'kind': task['kind'],
        'label': task['label'],
        'epsilon': task['epsilon'],
        'seed': task['seed'],
        'n_train': len(train),
        'n_test': len(test),
        'torch_threads': torch.get_num_threads(),
        'base_mb': _vm_hwm_mb(),  # after imports and data loading, before the fit
    }
    if task['kind'] == 'reference':
        table = train
        row.update({'n_synthetic': len(train), 'peak_mb': _vm_hwm_mb()})
    else:
        synthesizer = DPHPSynthesizer(
            metadata,
            epsilon=task['epsilon'],
            delta=DELTA,
            known_min_max_values=domain['known_min_max_values'],
            known_categories=domain['known_categories'],
            target_column=TARGET,
            random_state=task['seed'],
            device=task['device'],
            verbose=False,
            **task['model_kwargs'],
        )
        start = time.perf_counter()
        synthesizer.fit({'adult': train})
        row['fit_s'] = time.perf_counter() - start
        start = time.perf_counter()
        table = synthesizer.sample(len(train))['adult']
        row['sample_s'] = time.perf_counter() - start
        row['peak_mb'] = _vm_hwm_mb()  # peak of fit + sample (the measured quantity)
        row['n_synthetic'] = len(table)
        row['epsilon_spent'] = float(synthesizer.get_privacy_report().epsilon_spent)
        model = getattr(synthesizer, '_model', None)
        generator = getattr(model, 'generator', None)
        parameter = next(generator.parameters(), None) if generator is not None else None
        row['device'] = str(parameter.device) if parameter is not None else task['device']

    scores, classifiers = _scores(test, table, metadata, domain, task['classifiers'])
    row.update(scores)
    row['peak_eval_mb'] = _vm_hwm_mb()
    for entry in classifiers:
        entry.update({'label': task['label'], 'epsilon': task['epsilon'], 'seed': task['seed']})

    return row, classifiers


# -------------------------------------------------------------------------- parent side
def _run_isolated(task):
    """Run ``task`` in a fresh spawned process (one process per task).

    A one-worker ``ProcessPoolExecutor`` per task behaves like
    ``get_context('spawn').Pool(1, maxtasksperchild=1)`` but raises
    ``BrokenProcessPool`` instead of hanging if the child is killed (e.g. OOM).
    """
    context = multiprocessing.get_context('spawn')
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as executor:
        return executor.submit(run_task, task).result()


def _epsilon_label(epsilon):
    if epsilon is None or (isinstance(epsilon, float) and math.isnan(epsilon)):
        return REFERENCE_LABEL
    if math.isinf(epsilon):
        return NON_PRIVATE_LABEL
    return f'{epsilon:g}'


def _parse_floats(text):
    return [float(item) for item in text.split(',') if item.strip()]


def _parse_ints(text):
    return [int(item) for item in text.split(',') if item.strip()]


def _cpu_model():
    try:
        with open('/proc/cpuinfo') as handle:
            for line in handle:
                if line.lower().startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def _git_commit(root):
    try:
        out = subprocess.run(
            ['git', 'rev-parse', '--short', 'HEAD'], cwd=root, capture_output=True, text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _versions():
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ('sdv-dpkme', 'sdv', 'sdmetrics', 'torch', 'scikit-learn', 'xgboost'):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = 'not installed'
    return found


def _fmt(value, fmt):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        if isinstance(value, float) and math.isinf(value):
            return '∞'
        return '–'
    return fmt.format(value)


def _mean_std(values, fmt):
    values = pd.to_numeric(pd.Series(values), errors='coerce')
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        if len(values) and values.notna().all() and np.isinf(values).all():
            return '∞'
        return '–'
    mean = _fmt(float(finite.mean()), fmt)
    if len(finite) < 2:
        return mean
    return f'{mean} ± {_fmt(float(finite.std(ddof=1)), fmt)}'


def _spent(values, fmt):
    """Largest ε spent over the seeds (the spend does not vary, so no ± is shown)."""
    values = pd.to_numeric(pd.Series(values), errors='coerce').dropna()
    return _fmt(float(values.max()), fmt) if len(values) else '–'


def _markdown_table(header, rows):
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '|'.join('---' for _ in header) + '|']
    lines += ['| ' + ' | '.join(str(cell) for cell in row) + ' |' for row in rows]
    return '\n'.join(lines)


def _sorted_epsilons(frame):
    values = frame.loc[frame['kind'] == 'dphp', 'epsilon'].dropna().unique()
    return sorted(float(value) for value in values)


def summary_rows(frame):
    rows = []
    for epsilon in _sorted_epsilons(frame):
        group = frame.loc[(frame['kind'] == 'dphp') & (frame['epsilon'] == epsilon)]
        ok = group.loc[group['error'].isna()] if 'error' in group else group
        rows.append(
            [_epsilon_label(epsilon), f'{len(ok)}/{len(group)}']
            + [_spent(ok[column], fmt) if column == 'epsilon_spent' else _mean_std(ok[column], fmt)
               for column, _, fmt in METRICS]
        )

    reference = frame.loc[(frame['kind'] == 'reference')]
    if len(reference):
        ref = reference.iloc[0]
        cells = []
        for column, _, fmt in METRICS:
            value = ref.get(column)
            cells.append('–' if column in ('fit_s', 'epsilon_spent', 'peak_mb') else _fmt(value, fmt))
        rows.append([f'*{REFERENCE_LABEL}*', '1/1' if pd.isna(ref.get('error')) else '0/1'] + cells)

    return rows


def raw_rows(frame):
    rows = []
    for _, row in frame.iterrows():
        cells = [
            _epsilon_label(row['epsilon']) if row['kind'] == 'dphp' else REFERENCE_LABEL,
            '–' if pd.isna(row['seed']) else int(row['seed']),
        ]
        cells += [
            '–' if row['kind'] == 'reference' and column == 'peak_mb' else _fmt(row.get(column), fmt)
            for column, _, fmt in METRICS
        ]
        cells += [_fmt(row.get('sample_s'), '{:.1f}'), _fmt(row.get('eval_s'), '{:.0f}')]
        error = row.get('error')
        cells.append('' if pd.isna(error) else f'ERROR: {str(error).splitlines()[0][:120]}')
        rows.append(cells)
    return rows


def bar_rows(frame):
    group = frame.loc[
        (frame['kind'] == 'dphp') & (frame['epsilon'] == BAR_EPSILON) & frame['error'].isna()
    ]
    rows = []
    for column, label, comparison, threshold, unit in BAR:
        values = pd.to_numeric(group[column], errors='coerce').dropna() if len(group) else []
        if len(values) == 0:
            rows.append([label, f'{comparison} {threshold:g}{unit}', '–', '–', 'NOT RUN'])
            continue
        check = (lambda v: v >= threshold) if comparison == '>=' else (lambda v: v <= threshold)
        worst = values.min() if comparison == '>=' else values.max()
        fmt = dict((c, f) for c, _, f in METRICS)[column]
        rows.append([
            label,
            f'{comparison} {threshold:g}{unit}',
            _mean_std(values, fmt),
            _fmt(float(worst), fmt),
            'PASS' if check(float(values.mean())) else 'FAIL',
        ])
    return rows


def write_markdown(frame, path, args, machine, elapsed):
    title = 'DP-HP on UCI Adult'
    lines = [f'# {title}' + (' — QUICK SMOKE RUN (not a benchmark result)' if args.quick else '')]
    lines.append('')
    lines.append(f'Generated {machine["date"]} by `{machine["command"]}` in {elapsed / 60:.1f} min.')
    lines.append('')
    lines.append('## Machine')
    lines.append('')
    lines.append(
        f'- CPU: {machine["cpu"]}; {machine["cores"]} usable cores (shared with other work, '
        'so timings are indicative); '
        f'torch threads: {machine["torch_threads"]}; device: {machine["device"]}.'
    )
    lines.append(f'- Python {machine["python"]} on {machine["platform"]}.')
    lines.append('- ' + ', '.join(f'{k} {v}' for k, v in machine['versions'].items())
                 + (f'; git {machine["git"]}' if machine['git'] else '') + '.')
    lines.append('')
    lines.append('## Protocol')
    lines.append('')
    n_train = int(frame['n_train'].dropna().iloc[0]) if frame['n_train'].notna().any() else '?'
    n_test = int(frame['n_test'].dropna().iloc[0]) if frame['n_test'].notna().any() else '?'
    lines += [
        f'- Data: full UCI Adult (48,842 rows), `adult_train_test_split` (seeded 80/20, '
        f'stratified on `income`): {n_train:,} train / {n_test:,} test rows'
        + (f' (train subsampled to {QUICK_TRAIN_ROWS:,} rows for --quick)' if args.quick else '')
        + '.',
        f'- `DPHPSynthesizer(epsilon=ε, delta={DELTA:g}, target_column="income", '
        'known_min_max_values/known_categories = the public Adult domain, '
        f'random_state=seed)`, model kwargs {args.model_kwargs or "default"}; '
        f'ε ∈ {{{", ".join(_epsilon_label(e) for e in args.epsilon_list)}}} '
        f'(∞ = non-private ceiling, no noise), seeds {args.seed_list} '
        '(the seed fixes the model; the privacy noise is always fresh).',
        '- Synthetic rows = train rows. Each (ε, seed) fit + sample + evaluation runs in a fresh '
        'spawned process. *fit s* = wall time of `fit`; *peak MB* = peak RSS (VmHWM, 10^6 bytes) '
        'of that process right after `sample`, i.e. imports + data + fit + sample.',
        f'- TSTR: {args.n_classifiers} classifiers '
        f'({"all 12 DP-MERF/DP-HP classifiers" if args.classifiers is None else ", ".join(args.classifiers)}) '
        'trained on the synthetic table, mean ROC-AUC / PR-AUC on the real test split '
        '(positive class `>50K`).',
        '- Quality: SDMetrics QualityReport of the synthetic table vs the real test split.',
        '- TV3: mean total-variation distance over all 3-way marginals (numeric columns on 10 '
        'equal-width bins of the public bounds); lower is better.',
        f'- Reference row *{REFERENCE_LABEL}*: the real train split scored the same way '
        '(TSTR trained on real data, quality of train vs test).',
    ]
    lines.append('')
    lines.append(f'## Results (mean ± std over seeds)')
    lines.append('')
    header = ['ε', 'runs'] + [label for _, label, _ in METRICS]
    lines.append(_markdown_table(header, summary_rows(frame)))
    lines.append('')
    lines.append(f'## Bar from the issue (ε = {BAR_EPSILON:g}, mean over seeds)')
    lines.append('')
    if args.quick:
        lines.append('_Quick smoke run: 2,000 train rows, 50 steps, 2 classifiers — the verdict '
                     'below says nothing about the real benchmark._')
        lines.append('')
    lines.append(_markdown_table(['criterion', 'bar', 'ε=1 mean ± std', 'worst seed', 'verdict'],
                                 bar_rows(frame)))
    lines.append('')
    lines.append('## Per-seed results')
    lines.append('')
    header = ['ε', 'seed'] + [label for _, label, _ in METRICS] + ['sample s', 'eval s', 'note']
    lines.append(_markdown_table(header, raw_rows(frame)))
    lines.append('')
    stem = Path(path).stem
    lines.append(f'Raw numbers: `{stem}.csv` (per run), `{stem}_tstr.csv` (per classifier). '
                 f'Plots: `{stem}_quality.png`, `{stem}_time.png`.')
    lines.append('')
    lines.append(f'![quality vs epsilon]({stem}_quality.png)')
    lines.append('')
    lines.append(f'![fit time]({stem}_time.png)')
    lines.append('')
    Path(path).write_text('\n'.join(lines), encoding='utf-8')


def _positions(epsilons):
    """x positions on a log axis; inf goes one decade right of the largest finite ε."""
    finite = [e for e in epsilons if math.isfinite(e)]
    inf_position = (max(finite) * 10) if finite else 1.0
    return {e: (e if math.isfinite(e) else inf_position) for e in epsilons}


def _new_figure(width=6.5, height=4.2):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=130)
    FigureCanvasAgg(figure)
    return figure


def plot_quality(frame, path, title_suffix=''):
    data = frame.loc[(frame['kind'] == 'dphp') & frame['error'].isna()]
    epsilons = _sorted_epsilons(data)
    if not epsilons:
        return None
    position = _positions(epsilons)
    reference = frame.loc[(frame['kind'] == 'reference') & frame['error'].isna()]
    figure = _new_figure()
    axes = figure.add_subplot(1, 1, 1)
    series = (('quality', 'SDMetrics quality', 'C0', 'o'),
              ('tstr_roc_auc', 'TSTR ROC-AUC', 'C1', 's'),
              ('tstr_pr_auc', 'TSTR PR-AUC', 'C2', '^'))
    for column, label, color, marker in series:
        stats = data.groupby('epsilon')[column].agg(['mean', 'std']).reindex(epsilons)
        finite = [e for e in epsilons if math.isfinite(e)]
        if finite:
            axes.errorbar([position[e] for e in finite], stats.loc[finite, 'mean'],
                          yerr=stats.loc[finite, 'std'].fillna(0), color=color, marker=marker,
                          capsize=3, label=label)
        if any(math.isinf(e) for e in epsilons):
            inf = [e for e in epsilons if math.isinf(e)][0]
            axes.errorbar([position[inf]], [stats.loc[inf, 'mean']],
                          yerr=[0 if pd.isna(stats.loc[inf, 'std']) else stats.loc[inf, 'std']],
                          color=color, marker=marker, markerfacecolor='white', capsize=3,
                          linestyle='none', label=None if finite else label)
        if len(reference) and pd.notna(reference.iloc[0][column]):
            axes.axhline(float(reference.iloc[0][column]), color=color, linestyle=':',
                         linewidth=1)
    if any(math.isinf(e) for e in epsilons) and any(math.isfinite(e) for e in epsilons):
        finite_max = max(e for e in epsilons if math.isfinite(e))
        axes.axvline(math.sqrt(finite_max * position[float('inf')]), color='grey',
                     linewidth=0.8, linestyle='--')
    axes.set_xscale('log')
    axes.set_xticks([position[e] for e in epsilons])
    axes.set_xticklabels([_epsilon_label(e) for e in epsilons])
    axes.minorticks_off()
    low, high = min(position.values()), max(position.values())
    axes.set_xlim(low / 2, high * 2)
    axes.set_xlabel('ε (δ = 1e-5)')
    axes.set_ylabel('score (higher is better)')
    axes.set_title('DP-HP on Adult: quality and TSTR vs ε' + title_suffix)
    handles, labels = axes.get_legend_handles_labels()
    if len(reference):
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color='grey', linestyle=':'))
        labels.append(f'{REFERENCE_LABEL} (dotted)')
    axes.legend(handles, labels, fontsize='small', loc='best')
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, format='png')
    return path


def plot_time(frame, path, title_suffix=''):
    data = frame.loc[(frame['kind'] == 'dphp') & frame['error'].isna()]
    epsilons = _sorted_epsilons(data)
    if not epsilons:
        return None
    figure = _new_figure(width=8.5, height=3.8)
    labels = [_epsilon_label(e) for e in epsilons]
    x = np.arange(len(epsilons))
    panels = (('fit_s', 'fit wall time (s)', 60.0, 'bar 60 s', 'C0'),
              ('peak_mb', 'peak RSS of fit + sample (MB)', 1500.0, 'bar 1.5 GB', 'C3'))
    for index, (column, ylabel, bar, bar_label, color) in enumerate(panels):
        axes = figure.add_subplot(1, 2, index + 1)
        stats = data.groupby('epsilon')[column].agg(['mean', 'std']).reindex(epsilons)
        axes.bar(x, stats['mean'], yerr=stats['std'].fillna(0), capsize=4, color=color,
                 alpha=0.8)
        for xi, value, spread in zip(x, stats['mean'], stats['std'].fillna(0)):
            if pd.notna(value):
                axes.annotate(f'{value:.0f}', (xi, value + spread), textcoords='offset points',
                              xytext=(0, 4), ha='center', fontsize='small')
        axes.axhline(bar, color='black', linestyle='--', linewidth=1, label=bar_label)
        axes.set_xticks(x)
        axes.set_xticklabels(labels)
        axes.set_xlabel('ε')
        axes.set_ylabel(ylabel)
        axes.set_ylim(0, max(bar, float(np.nanmax((stats['mean'] + stats['std'].fillna(0))
                                                  .to_numpy(dtype=float)))) * 1.15)
        axes.legend(fontsize='small', loc='upper left')
        axes.grid(True, axis='y', alpha=0.3)
    figure.suptitle('DP-HP on Adult: fit cost per ε' + title_suffix)
    figure.tight_layout()
    figure.savefig(path, format='png')
    return path


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--epsilons', default='0.3,1,10,inf',
                        help='comma-separated ε values; "inf" is the non-private ceiling')
    parser.add_argument('--seeds', default='0,1,2', help='comma-separated seeds')
    parser.add_argument('--out', default='benchmarks/results', help='output folder')
    parser.add_argument('--device', default='auto', choices=('auto', 'cpu', 'cuda'),
                        help='synthesizer device (default auto: CUDA when available)')
    parser.add_argument('--steps', type=int, default=None,
                        help='override the generator training steps (default: the '
                             'synthesizer default; --quick uses 50)')
    parser.add_argument('--quick', action='store_true',
                        help=f'smoke run: {QUICK_TRAIN_ROWS} train rows, seed 0, ε=1, '
                             f'{QUICK_MODEL_KWARGS}, classifiers {list(QUICK_CLASSIFIERS)}; '
                             'outputs get a _quick suffix')
    args = parser.parse_args(argv)
    if args.quick:
        args.epsilon_list, args.seed_list = [1.0], [0]
        args.model_kwargs = dict(QUICK_MODEL_KWARGS)
        args.classifiers = list(QUICK_CLASSIFIERS)
    else:
        args.epsilon_list = _parse_floats(args.epsilons)
        args.seed_list = _parse_ints(args.seeds)
        args.model_kwargs = {}
        args.classifiers = None
    if args.steps is not None:
        args.model_kwargs['steps'] = args.steps
    return args


def main(argv=None):
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = 'adult_dphp_quick' if args.quick else 'adult_dphp'
    paths = {key: out / f'{stem}{suffix}' for key, suffix in (
        ('md', '.md'), ('csv', '.csv'), ('tstr', '_tstr.csv'),
        ('quality', '_quality.png'), ('time', '_time.png'))}

    base = {'quick': args.quick, 'device': args.device, 'classifiers': args.classifiers,
            'model_kwargs': args.model_kwargs}
    tasks = [dict(base, kind='reference', label=REFERENCE_LABEL, epsilon=np.nan, seed=np.nan)]
    tasks += [
        dict(base, kind='dphp', label=f'DP-HP ε={_epsilon_label(epsilon)}', epsilon=epsilon,
             seed=seed)
        for epsilon in args.epsilon_list
        for seed in args.seed_list
    ]

    started = time.perf_counter()
    rows, tstr_rows = [], []
    print(f'{len(tasks)} runs ({len(tasks) - 1} fits + reference) -> {out}/{stem}.*', flush=True)
    for index, task in enumerate(tasks, 1):
        run_start = time.perf_counter()
        try:
            row, classifiers = _run_isolated(task)
            row['error'] = None
            tstr_rows.extend(classifiers)
        except Exception as error:  # noqa: BLE001 - record it and go on with the next run
            detail = ''.join(traceback.format_exception(error)).strip()
            print(detail, file=sys.stderr, flush=True)
            row = {key: task[key] for key in ('kind', 'label', 'epsilon', 'seed')}
            row['error'] = f'{type(error).__name__}: {error}'
        row['wall_s'] = time.perf_counter() - run_start
        rows.append(row)
        seed = '' if pd.isna(task['seed']) else f' seed={task["seed"]}'
        if row['error'] is None:
            print(
                f'[{index}/{len(tasks)}] {task["label"]}{seed}: '
                f'quality={row["quality"]:.3f} roc={row["tstr_roc_auc"]:.3f} '
                f'pr={row["tstr_pr_auc"]:.3f} tv3={row["tv_alpha3"]:.3f} '
                + (f'fit={row["fit_s"]:.1f}s peak={row["peak_mb"]:.0f}MB '
                   f'eps_spent={row["epsilon_spent"]:.4g} ' if 'fit_s' in row else '')
                + f'(run {row["wall_s"]:.0f}s)',
                flush=True,
            )
        else:
            print(f'[{index}/{len(tasks)}] {task["label"]}{seed}: FAILED {row["error"]}',
                  flush=True)
        # Write the raw results after every run so an interrupted benchmark keeps its data.
        pd.DataFrame(rows).to_csv(paths['csv'], index=False)
        pd.DataFrame(tstr_rows).to_csv(paths['tstr'], index=False)

    frame = pd.DataFrame(rows)
    if 'error' not in frame:
        frame['error'] = None
    ok = frame.loc[frame['error'].isna()]
    threads = ok['torch_threads'].dropna().unique() if 'torch_threads' in ok else []
    devices = ok['device'].dropna().unique() if 'device' in ok else []
    args.n_classifiers = (int(ok['n_classifiers'].max())
                          if 'n_classifiers' in ok and ok['n_classifiers'].notna().any() else '?')
    machine = {
        'date': _dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z'),
        'command': 'python benchmarks/adult_dphp.py' + (
            ' ' + ' '.join(sys.argv[1:]) if len(sys.argv) > 1 else ''),
        'cpu': _cpu_model(),
        'cores': _usable_cores(),
        'torch_threads': ', '.join(str(int(t)) for t in threads) or '?',
        'device': ', '.join(devices) or args.device,
        'python': platform.python_version(),
        'platform': platform.platform(terse=True),
        'versions': _versions(),
        'git': _git_commit(Path(__file__).resolve().parent.parent),
    }
    elapsed = time.perf_counter() - started
    suffix = ' (QUICK smoke run)' if args.quick else ''
    write_markdown(frame, paths['md'], args, machine, elapsed)
    written = [paths['md'], paths['csv'], paths['tstr']]
    for key, plot in (('quality', plot_quality), ('time', plot_time)):
        try:
            if plot(frame, paths[key], suffix):
                written.append(paths[key])
        except Exception:  # noqa: BLE001 - a broken plot must not lose the tables
            traceback.print_exc()

    print('\n'.join(f'wrote {path}' for path in written))
    print(f'total {elapsed / 60:.1f} min; {int(frame["error"].notna().sum())} failed run(s)')
    return 1 if frame['error'].notna().any() else 0


if __name__ == '__main__':
    sys.exit(main())
