"""The noise-aware release plan (issue 42 items 2, 6) on 215-row tables: before / after, paired.

DP-HP with every default, epsilon = 1, on sdmetrics' ``student_placements`` (215 rows, the
public declaration of ``small_tables``; quality against its 215 real rows, as that study does)
and on 215, 1,000 or 2,372 rows drawn (seed 0) from the bundled Adult sample (bundled domain,
target 'income'; quality against the other rows of the sample: ``adult_215`` ...). Arms: ``plan='fixed'`` (every term the
options ask for: the former plan) and ``plan='auto'`` (the default). Each seed fixes the model
seed and the privacy noise (``fixed_noise``, test-only: such fits are not private), shared by
both arms. Fit time is wall time on whatever the machine is running besides.

    python -m benchmarks.run release_plan --seeds 3        # writes results/release_plan.md/.csv
    python -m benchmarks.run release_plan --plans          # the plan only (no fit): Adult, Census

``--plans`` lists the default plan's decisions for Adult and Census sizes at epsilon 0.3, 1, 3
from public facts only (the layout of the bundled domains, n, epsilon): no model is fitted.
"""

import argparse
import contextlib
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402
from benchmarks.studies import small_tables  # noqa: E402


def tables():
    from sdv_dpkme.datasets import load_adult_sample

    data, metadata, domain = load_adult_sample()
    placements, placements_md = small_tables.load()
    out = {
        'student_placements': (placements, placements, placements_md, small_tables.TABLE,
                               dict(known_min_max_values=small_tables.BOUNDS,
                                    known_categories=small_tables.CATEGORIES,
                                    nullable_columns=small_tables.NULLABLE)),
    }
    for n in (215, 1000, 2372):  # Adult samples (the tuning tables); test: the rest
        train = data.sample(n=n, random_state=0)
        test = data.drop(index=train.index).reset_index(drop=True)
        out[f'adult_{n}'] = (train.reset_index(drop=True), test, metadata, 'adult',
                             dict(domain=domain, target_column='income'))
    return out


def run_one(table, arm, seed, spec):
    from sdmetrics.reports.single_table import QualityReport

    from sdv_dpkme import DPHPSynthesizer, NoiseDominatedWarning

    train, test, metadata, name, declared = spec
    synth = harness.make(DPHPSynthesizer, metadata, 1.0, random_state=seed, verbose=False,
                         plan=arm, **declared)
    row = {'table': table, 'plan': arm, 'seed': seed, 'commit': harness.git_commit()}
    with warnings.catch_warnings(record=True) as caught, harness.fixed_noise(seed):
        warnings.simplefilter('always')
        start = time.perf_counter()
        synth.fit({name: train})
        row['fit_s'] = time.perf_counter() - start
        out = synth.sample(len(train))
    out = out[name] if isinstance(out, dict) else out
    report = QualityReport()
    report.generate(test, out, metadata.to_dict()['tables'][name], verbose=False)
    privacy = synth.get_privacy_report()
    target = declared.get('target_column')
    if target is not None:  # TSTR: 3 classifiers trained on the synthetic rows, tested on test
        from sdv_dpkme.evaluation import evaluate

        domain = declared['domain']
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            utility = evaluate(test, out, metadata, target_column=target, alphas=(),
                               categories=domain['known_categories'],
                               bounds=domain['known_min_max_values'])
        row.update(tstr_roc=float(utility['tstr_roc_auc']), tstr_pr=float(utility['tstr_pr_auc']))
    row.update(
        quality=report.get_score(),
        shapes=report.get_properties().set_index('Property').loc['Column Shapes', 'Score'],
        pairs=report.get_properties().set_index('Property').loc['Column Pair Trends', 'Score'],
        releases=sorted({r.name for r in privacy.releases}),
        dropped=[p['group'] for p in privacy.plan if p['decision'] == 'dropped'],
        narrowed=[p['group'] for p in privacy.plan if p['decision'] == 'narrowed'],
        noise_warning=any(issubclass(w.category, NoiseDominatedWarning) for w in caught),
        collapse_warning=any(type(w.message).__name__ == 'CollapsedGeneratorWarning'
                             for w in caught),
    )
    print(row, flush=True)
    return row


