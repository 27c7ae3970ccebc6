"""Paired ablation of DP-HP / DP-MERF settings on UCI Adult (ε = 1 by default).

Every arm is fitted on the same pairs (noise seed, random_state): the harness's test-only
``fixed_noise`` fixes the privacy noise, so the arms of one pair share their noise draw. Training still diverges
between arms (any change moves the whole trajectory; single fits vary by about ±0.01 ROC), so
judge an arm on several pairs, not one. This is for choosing defaults; ``adult.py`` (fresh
noise, 3 seeds, every ε) is the protocol that the bars are judged on. Same split, sample size
and evaluation as ``adult.py``.

    python benchmarks/studies/adult_paired.py --method dphp \
        --arm 'defaults={}' --arm 'blocks={"product_schedule": "blocks"}' \
        --arm 'linear-hours={"domain_scales": {"hours-per-week": "linear"}}' \
        --pairs 10:0,12:2,200:0,201:1,202:2 --name dphp_example

An arm is ``label=JSON`` of flat settings (``harness.make``: constructor arguments and
``kernel`` / ``training`` fields by name, e.g. ``{"steps": 400, "selected_pairs": 0}``); the key
``domain_scales`` instead sets the ``scale`` of columns in the bundled public domain. ``--domain plain [--target]`` declares Adult as the plain
arms of ``adult.py`` do (bounds and categories only) instead of the bundled domain. Writes
``results/adult_paired_<name>.csv`` (one row per fit, appended as runs finish, ``--resume`` skips
those done) and ``.md`` (paired table, means, wins against the first arm).
"""

import argparse
import copy
import json
import multiprocessing
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402

METHODS = {'dphp': 'DPHPSynthesizer', 'dpmerf': 'DPMERFSynthesizer'}

DEFAULT_PAIRS = '10:0,12:2,200:0,201:1,202:2'


def parse_arm(text):
    label, _, spec = text.partition('=')
    if not label or not spec:
        raise argparse.ArgumentTypeError(f'an arm is label=JSON, got {text!r}')
    kwargs = json.loads(spec)
    if not isinstance(kwargs, dict):
        raise argparse.ArgumentTypeError(f'arm {label!r}: JSON must be an object')
    return label, kwargs


def parse_pairs(text):
    pairs = []
    for item in text.split(','):
        ns, rs = item.split(':')
        pairs.append((int(ns), int(rs)))
    return pairs


def run_pair(task):
    """Fit + sample + score one (arm, pair); runs in a freshly spawned process."""
    warnings.filterwarnings('ignore')
    import torch

    import sdv_dpkme

    torch.set_num_threads(task['threads'])
    train, test, metadata, domain = harness.adult_split()
    settings = copy.deepcopy(task['kwargs'])
    domain = copy.deepcopy(domain)
    for column, scale in settings.pop('domain_scales', {}).items():
        domain.setdefault('columns', {}).setdefault(column, {})['scale'] = scale
    # a plain arm declares what adult.py's plain arms do (the scoring uses the bundled domain)
    declared = harness.declaration(domain, task['domain'], target=task['target'])
    cls = getattr(sdv_dpkme, METHODS[task['method']])
    row = {'arm': task['arm'], 'ns': task['ns'], 'rs': task['rs'], 'epsilon': task['epsilon']}
    with harness.fixed_noise(task['ns']):
        synth = harness.make(cls, metadata, task['epsilon'], delta=harness.DELTA,
                             random_state=task['rs'], verbose=False, **declared, **settings)
        table = harness.fit_sample(synth, train, row)
    scores, _ = harness.score(test, table, metadata, domain)
    row.update({k: scores[k] for k in ('quality', 'column_shapes', 'column_pair_trends',
                                        'tstr_roc_auc', 'tstr_pr_auc', 'tv_alpha3', 'eval_s')})
    # test-only noise seed: epsilon_spent is inf; the calibrated spend is what is compared
    row['epsilon_calibrated'] = float(synth.get_privacy_report().epsilon_calibrated)
    return row


