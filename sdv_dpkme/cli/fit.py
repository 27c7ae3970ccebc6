"""``fit``, ``sample`` and ``demo``: the main path from a private table to synthetic rows."""

import json
import sys
import time
import warnings
from pathlib import Path

from sdv_dpkme.cli.common import (
    SYNTHESIZERS,
    CommandError,
    UsageError,
    _input_file,
    _json_file,
    _load_metadata,
    _load_synthesizer,
    _output_file,
    _read_table,
    _sample,
    _table_file,
)
from sdv_dpkme.cli.params import _constructor_kwargs, _parameters


def fit(args):
    """Fit a DP synthesizer on a table; write the synthesizer file and its privacy report."""
    import sdv_dpkme
    from sdv.errors import SynthesizerInputError

    from sdv_dpkme.fileio import atomic_paths

    cls = getattr(sdv_dpkme, SYNTHESIZERS[args.synthesizer])
    data_path = _table_file(args.data, 'Table file')
    if not args.metadata:
        # Detecting sdtypes reads the private values and is no DP release: never inside a fit.
        raise UsageError(
            '--metadata is required: detecting the column types reads the private rows, so it '
            f'cannot happen inside a private fit. Run `sdv-dpkme metadata {args.data} --out '
            'metadata.json`, check every sdtype against what you know without the data, then '
            'fit with --metadata metadata.json.')
    metadata, table = _load_metadata(args.metadata, args.table)
    domain = _json_file(args.domain, 'Domain file') if args.domain else None
    if domain is not None and not isinstance(domain, dict):
        raise UsageError(f"Domain file '{args.domain}' must hold a JSON object (docs/domains.md).")
    out = _output_file(args.out, 'Synthesizer file', inputs=[data_path, args.metadata,
                                                                 args.domain])
    report_path = _output_file(args.privacy_report or out.with_suffix('.privacy.json'),
                               'Privacy report file', ['.json'],
                               inputs=[data_path, args.metadata, args.domain, out])
    params = _parameters(args.param, cls)
    public_path = None
    if args.public_data:
        if args.synthesizer != 'reweighting':
            raise UsageError('--public-data is only for --synthesizer reweighting (it reweights '
                             'public rows).')
        public_path = _table_file(args.public_data, 'Public table file')
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', FutureWarning)
            public = {'metadata_is_public': True} if args.metadata_is_public else {}
            synthesizer = cls(metadata, **_constructor_kwargs(
                cls, params, epsilon=args.epsilon, delta=args.delta, domain=domain,
                target_column=args.target, random_state=args.seed,
                domain_budget_share=args.discovery_share, verbose=not args.quiet, **public,
            ))
    except (SynthesizerInputError, ValueError, TypeError) as err:
        raise UsageError(str(err)) from None
    if public_path is not None:
        synthesizer.public_data = _read_table(public_path, synthesizer, args.na_value or [''])
        try:
            synthesizer._public_table()  # columns and values inside the declared domain
        except SynthesizerInputError as err:
            raise UsageError(f"Public table '{public_path}': {err}") from None
    data = _read_table(data_path, synthesizer, args.na_value or [''])
    try:
        synthesizer.validate({table: data})
    except Exception as err:  # noqa: BLE001 - SDV's InvalidDataError and friends
        raise UsageError(f"The table '{data_path}' does not fit the metadata: {err}") from None

    print(f'Fitting {cls.__name__} on {len(data):,} rows of {table!r} at (epsilon={args.epsilon:g}'
          f', delta={args.delta:g}) ...', file=sys.stderr)
    started = time.perf_counter()
    try:
        synthesizer.fit({table: data})
    except (SynthesizerInputError, ValueError) as err:
        hint = ''
        if 'domain_template' in str(err):  # the library's advice, in command-line terms
            hint = (f'\nOn the command line: sdv-dpkme domain-template '
                    f'{args.metadata} --out domain.json, fill it in, then fit '
                    'with --domain domain.json.')
        raise CommandError(f'The fit failed: {err}{hint}') from None
    seconds = time.perf_counter() - started
    report = synthesizer.get_privacy_report()
    with atomic_paths([out, report_path]) as (synth_tmp, report_tmp):
        synthesizer.save(synth_tmp)
        report.to_json(report_tmp)
    print(report)
    print(f'Fitted in {seconds:.1f} s; spent epsilon={report.epsilon_spent:.6g} of '
          f'{report.epsilon:g}. Wrote {out} and {report_path}.')