class _Layout(Exception):
    """Ends a probe fit once the public layout is known (nothing is released before it)."""


def plan_rows(table, cls, metadata, declared, rows, sizes, epsilons=(0.3, 1.0, 3.0)):
    """The default plan's decisions for each (n, epsilon), from the public layout only: a
    probe fit on a few rows stops at the engine, before any release."""
    import torch

    from sdv_dpkme.engines.noise_plan import choose_releases
    from sdv_dpkme.privacy import PrivacyAccountant

    layout = {}

    class Probe(cls):
        __module__ = cls.__module__  # built as the package's own class (harness.make)

        def _fit_engine(self, x, blocks, target, labels, columns, ledger):
            layout.update(blocks=blocks, target=target)
            raise _Layout

    synth = harness.make(Probe, metadata, 1.0, verbose=False, random_state=0, **declared)
    with warnings.catch_warnings(), contextlib.suppress(_Layout):
        warnings.simplefilter('ignore')
        synth.fit({list(metadata.tables)[0]: rows})
    blocks, target = layout['blocks'], layout['target']
    out = []
    for n in sizes:
        terms, selection = synth._planned_terms(blocks, n, torch.Generator().manual_seed(0))
        for epsilon in epsilons:
            *_, entries = choose_releases(
                terms, synth._shares(), target is not None, n,
                1 if target is None else target.width, PrivacyAccountant(epsilon, 1e-5).calibrate,
                synth._max_noise_ratio(), selection, synth._steps(n, blocks),
                *synth._one_way_fallback(blocks))
            out.append({'table': table, 'n': n, 'epsilon': epsilon, **{
                e.group: f'{e.decision} {e.releases}/{e.planned} ({e.ratio:.2g})'
                for e in entries}})
    return out


def census_layout_rows(n=300, seed=0):
    """Rows drawn uniformly from the public Census domain: only the layout is read from them."""
    import numpy as np

    from sdv_dpkme.datasets import load_census_domain, load_census_metadata

    domain, metadata = load_census_domain(), load_census_metadata()
    rng = np.random.default_rng(seed)
    columns = {}
    for name in metadata.to_dict()['tables']['census']['columns']:
        if name in domain['known_categories']:
            columns[name] = rng.choice(domain['known_categories'][name], n)
        else:
            low, high = domain['known_min_max_values'][name]
            columns[name] = rng.integers(low, high + 1, n)
    return pd.DataFrame(columns), metadata, domain


def plans():
    from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer
    from sdv_dpkme.datasets import load_adult_sample

    data, metadata, domain = load_adult_sample()
    census, census_md, census_domain = census_layout_rows()
    rows = []
    for cls in (DPHPSynthesizer, DPMERFSynthesizer):
        rows += plan_rows(f'Adult {cls.__name__}', cls, metadata,
                          dict(domain=domain, target_column='income'), data,
                          (215, 2372, 3000, 30162, 39073, 48842))
        rows += plan_rows(f'Census {cls.__name__}', cls, census_md,
                          dict(domain=census_domain, target_column='income'), census,
                          (215, 3000, 199523))
    return pd.DataFrame(rows).fillna('')


def markdown(frame):
    head = '| ' + ' | '.join(frame.columns) + ' |'
    rule = '|' + '---|' * len(frame.columns)
    return '\n'.join([head, rule, *('| ' + ' | '.join(str(v) for v in row) + ' |'
                                     for row in frame.itertuples(index=False))])


def _tstr(group):
    # a one-class synthetic table has no ROC (NaN): counted, not averaged
    if 'tstr_roc' not in group:
        return ''
    roc = group['tstr_roc']
    return f'{roc.mean():.3f}' + (f' ({roc.isna().sum()} one-class)' if roc.isna().any() else '')