def write_markdown(frame, arms, path, args):
    order = [label for label, _ in arms]
    cell = frame.assign(v=frame.tstr_roc_auc.map('{:.3f}'.format) + ' / '
                        + frame.tstr_pr_auc.map('{:.3f}'.format))
    table = cell.pivot_table(index=['ns', 'rs'], columns='arm', values='v', aggfunc='first')
    table = table[[a for a in order if a in table.columns]]
    lines = [f'# Paired ablation: {args.method}, ε = {args.epsilon:g}', '',
             f'Generated {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())} by '
             f'`python benchmarks/studies/adult_paired.py {" ".join(sys.argv[1:])}` (git '
             f'{harness.git_commit()}). Cells: TSTR ROC-AUC / PR-AUC (12 classifiers, real test '
             'split); one fit per cell, fitted with the pair\'s test-only fixed noise seed ns and '
             'random_state rs.', '', 'Arms:', '']
    lines += [f'- `{label}`: `{json.dumps(kwargs)}`' for label, kwargs in arms]
    lines += ['', '| (ns, rs) | ' + ' | '.join(table.columns) + ' |',
              '|---|' + '---|' * len(table.columns)]
    for (ns, rs), values in table.iterrows():
        lines.append(f'| ({ns}, {rs}) | ' + ' | '.join(str(v) for v in values.fillna('–')) + ' |')
    means = frame.groupby('arm')[['tstr_roc_auc', 'tstr_pr_auc', 'quality', 'fit_s']].mean()
    base = order[0]
    lines += ['', f'Declaration: `--domain {args.domain}`' + (' --target' if args.target else ''),
              '', '| arm | fits | ROC | PR | quality | fit s | ROC wins vs first arm |',
              '|---|---|---|---|---|---|---|']
    wide = frame.pivot_table(index=['ns', 'rs'], columns='arm', values='tstr_roc_auc')
    for label in order:
        if label not in means.index:
            continue
        m = means.loc[label]
        wins = '–'
        if label != base and base in wide.columns:
            both = wide[[base, label]].dropna()
            wins = f'{int((both[label] > both[base]).sum())} of {len(both)}'
        lines.append(f'| {label} | {int((frame.arm == label).sum())} | {m.tstr_roc_auc:.3f} | '
                     f'{m.tstr_pr_auc:.3f} | {m.quality:.3f} | {m.fit_s:.1f} | {wins} |')
    lines += ['', f'{args.workers} fits at a time, {args.threads} torch thread(s) each, so fit '
              'times are not those of an idle machine.', '']
    path.write_text('\n'.join(lines), encoding='utf-8')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--method', default='dphp', choices=('dphp', 'dpmerf'))
    parser.add_argument('--arm', action='append', type=parse_arm, required=True,
                        help='label=JSON of flat settings (repeat; the first is the baseline)')
    parser.add_argument('--pairs', default=DEFAULT_PAIRS, type=parse_pairs,
                        help='comma-separated noise-seed:random_state pairs')
    parser.add_argument('--epsilon', type=float, default=1.0)
    parser.add_argument('--domain', default='bundled', choices=tuple(harness.DOMAIN_ARMS),
                        help="what the synthesizer is told about Adult, as adult.py's --domain")
    parser.add_argument('--target', action='store_true',
                        help="a plain --domain also names target_column (as adult.py's --target)")
    parser.add_argument('--name', required=True, help='output file stem')
    parser.add_argument('--out', default=str(harness.RESULTS))
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--resume', action='store_true')
    args = parser.parse_args(argv)
    if args.domain != 'bundled' and any('domain_scales' in kwargs for _, kwargs in args.arm):
        parser.error('domain_scales changes the bundled domain; use it with --domain bundled')

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / f'adult_paired_{args.name}.csv'
    done = pd.read_csv(csv_path) if args.resume and csv_path.exists() else pd.DataFrame()
    seen = set() if done.empty else set(zip(done.arm, done.ns, done.rs))
    tasks = [dict(method=args.method, arm=label, kwargs=kwargs, ns=ns, rs=rs,
                  epsilon=args.epsilon, threads=args.threads, domain=args.domain,
                  target=args.target)
             for ns, rs in args.pairs for label, kwargs in args.arm
             if (label, ns, rs) not in seen]
    print(f'{len(tasks)} fits to run ({len(seen)} done).', flush=True)
    rows = [] if done.empty else done.to_dict('records')
    os.environ['OMP_NUM_THREADS'] = str(args.threads)  # classifiers in the children
    context = multiprocessing.get_context('spawn')
    with ProcessPoolExecutor(args.workers, mp_context=context, max_tasks_per_child=1) as pool:
        futures = {pool.submit(run_pair, task): task for task in tasks}
        for future in as_completed(futures):
            row = future.result()
            rows.append(row)
            print(f"{row['arm']} ({row['ns']}, {row['rs']}): ROC {row['tstr_roc_auc']:.3f} "
                  f"PR {row['tstr_pr_auc']:.3f} quality {row['quality']:.3f} "
                  f"fit {row['fit_s']:.0f} s", flush=True)
            frame = pd.DataFrame(rows)
            frame.to_csv(csv_path, index=False)
            write_markdown(frame, args.arm, csv_path.with_suffix('.md'), args)
    print(f'Wrote {csv_path} and {csv_path.with_suffix(".md")}')
    return 0 if rows else 1


if __name__ == '__main__':
    sys.exit(main())
