"""Small tables (issue 21 item 5): fit time, stability and collapse warnings on 215 rows.

sdmetrics' ``student_placements`` demo (215 rows, 17 columns: ids, dates, missing values) with a
domain written from public facts only (percentages in [0, 100], a salary cap, the calendar years
of the demo), every other argument default, epsilon = 1. For each seed: wall time of fit and of
sample(215), SDMetrics quality against the real rows, the share of distinct rows, and whether a
CollapsedGeneratorWarning was given. SDV's GaussianCopula (not private) is the reference, and
``--old-defaults K`` adds DP-HP with the former fixed steps=500, batch_size=1024 on the first K
seeds (paired: same seeds).

    python benchmarks/studies/small_tables.py --seeds 20 --old-defaults 5   # writes results/small_tables.md
"""

import argparse
import json
import os
import sys
import warnings
from importlib.resources import files
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402

TABLE = 'student_placements'
PERCENT = ['second_perc', 'high_perc', 'degree_perc', 'employability_perc', 'mba_perc']
BOUNDS = {**{c: (0, 100) for c in PERCENT}, 'salary': (0, 1_000_000),
          'experience_years': (0, 10), 'duration': (0, 12),
          'start_date': ('2020-01-01', '2021-12-31'), 'end_date': ('2020-01-01', '2021-12-31')}
CATEGORIES = {'gender': ['F', 'M'], 'high_spec': ['Arts', 'Commerce', 'Science'],
              'degree_type': ['Comm&Mgmt', 'Others', 'Sci&Tech'], 'mba_spec': ['Mkt&Fin', 'Mkt&HR'],
              'work_experience': [False, True], 'placed': [False, True]}
NULLABLE = ['salary', 'start_date', 'end_date', 'duration']


def load():
    from sdv.metadata import Metadata

    demo = files('sdmetrics') / 'demos' / 'single_table'
    data = pd.read_csv(demo / 'student_placements_real.csv', dtype={'student_id': str})
    metadata = Metadata.load_from_json(str(demo / 'metadata.json'))
    return data, metadata


def run_one(name, seed, data, metadata, **kwargs):
    from sdmetrics.reports.single_table import QualityReport
    from sdv.single_table import GaussianCopulaSynthesizer

    import sdv_dpkme

    if name == 'GaussianCopula':
        synth = harness.make(GaussianCopulaSynthesizer, metadata, None)
    else:
        synth = harness.make(getattr(sdv_dpkme, name), metadata, 1.0, known_min_max_values=BOUNDS,
                             known_categories=CATEGORIES, nullable_columns=NULLABLE,
                             random_state=seed, verbose=False, **kwargs)
    timing = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        out = harness.fit_sample(synth, data, timing, TABLE)
    report = QualityReport()
    report.generate(data, out, metadata.to_dict()['tables'][TABLE], verbose=False)
    return {
        'method': name + ('' if not kwargs else ' ' + json.dumps(kwargs)), 'seed': seed,
        'fit_s': timing['fit_s'], 'sample_s': timing['sample_s'], 'quality': report.get_score(),
        'distinct_rows': float(1 - out.drop(columns='student_id').duplicated().mean()),
        'collapse_warning': any(type(w.message).__name__ == 'CollapsedGeneratorWarning'
                                for w in caught),
    }


def summarise(frame):
    rows = []
    for method, group in frame.groupby('method', sort=False):
        rows.append({
            'method': method, 'seeds': len(group),
            'fit s (median / max)': f"{group['fit_s'].median():.1f} / {group['fit_s'].max():.1f}",
            'quality (mean ± sd)': f"{group['quality'].mean():.3f} ± {group['quality'].std():.3f}",
            'quality (min / max)': f"{group['quality'].min():.3f} / {group['quality'].max():.3f}",
            'distinct rows (min)': f"{group['distinct_rows'].min():.2f}",
            'collapse warnings': int(group['collapse_warning'].sum()),
        })
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, default=20)
    parser.add_argument('--old-defaults', type=int, default=0,
                        help='also run DP-HP with steps=500, batch_size=1024 on this many seeds')
    parser.add_argument('--out', default=str(harness.RESULTS / 'small_tables'))
    args = parser.parse_args(argv)
    data, metadata = load()
    runs = []
    plan = [('DPHPSynthesizer', s, {}) for s in range(args.seeds)]
    plan += [('DPMERFSynthesizer', s, {}) for s in range(min(args.seeds, 5))]
    plan += [('DPHPSynthesizer', s, {'steps': 500, 'batch_size': 1024})
             for s in range(args.old_defaults)]
    plan += [('GaussianCopula', 0, {})]
    for name, seed, kwargs in plan:
        runs.append(run_one(name, seed, data, metadata, **kwargs))
        print(runs[-1], flush=True)
    frame = pd.DataFrame(runs)
    frame.to_csv(args.out + '.csv', index=False)
    table = summarise(frame)
    cores = os.cpu_count()
    intro = (f'Written by `benchmarks/studies/small_tables.py` on {cores} cores. Plain user path: '
             'public bounds and categories declared (see the script), every other argument '
             "default; GaussianCopula is SDV's, not private. Fit and sample times are "
             "wall-clock seconds; quality is SDMetrics' QualityReport against the 215 real rows.")
    body = harness.markdown_table(list(table.columns), table.itertuples(index=False))
    harness.write_report(args.out + '.md',
                         'Small tables: student_placements (215 rows), epsilon = 1',
                         [(None, intro), (None, body)])
    print(table.to_string(index=False))
    return 0


if __name__ == '__main__':
    sys.exit(main())
