"""The tables the studies share (Adult, Census), how DP-HP / DP-MERF are told about them, the
fit-and-sample timing and the scoring against real test rows."""
from __future__ import annotations

import math
import time
import warnings

from .system import vm_hwm_mb

DELTA = 1e-5
TARGET = 'income'
CENSUS_TEST_ROWS = 20_000

#: --domain choices: what DP-HP / DP-MERF are told about the table
DOMAIN_ARMS = {
    'bundled': 'the public Adult domain `adult_domain.json`: bounds, categories, integer '
               'columns, log scale for capital-gain and capital-loss, educational-num and '
               'hours-per-week one-hot over their integer values (`discrete`), age linear; '
               'target_column="income"',
    'plain': 'a plain declaration: known_min_max_values and known_categories of '
             '`adult_domain.json` only, every other setting default (no target_column, no '
             'integer columns, no scales: the integer vote and the default encoding rule of '
             'docs/domains.md decide)',
    'plain-integers': 'the plain declaration plus integer_columns (all six numerical columns); '
                      'no target_column, no scales',
    'plain-linear': 'the plain declaration with every numerical column declared '
                    "scale='linear'; no target_column",
}


def adult_split(rows=None):
    """``(train, test, metadata, domain)``: the seeded 80/20 stratified split of full Adult;
    ``rows``: a seeded subsample of the train split (quick runs)."""
    from sdv_dpkme.datasets import adult_train_test_split, load_adult, load_adult_sample

    _, metadata, domain = load_adult_sample()
    train, test = adult_train_test_split(load_adult())
    if rows and rows < len(train):
        train = train.sample(n=rows, random_state=0).reset_index(drop=True)
    return train, test, metadata, domain


def census_split(rows=None, test_rows=CENSUS_TEST_ROWS):
    """``(train, test, metadata, domain)``: the official Census train split (``rows``: a seeded
    subsample) and a fixed stratified subsample of the official test split."""
    from sklearn.model_selection import train_test_split

    from sdv_dpkme.datasets import load_census

    train, metadata, domain = load_census(split='train')
    test, _, _ = load_census(split='test')
    test = train_test_split(test, train_size=test_rows, stratify=test[TARGET],
                            random_state=0)[0].reset_index(drop=True)
    if rows and rows < len(train):
        train = train.sample(n=rows, random_state=0).reset_index(drop=True)
    return train, test, metadata, domain


def declaration(domain, arm='bundled', target=False):
    """Flat settings that declare a table to DP-HP / DP-MERF for a ``DOMAIN_ARMS`` arm
    (``target``: a plain arm also names target_column, as the bundled one always does)."""
    if arm == 'bundled':
        return dict(domain=domain, target_column=TARGET)
    plain = dict(target_column=TARGET) if target else {}
    plain.update(known_min_max_values={c: tuple(b) for c, b in
                                       domain['known_min_max_values'].items()},
                 known_categories=domain['known_categories'])
    if arm == 'plain-linear':
        plain['domain'] = {'columns': {c: {'scale': 'linear'}
                                       for c in domain['known_min_max_values']}}
    if arm == 'plain-integers':
        plain['domain'] = {'integer_columns': list(domain['integer_columns'])}
    return plain


def fit_sample(synthesizer, train, row, table='adult'):
    """Fit on ``train``, sample as many rows; record fit / sample wall time and peak RSS."""
    start = time.perf_counter()
    synthesizer.fit({table: train})
    row['fit_s'] = time.perf_counter() - start
    start = time.perf_counter()
    sampled = synthesizer.sample(len(train))
    row['sample_s'] = time.perf_counter() - start
    row['peak_mb'] = vm_hwm_mb()  # imports + data + fit + sample
    return sampled[table] if isinstance(sampled, dict) else sampled


def _num(value):
    value = float(value)
    return value if math.isfinite(value) else None


def score(test, table, metadata, domain, classifiers=None, alphas=(3, 4), worst=4,
          **evaluate_kwargs):
    """Score ``table`` against the real test rows: ``(row, details)``.

    ``evaluate(test, table)`` gives the numbers of ``evaluate(train, table, real_test=test)``
    without refitting the train-real-test-real baseline every run (a study scores the real
    train rows once, as its reference row). ``details``: per-column and per-pair SDMetrics
    scores and the per-classifier TSTR table.
    """
    from sdv_dpkme.evaluation import evaluate

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        result = evaluate(test, table, metadata, target_column=TARGET,
                          categories=domain['known_categories'],
                          bounds=domain['known_min_max_values'], alphas=alphas,
                          classifiers=None if classifiers is None else list(classifiers),
                          **evaluate_kwargs)
    row = {'eval_s': time.perf_counter() - start}
    for key in ('quality', 'column_shapes', 'column_pair_trends', 'diagnostic',
                'tstr_roc_auc', 'tstr_pr_auc') + tuple(f'tv_alpha{a}' for a in alphas):
        row[key] = float(result[key])
    shapes = result['column_shape_details']
    pairs = result['pair_trend_details']
    tstr = result['tstr_table']
    per = tstr.loc[tstr['classifier'] != 'mean']
    row['n_classifiers'] = int(per['roc_auc'].notna().sum())
    # where the quality is lost: the worst columns and pairs (evaluate's details, worst first)
    row['worst_shapes'] = '; '.join(f"{r['Column']} {r['Score']:.3f}" for _, r in
                                    shapes.dropna(subset=['Score']).head(worst).iterrows())
    row['worst_pairs'] = '; '.join(f"{r['Column 1']} x {r['Column 2']} {r['Score']:.3f}" for _, r
                                   in pairs.dropna(subset=['Score']).head(worst).iterrows())
    details = {
        'shapes': [[r['Column'], r['Metric'], _num(r['Score'])] for _, r in shapes.iterrows()],
        'pairs': [[r['Column 1'], r['Column 2'], r['Metric'], _num(r['Score'])]
                  for _, r in pairs.iterrows()],
        'tstr': [{'classifier': r['classifier'], 'roc_auc': _num(r['roc_auc']),
                  'pr_auc': _num(r['pr_auc']), 'fit_seconds': _num(r['fit_seconds']),
                  'note': r.get('note') or ''} for _, r in per.iterrows()],
    }
    return row, details