def sample(args):
    """Sample rows from a synthesizer file into a CSV or Parquet file."""
    from sdv_dpkme.fileio import TABLE_EXTENSIONS, parquet_missing, table_format, write_table

    _input_file(args.synthesizer, 'Synthesizer file')
    out = _output_file(args.out, 'Output file', list(TABLE_EXTENSIONS),
                       inputs=[args.synthesizer])
    if table_format(out) == 'parquet' and parquet_missing():
        raise UsageError(parquet_missing())
    synthesizer = _load_synthesizer(args.synthesizer)
    try:
        synthetic = _sample(synthesizer, args.rows)
    except ValueError as err:
        raise CommandError(f'Sampling failed: {err}') from None
    write_table(synthetic, out)
    print(f'Wrote {len(synthetic):,} synthetic rows to {out}.')


def demo(args):
    """Fit DP-HP on the bundled Adult sample and write its outputs."""
    from sdv_dpkme import DPHPSynthesizer
    from sdv_dpkme.datasets import load_adult_sample
    from sdv_dpkme.evaluation import plot_worst_columns, quality_scores, quality_summary
    from sdv_dpkme.fileio import atomic_paths

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out '{out}' is a file; give a folder.")
    data, metadata, domain = load_adult_sample()
    print(f'Fitting DPHPSynthesizer on the bundled Adult sample ({len(data)} rows), '
          f'epsilon={args.epsilon}, delta={args.delta} ...')
    synth = DPHPSynthesizer(
        metadata, epsilon=args.epsilon, delta=args.delta,
        domain=domain, target_column='income',
        random_state=args.seed,
    )
    started = time.perf_counter()
    synth.fit({'adult': data})
    fit_seconds = time.perf_counter() - started
    synthetic = synth.sample(num_rows=args.rows or len(data))['adult']
    report = synth.get_privacy_report()
    scores = quality_scores(data, synthetic, metadata)
    summary = {
        'rows': len(synthetic),
        'fit_seconds': round(fit_seconds, 2),
        'epsilon_spent': report.epsilon_spent,
        'delta': report.delta,
        'sdmetrics_quality': scores['quality'],
        'sdmetrics_column_shapes': scores['column_shapes'],
        'sdmetrics_column_pair_trends': scores['column_pair_trends'],
        'sdmetrics_diagnostic': scores['diagnostic'],
        # the worst columns and pairs, so a user sees where the quality is lost
        'worst_column_shapes': [
            {'column': r['Column'], 'metric': r['Metric'], 'score': float(r['Score'])}
            for _, r in scores['column_shape_details'].dropna(subset=['Score']).head(3).iterrows()
        ],
        'worst_pair_trends': [
            {'columns': [r['Column 1'], r['Column 2']], 'metric': r['Metric'],
             'score': float(r['Score'])}
            for _, r in scores['pair_trend_details'].dropna(subset=['Score']).head(3).iterrows()
        ],
    }
    names = ['synthetic.csv', 'privacy_report.json', 'sdmetrics_summary.json', 'synthesizer.pkl']
    with atomic_paths([out / name for name in names]) as (csv, privacy, summary_file, pickle):
        synthetic.to_csv(csv, index=False)
        report.to_json(privacy)
        Path(summary_file).write_text(json.dumps(summary, indent=2))
        synth.save(pickle)
    written = 'synthetic.csv, privacy_report.json, sdmetrics_summary.json, synthesizer.pkl'
    try:  # real (the bundled public sample) vs synthetic marginals of the worst columns
        plot_worst_columns(data, synthetic, metadata, scores, out / 'worst_columns.png',
                           bounds=domain['known_min_max_values'],
                           categories=domain['known_categories'])
        written += ', worst_columns.png'
    except ImportError:
        from sdv_dpkme.evaluation.report_plots import missing_matplotlib_message

        print('(no worst_columns.png: ' + missing_matplotlib_message() + ')')
    print(report)
    print(json.dumps(summary, indent=2))
    print(quality_summary(scores))
    print(f'(Scored against the {len(data):,} rows it was fitted on. The README quotes higher '
          'figures from the full Adult table: the noise per row falls as 1/n; docs/epsilon.md.)')
    print(f'Wrote {out}/{written}')

