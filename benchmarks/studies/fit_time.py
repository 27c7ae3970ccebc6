"""Fit time of DP-HP with defaults, by stage (issue 42, scope item 7).

A plain user's fit: bounds and categories declared (``harness.declaration(..., 'plain',
target=True)``), the target declared, everything else default, epsilon = 1, random_state 0.
Each (table, code) runs in a fresh process, so its peak memory and its imports are its own.
Stages are read by function name from cProfile (``harness.stage_times``; it slows pure-Python
code a little: read the shares): the engine's one pass, the releases, the choice of links,
training, the collapse check, calibration, pools, and everything before the engine (SDV's
checks, discovery and encoding set-up) as the rest of the fit. ``sample(n)`` is timed apart.
Whether the fit imported torch's compiler (``torch._dynamo``, ``torch._inductor``, ``sympy``)
is recorded too.

Tables (``--tables``): ``adult`` (the train split, 39,073 rows), ``adult30k`` (a seeded 30,000-row
subsample), ``adult215`` (a seeded 215-row subsample), ``census`` (the official train split,
199,523 rows), ``census50k`` (a seeded 50,000-row subsample).

    python benchmarks/studies/fit_time.py --tables adult215,adult --label after --json /tmp/after.jsonl
    python benchmarks/studies/fit_time.py --tables adult215 --code /tmp/integ42 --label before \
        --json /tmp/before.jsonl      # the same study on another checkout's package
    python benchmarks/studies/fit_time.py --report /tmp/before.jsonl /tmp/after.jsonl

``--code DIR`` runs the fits with the package of another checkout (e.g. ``git archive integ42``
unpacked there) in front of this one on ``sys.path``. ``--report`` prints the timing table of
stored runs (results/fit_time.md holds it with the reading). ``--calibration-pairs`` runs the
paired check of calibration_rows instead (``calibration_pair``).
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402

TABLES = {'adult': ('adult', None), 'adult30k': ('adult', 30_000), 'adult215': ('adult', 215),
          'census': ('census', None), 'census50k': ('census', 50_000)}

#: stage -> [(path part, function)] (harness.stage_times, summed)
STAGES = {
    'engine': [('sdv_dpkme/engines/kme', 'fit')],
    'one pass': [('sdv_dpkme/engines/kme_plan', 'one_pass')],
    'releases': [('sdv_dpkme/engines/kme_plan', 'release_class_proportions'),
                 ('sdv_dpkme/engines/kme_plan', 'release_embeddings'),
                 ('sdv_dpkme/engines/kme_pairs', 'release_selected_pairs')],
    'links': [('sdv_dpkme/engines/kme_pairs', 'links_to_use')],
    'training': [('sdv_dpkme/engines/generator_training', 'train_generator')],
    'collapse check': [('sdv_dpkme/engines/generator', 'collapsed_classes')],
    'calibration': [('sdv_dpkme/engines/calibration', 'calibrate_values'),
                    ('sdv_dpkme/engines/calibration', 'calibrate')],
    'pools': [('sdv_dpkme/engines/kme_training', 'reweighted_pools')],
}
COMPILER = ('torch._dynamo', 'torch._inductor', 'sympy')


def run_one(table, code, threads, steps=None, kwargs=None):
    """One fit + sample in this (fresh) process; returns a row of figures. ``steps``: a fixed
    number of training steps instead of 'auto' (the row then also gives the training time
    extrapolated to 'auto''s steps: per-step time x their number)."""
    import copy
    import dataclasses

    if code:
        sys.path.insert(0, code)
    warnings.filterwarnings('ignore')
    import torch

    import sdv_dpkme

    torch.set_num_threads(threads)
    name, rows = TABLES[table]
    split = harness.adult_split if name == 'adult' else harness.census_split
    train, _, metadata, domain = split(rows)
    declared = harness.declaration(domain, 'plain', target=True)
    synth = harness.make(sdv_dpkme.DPHPSynthesizer, metadata, 1.0, delta=harness.DELTA,
                         random_state=0, verbose=False, **declared,
                         **dict(kwargs or {}, **({} if steps is None else {'steps': steps})))
    parts = {f'{k}|{f}': (k, f) for k, f in {(p, f) for s in STAGES.values() for p, f in s}}
    load = os.getloadavg()[0]
    cpu = time.process_time()
    started = time.perf_counter()
    _, seconds = harness.stage_times(lambda: synth.fit({name: train}), parts)
    fit_s = time.perf_counter() - started
    cpu = time.process_time() - cpu
    row = {'table': table, 'rows': len(train), 'code': code or 'this checkout',
           'package': sdv_dpkme.__file__, 'fit_s': fit_s, 'fit_cpu_s': cpu, 'load_start': load,
           'threads': threads}
    for stage, members in STAGES.items():
        row[stage] = sum(seconds[f'{p}|{f}'] for p, f in members)
    row['before engine'] = fit_s - row['engine']
    row['compiler imported'] = [m for m in COMPILER if m in sys.modules]
    history = synth.get_loss_values()
    row['steps'] = int(history['Step'].max()) + 1
    auto = copy.copy(synth)
    auto.training = dataclasses.replace(synth.training, steps='auto')
    row['auto steps'] = auto._steps(len(train), synth._model.generator.blocks)
    row['training at auto steps'] = row['training'] / row['steps'] * row['auto steps']
    started = time.perf_counter()
    synth.sample(len(train))
    row['sample_s'] = time.perf_counter() - started
    row['peak_mb'] = harness.vm_hwm_mb()
    row['load_end'] = os.getloadavg()[0]
    return row


def calibration_pair(table, ns, rs, threads, steps=None, sample_rows=3000):
    """Paired check of calibration_rows: ONE training (fixed noise ``ns``, random_state ``rs``),
    then the post-processing run on copies of the trained model with the former 'auto'
    (30,000 rows for n < 30,000) and with today's ``generated_rows(n)``, from the same RNG
    state; each arm's sample is scored against (a subsample of) the test split (SDMetrics, TSTR
    with 2 fast classifiers). The arms differ only by the calibration's Monte Carlo rows."""
    import copy
    import dataclasses

    warnings.filterwarnings('ignore')
    import torch

    import sdv_dpkme
    from sdv_dpkme.engines import calibration, kme, kme_training

    torch.set_num_threads(threads)
    name, rows = TABLES[table]
    split = harness.adult_split if name == 'adult' else harness.census_split
    train, test, metadata, domain = split(rows)
    captured = {}

    def capture(model, objectives, training, rng, verbose):  # train, keep, post-process later
        captured.update(model=copy.deepcopy(model), objectives=objectives, training=training,
                        rng=rng.get_state())
        return model

    kme.post_process = capture
    with harness.fixed_noise(ns):
        synth = harness.make(sdv_dpkme.DPHPSynthesizer, metadata, 1.0, delta=harness.DELTA,
                             random_state=rs, verbose=False,
                             **harness.declaration(domain, 'plain', target=True),
                             **({} if steps is None else {'steps': steps}))
        synth.fit({name: train})
    out = []
    test = test.sample(n=min(len(test), sample_rows), random_state=0)
    for arm, count in (('former auto', max(30_000, calibration.generated_rows(len(train)))),
                       ('auto', calibration.generated_rows(len(train)))):
        model = copy.deepcopy(captured['model'])
        rng = torch.Generator()
        rng.set_state(captured['rng'])
        training = dataclasses.replace(captured['training'], calibration_rows=count)
        started = time.perf_counter()
        kme_training.post_process(model, captured['objectives'], training, rng, False)
        seconds = time.perf_counter() - started
        synth._model = model
        synth.reset_sampling()  # the same draws for both arms
        sample = synth.sample(sample_rows)
        sample = sample[name] if isinstance(sample, dict) else sample
        row, _ = harness.score(test, sample, metadata, domain,
                               classifiers=('LogisticRegression', 'GaussianNB'), alphas=(3,))
        out.append({'table': table, 'ns': ns, 'rs': rs, 'steps': steps, 'arm': arm,
                    'calibration_rows': count,
                    'post_process_s': seconds, **{k: row[k] for k in (
                        'quality', 'column_shapes', 'column_pair_trends', 'tstr_roc_auc',
                        'tstr_pr_auc', 'tv_alpha3')}})
    return out


def report(paths):
    rows = [r for p in paths for r in harness.read_jsonl(p)]
    stages = ['before engine', *[s for s in STAGES if s != 'engine']]
    head = ['table', 'rows', 'label', 'fit s', 'fit CPU s', *stages, 'sample s', 'peak MB',
            'steps', 'compiler', 'load']
    body = []
    for r in rows:
        cpu = f"{r['fit_cpu_s']:.0f}" if 'fit_cpu_s' in r else '-'
        body.append([r['table'], f"{r['rows']:,}", r.get('label', ''), f"{r['fit_s']:.1f}", cpu,
                     *[f'{r[s]:.1f}' for s in stages], f"{r['sample_s']:.1f}",
                     f"{r['peak_mb']:.0f}", r['steps'],
                     'yes' if r['compiler imported'] else 'no',
                     f"{r['load_start']:.1f}-{r['load_end']:.1f}"])
    return harness.markdown_table(head, body)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--tables', default='adult215,adult')
    parser.add_argument('--code', default=None, help='another checkout whose package to time')
    parser.add_argument('--label', default='')
    parser.add_argument('--json', default=None, help='append the rows to this JSON-lines file')
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--steps', type=int, default=None,
                        help="fixed training steps (the row extrapolates to 'auto''s)")
    parser.add_argument('--kwargs', type=json.loads, default=None,
                        help='JSON of flat DP-HP settings beside the defaults, e.g. '
                             '\'{"batch_size": 512}\' (the row records them)')
    parser.add_argument('--report', nargs='*', default=None,
                        help='print the timing table of these JSON-lines files (markdown)')
    parser.add_argument('--calibration-pairs', default=None,
                        help='noise:random_state pairs, e.g. 10:0,12:2,200:0: the paired '
                             'calibration_rows check on --tables instead of the timing')
    args = parser.parse_args()
    if args.calibration_pairs:
        for table in args.tables.split(','):
            for pair in args.calibration_pairs.split(','):
                ns, rs = (int(v) for v in pair.split(':'))
                for row in harness.run_isolated(calibration_pair, table, ns, rs, args.threads,
                                                args.steps):
                    print(json.dumps(row), flush=True)
                    if args.json:
                        harness.append_jsonl(args.json, row)
        return
    if args.report is not None:
        print(report(args.report))
        return
    for table in args.tables.split(','):
        row = harness.run_isolated(run_one, table, args.code, args.threads, args.steps,
                                   args.kwargs)
        row['label'] = args.label
        row['kwargs'] = args.kwargs or {}
        row['commit'] = subprocess.run(['git', '-C', args.code or str(HERE), 'rev-parse',
                                        '--short', 'HEAD'], capture_output=True,
                                       text=True).stdout.strip()
        print(json.dumps(row), flush=True)
        if args.json:
            harness.append_jsonl(args.json, row)


if __name__ == '__main__':
    main()