def write(frame, path):
    commit = frame['commit'].iloc[0] if 'commit' in frame else harness.git_commit()
    lines = [
        '# Noise-aware release plan on 215-row tables (issue 42 items 2, 6)', '',
        f'`python -m benchmarks.run release_plan` (fits at commit {commit}). DP-HP '
        'defaults, epsilon = 1, `plan=\'fixed\'` (the former plan) against `plan=\'auto\'` (the '
        'default), paired: each seed fixes the model seed and the privacy noise (test-only '
        '`fixed_noise`). student_placements: quality against its 215 real rows; adult_215: 215 '
        'rows of the bundled Adult sample, quality against the other 2,785. Fit time is wall '
        'time on a shared 2-core machine (other jobs running): compare arms, not absolutes.', '',
        '| table | plan | seeds | quality | column shapes | pair trends | TSTR ROC | '
        'fit s (median) | dropped / narrowed | NoiseDominatedWarning | collapse warnings |',
        '|---|---|---|---|---|---|---|---|---|---|---|',
    ]
    for (table, arm), g in frame.groupby(['table', 'plan'], sort=False):
        lines.append(
            f"| {table} | {arm} | {len(g)} | {g['quality'].mean():.3f} ± {g['quality'].std():.3f}"
            f" | {g['shapes'].mean():.3f} | {g['pairs'].mean():.3f} | {_tstr(g)} | "
            f"{g['fit_s'].median():.1f}"
            f" | {g['dropped'].iloc[0]} / {g['narrowed'].iloc[0]} | "
            f"{int(g['noise_warning'].sum())} of {len(g)} | {int(g['collapse_warning'].sum())} |")
    lines += ['', 'Per seed (paired difference auto - fixed):', '',
              '| table | seed | quality fixed | quality auto | diff | fit s fixed | fit s auto |',
              '|---|---|---|---|---|---|---|']
    for (table, seed), g in frame.groupby(['table', 'seed'], sort=False):
        arms = g.set_index('plan')
        if {'fixed', 'auto'} <= set(arms.index):
            f, a = arms.loc['fixed'], arms.loc['auto']
            lines.append(f"| {table} | {seed} | {f['quality']:.3f} | {a['quality']:.3f} | "
                         f"{a['quality'] - f['quality']:+.3f} | {f['fit_s']:.1f} | "
                         f"{a['fit_s']:.1f} |")
    plans = Path(str(path).removesuffix('.md') + '_plans.csv')
    if plans.exists():  # written by --plans: the decisions at Adult and Census sizes, no fit
        lines += ['', '## The default plan at Adult and Census sizes (`--plans`, no fit)', '',
                  "Each cell: decision, releases made / planned (expected noise norm / signal "
                  'bound). Layouts of the bundled domains (Census: its public domain), target '
                  "'income', delta 1e-5, `max_noise_ratio` 5.", '',
                  markdown(pd.read_csv(plans).fillna(''))]
    Path(path).write_text('\n'.join(lines) + '\n')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, default=3)
    parser.add_argument('--tables', nargs='*', default=['student_placements', 'adult_215'])
    parser.add_argument('--out', default=str(harness.RESULTS / 'release_plan'))
    parser.add_argument('--arms', nargs='*', default=['auto', 'fixed'],
                        help="plan arms to fit: 'auto' (the default) and/or 'fixed'")
    parser.add_argument('--plans', action='store_true',
                        help='only list the plans for Adult and Census sizes (no fit)')
    args = parser.parse_args(argv)
    if args.plans:
        frame = plans()
        frame.to_csv(args.out + '_plans.csv', index=False)
        print(markdown(frame))
        return 0
    specs = tables()
    rows = []
    for table in args.tables:
        for seed in range(args.seeds):
            for arm in args.arms:
                rows.append(run_one(table, arm, seed, specs[table]))
                frame = pd.DataFrame(rows)
                frame.to_csv(args.out + '.csv', index=False)
                write(frame, args.out + '.md')
    return 0


if __name__ == '__main__':
    sys.exit(main())
