"""Formatting numbers and tables, raw-run files, and writing a study's markdown report."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd


#: the header of each scored or measured quantity in a report
HEADERS = {'quality': 'quality', 'column_shapes': 'shapes', 'column_pair_trends': 'pair trends',
           'diagnostic': 'diagnostic', 'tstr_roc_auc': 'ROC-AUC', 'tstr_pr_auc': 'PR-AUC',
           'tv_alpha3': 'TV3', 'tv_alpha4': 'TV4', 'fit_s': 'fit s', 'sample_s': 'sample s',
           'peak_mb': 'peak MB', 'eval_s': 'eval s', 'epsilon_spent': 'ε spent'}
#: its number format where not three decimals
FORMATS = {'fit_s': '{:.1f}', 'sample_s': '{:.1f}', 'peak_mb': '{:.0f}', 'eval_s': '{:.0f}',
           'epsilon_spent': '{:.4g}'}


def columns(*keys, **changed):
    """``(key, header, format)`` of each key (``changed[key]``: its own header and format)."""
    return tuple((key, *changed.get(key, (HEADERS.get(key, key), FORMATS.get(key, '{:.3f}'))))
                 for key in keys)


def fmt(value, spec='{:.3f}'):
    """``spec.format(value)``; '∞' for an infinity, '–' for a missing or NaN value."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        if isinstance(value, float) and math.isinf(value):
            return '∞'
        return '–'
    return spec.format(value)


def mean_std(values, spec='{:.3f}'):
    """'mean ± std' over the finite values (sample std; the mean alone for one value)."""
    values = pd.to_numeric(pd.Series(values), errors='coerce')
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        if len(values) and values.notna().all() and np.isinf(values).all():
            return '∞'
        return '–'
    mean = fmt(float(finite.mean()), spec)
    if len(finite) < 2:
        return mean
    return f"{mean} ± {fmt(float(finite.std(ddof=1)), spec.replace('+', ''))}"


def largest(values, spec='{:.4g}'):
    """The largest value (e.g. ε spent, which does not vary over seeds)."""
    values = pd.to_numeric(pd.Series(values), errors='coerce').dropna()
    return fmt(float(values.max()), spec) if len(values) else '–'


def markdown_table(header, rows):
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '|'.join('---' for _ in header) + '|']
    lines += ['| ' + ' | '.join(str(cell) for cell in row) + ' |' for row in rows]
    return '\n'.join(lines)


def parse_floats(text):
    return [float(item) for item in text.split(',') if item.strip()]


def parse_ints(text):
    return [int(item) for item in text.split(',') if item.strip()]


def read_jsonl(path):
    """The records of a JSON-lines file of runs ([] when it does not exist yet)."""
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines()
            if line.strip()]


def append_jsonl(path, record):
    """Append one finished run, so that an interrupted study keeps what it measured."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open('a', encoding='utf-8') as handle:
        handle.write(json.dumps(record, default=str) + '\n')


def machine_line(info):
    """One sentence on where and how a report was made (from ``system.machine()``)."""
    load = '' if info.get('load') is None else f", load {info['load']:.1f}"
    memory = '' if info.get('memory_gb') is None else f", {info['memory_gb']:.0f} GB"
    packages = ', '.join(f'{k} {v}' for k, v in info.get('versions', {}).items())
    return (f"Written {info['date']} by `{info['command']}` at commit {info.get('commit')}; "
            f"{info.get('cpu')}, {info.get('cores')} cores{memory}{load}. {packages}.")


def write_report(path, title, sections, info=None):
    """Write a study's markdown: a title, the machine line, then ``(heading, body)`` sections
    (``heading`` None: the body follows without one). Returns the path."""
    lines = [f'# {title}', '']
    if info is not None:
        lines += [machine_line(info), '']
    for heading, body in sections:
        if heading:
            lines += [f'## {heading}', '']
        lines += [body.rstrip('\n'), '']
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('\n'.join(lines), encoding='utf-8')
    print(f'wrote {path}')
    return path
