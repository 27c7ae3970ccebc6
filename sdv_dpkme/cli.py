"""Command line: ``sdv-dpkme fit | sample | report | domain-template | demo | audit`` (or
``python -m sdv_dpkme ...``). See docs/cli.md.

Every argument and input file is checked before any work, so a bad one costs nothing. Outputs are
written to a temporary file in the target's directory and renamed into place at the end: a failed
command leaves no partial file. Exit codes: 0 done; 1 failed while working (nothing written);
2 bad argument or input, found before any work (nothing written); 130 interrupted.
"""

import argparse
import contextlib
import json
import sys
import time
import warnings
from pathlib import Path

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

SYNTHESIZERS = {'dphp': 'DPHPSynthesizer', 'dpmerf': 'DPMERFSynthesizer',
                'dpkip': 'DPKIPSynthesizer', 'reweighting': 'DPReweightingSynthesizer'}
# constructor arguments that have their own option, or that the command line does not offer
_OWN_OPTIONS = {'metadata', 'epsilon', 'delta', 'target_column', 'random_state', 'domain',
                'domain_budget_share', 'metadata_is_public', 'verbose', 'public_data'}
_REFUSED = {'noise_seed': 'it would fix the privacy noise, which voids the guarantee (tests use '
                          'sdv_dpkme.privacy.testing.fixed_noise)',
            'known_min_max_values': 'declare bounds in the --domain file',
            'known_categories': 'declare categories in the --domain file',
            'nullable_columns': 'declare nullability in the --domain file'}


class UsageError(Exception):
    """A bad argument or input, found before any work (exit 2)."""


class CommandError(Exception):
    """The work failed (exit 1); nothing was written."""


# ------------------------------------------------------------------------- argument types
def _epsilon(text):
    value = _float(text)
    if not value > 0:  # also NaN
        raise argparse.ArgumentTypeError(
            f'epsilon must be > 0, got {text} (smaller epsilon = more privacy).')
    return value


def _delta(text):
    value = _float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(
            f'delta must be in (0, 1), got {text}; choose it well below 1/n, e.g. 1e-5.')
    return value


def _share(text):
    value = _float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f'the share must be in [0, 1), got {text}.')
    return value


def _rows(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'rows must be a whole number, got {text!r}.') from None
    if value < 1:
        raise argparse.ArgumentTypeError(f'rows must be at least 1, got {value}.')
    return value


def _float(text):
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'not a number: {text!r}.') from None


# ----------------------------------------------------------------------- checks of files
def _input_file(path, what):
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{what} '{path}' does not exist.")
    if not path.is_file():
        raise UsageError(f"{what} '{path}' is not a file.")
    return path


def _json_file(path, what):
    path = _input_file(path, what)
    try:
        return json.loads(path.read_text(encoding='utf-8'))
    except json.JSONDecodeError as err:
        raise UsageError(
            f"{what} '{path}' is not valid JSON: {err.msg} at line {err.lineno}, column "
            f'{err.colno}.'
        ) from None
    except UnicodeDecodeError:
        raise UsageError(f"{what} '{path}' is not a UTF-8 text file.") from None


def _table_file(path, what):
    from sdv_dpkme.fileio import TABLE_EXTENSIONS, table_format

    path = _input_file(path, what)
    if table_format(path) is None:
        raise UsageError(f"{what} '{path}' must end in {', '.join(TABLE_EXTENSIONS)}.")
    return path


def _output_file(path, what, extensions=None, inputs=()):
    path = Path(path)
    if extensions and path.suffix.lower() not in extensions:
        raise UsageError(
            f"{what} '{path}' must end in {' or '.join(extensions)} (the format follows the "
            'extension).'
        )
    if path.is_dir():
        raise UsageError(f"{what} '{path}' is a folder; give a file name.")
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{what} '{path}': '{parent}' is a file, not a folder.")
            break
    for source in inputs:
        if source is not None and path.absolute() == Path(source).absolute():
            raise UsageError(f"{what} '{path}' would overwrite an input file.")
    return path


def _load_metadata(path, table):
    from sdv.metadata import Metadata

    document = _json_file(path, 'Metadata file')
    if not isinstance(document, dict):
        raise UsageError(f"Metadata file '{path}' must hold a JSON object.")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # SDV's note on the old single-table format
            metadata = Metadata.load_from_json(path)
    except Exception as err:  # noqa: BLE001 - SDV raises several kinds for an invalid file
        raise UsageError(f"Metadata file '{path}' is not valid SDV metadata: {err}") from None
    names = list(metadata.tables)
    if table is None:
        if len(names) != 1:
            raise UsageError(
                f"Metadata file '{path}' describes {len(names)} tables {names}; pick one with "
                '--table.'
            )
        return metadata, names[0]
    if table not in names:
        raise UsageError(f"Table '{table}' is not in the metadata file; it has {names}.")
    if len(names) == 1:
        return metadata, table
    single = {'METADATA_SPEC_VERSION': metadata.to_dict().get('METADATA_SPEC_VERSION', 'V1'),
              'tables': {table: metadata.to_dict()['tables'][table]}}
    return Metadata.load_from_dict(single), table


def _parameters(pairs, cls):
    """The ``--param NAME=VALUE`` pairs as flat settings for ``build_kwargs``: constructor
    arguments without an option of their own, and kernel / training fields, bare (``steps``) or
    qualified (``training.steps``). Values are JSON, else plain words (``steps=auto``)."""
    from sdv_dpkme.synthesizers.options import build_kwargs

    params = {}
    for pair in pairs or []:
        key, sep, text = pair.partition('=')
        key = key.strip().replace('-', '_')
        if not sep or not key:
            raise UsageError(f"--param takes NAME=VALUE, got {pair!r}.")
        bare = key.rpartition('.')[2]
        if bare in _REFUSED:
            raise UsageError(f'--param {key} is not available on the command line: '
                             f'{_REFUSED[bare]}.')
        if key in _OWN_OPTIONS:
            raise UsageError(f'--param {key}: use its own option (see --help).')
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text  # a plain word, e.g. steps=auto
        params[key] = value
    try:
        build_kwargs(cls, params)  # unknown names and bad values fail here, before any work
    except Exception as err:  # noqa: BLE001 - SynthesizerInputError, or a bad value's TypeError
        raise UsageError(f'--param: {err}') from None
    return params


def _constructor_kwargs(cls, params, **arguments):
    """``cls``'s keyword arguments from the command's own options and the ``--param`` pairs."""
    from sdv_dpkme.synthesizers.options import build_kwargs

    return build_kwargs(cls, {**arguments, **params})


def _load_synthesizer(path):
    from sdv.utils import load_synthesizer

    from sdv_dpkme.synthesizers.base import BaseDPSynthesizer

    path = _input_file(path, 'Synthesizer file')
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', FutureWarning)
            synthesizer = load_synthesizer(str(path))
    except Exception as err:  # noqa: BLE001 - unpickling fails in many ways
        raise UsageError(
            f"'{path}' is not a synthesizer file ({type(err).__name__}: {err})."
        ) from None
    if not isinstance(synthesizer, BaseDPSynthesizer):
        raise UsageError(
            f"'{path}' holds a {type(synthesizer).__name__}, not a DP synthesizer of sdv_dpkme."
        )
    if not getattr(synthesizer, '_fitted', False):
        raise UsageError(f"The synthesizer in '{path}' was never fitted.")
    return synthesizer


def _read_table(path, synthesizer, na_values):
    from sdv_dpkme.fileio import TableError, read_table

    metadata = synthesizer.get_metadata().to_dict()
    (table,) = metadata['tables'].values()
    try:
        return read_table(path, table['columns'], getattr(synthesizer, '_domains', {}),
                          na_values=na_values)
    except TableError as err:
        raise UsageError(str(err)) from None


def _sample(synthesizer, rows):
    synthetic = synthesizer.sample(num_rows=rows)
    return synthetic[synthesizer._table_name] if isinstance(synthetic, dict) else synthetic


# ------------------------------------------------------------------------------ commands
def fit(args):
    """Fit a DP synthesizer on a table; write the synthesizer file and its privacy report."""
    import sdv_dpkme
    from sdv.errors import SynthesizerInputError

    from sdv_dpkme.fileio import atomic_paths

    cls = getattr(sdv_dpkme, SYNTHESIZERS[args.synthesizer])
    data_path = _table_file(args.data, 'Table file')
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
            hint = (f'\nOn the command line: sdv-dpkme domain-template {args.metadata} --out '
                    'domain.json, fill it in, then fit with --domain domain.json.')
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


def report(args):
    """Write the HTML report of a synthesizer file, optionally against a real table."""
    from sdv_dpkme.evaluation.html_report import (
        ReportDependencyError,
        build_report,
        check_dependencies,
    )
    from sdv_dpkme.evaluation.tstr import DEFAULT_CLASSIFIERS
    from sdv_dpkme.fileio import atomic_path

    _input_file(args.synthesizer, 'Synthesizer file')
    real_path = _table_file(args.real, 'Real table file') if args.real else None
    out = _output_file(args.out, 'Report file', ['.html', '.htm'],
                       inputs=[args.synthesizer, real_path])
    classifiers = None
    if args.classifiers:
        known = {name.lower(): name for name in DEFAULT_CLASSIFIERS}
        classifiers = [c.strip() for c in args.classifiers.split(',') if c.strip()]
        unknown = [c for c in classifiers if c.lower() not in known]
        if unknown:
            raise UsageError(f'Unknown classifiers {unknown}; choose from '
                             f'{list(DEFAULT_CLASSIFIERS)}.')
    try:
        check_dependencies()
    except ReportDependencyError as err:
        raise UsageError(str(err)) from None
    synthesizer = _load_synthesizer(args.synthesizer)
    real = _read_table(real_path, synthesizer, args.na_value or ['']) if real_path else None
    kwargs = {'classifiers': classifiers} if classifiers else {}
    if args.audit:
        kwargs['audit'] = _json_file(args.audit, 'Audit file')
    try:
        page = build_report(synthesizer, real=real, num_rows=args.rows,
                            real_name=real_path.name if real_path else None, **kwargs)
    except ValueError as err:
        raise CommandError(f'The report failed: {err}') from None
    with atomic_path(out) as tmp:
        Path(tmp).write_text(page, encoding='utf-8')
    what = ('it contains real data and is NOT private' if real is not None
            else 'it holds only DP outputs, no real data')
    print(f'Wrote {out} ({len(page) / 1024:,.0f} KiB); {what}.')


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
    print(f'Wrote {out}/{written}')


def domain_template(args):
    """Write the domain spec skeleton of an SDV metadata JSON; no data file is read."""
    from sdv_dpkme.domain import domain_template as template
    from sdv_dpkme.fileio import atomic_path

    out = _output_file(args.out, 'Output file', ['.json'], [args.metadata]) if args.out else None
    metadata, table = _load_metadata(args.metadata, args.table)
    try:
        skeleton = template(metadata, table)
    except ValueError as err:
        raise UsageError(str(err)) from None
    text = json.dumps(skeleton, indent=2) + '\n'
    if out:
        with atomic_path(out) as tmp:
            Path(tmp).write_text(text, encoding='utf-8')
    else:
        sys.stdout.write(text)
    print(
        f"Domain spec skeleton of table '{skeleton['table_name']}' written from the metadata "
        f'alone (no rows read){" to " + str(out) if out else ""}. Replace every null with '
        'a public fact (bounds, categories, whether values are whole numbers, whether missing '
        'values may occur), or delete the key to have it discovered under DP; then pass the '
        'file as domain=.',
        file=sys.stderr,
    )


def audit(args):
    """Empirical privacy audit on a PUBLIC stand-in table (default: the bundled Adult sample)."""
    import sdv_dpkme
    from sdv_dpkme.evaluation.audit_report import audit_html
    from sdv_dpkme.fileio import atomic_path
    from sdv_dpkme.privacy.audit import STAND_IN_WARNING, run_audit

    if args.trials < 0 or args.black_box_fits < 0:
        raise UsageError('--trials and --black-box-fits must be >= 0.')
    if not 0 < args.confidence < 1:
        raise UsageError(f'--confidence must be in (0, 1), got {args.confidence!r}.')
    out = _output_file(args.out, 'Audit file', ['.json'])
    html = _output_file(args.html, 'HTML file', ['.html', '.htm']) if args.html else None
    cls = getattr(sdv_dpkme, SYNTHESIZERS[args.synthesizer])
    params = _parameters(args.param, cls)
    if args.data:
        if not (args.metadata and args.domain):
            raise UsageError('--data needs --metadata and --domain (a public domain spec).')
        metadata, table_name = _load_metadata(args.metadata, args.table)
        domain = _json_file(args.domain, 'Domain file')
        from sdv_dpkme.fileio import read_table

        columns = metadata.to_dict()['tables'][table_name]['columns']
        table = read_table(_table_file(args.data, 'Stand-in table file'), columns)
        stand_in = f'{Path(args.data).name}, declared PUBLIC by the user'
        target = args.target
    else:
        from sdv_dpkme.datasets import load_adult_sample

        table, metadata, domain = load_adult_sample()
        table_name, target = 'adult', args.target or 'income'
        stand_in = 'the bundled public Adult sample (sdv_dpkme.datasets.load_adult_sample)'
    if args.rows:
        table = table.head(args.rows)
        stand_in += f', first {len(table)} rows'
    print(f'warning: {STAND_IN_WARNING}', file=sys.stderr)

    def factory():
        return cls(metadata, **_constructor_kwargs(
            cls, params, epsilon=args.epsilon, delta=args.delta, domain=domain,
            target_column=target, random_state=args.seed, verbose=False))

    result = run_audit(factory, table.reset_index(drop=True), table_name=table_name,
                       stand_in=stand_in, trials=args.trials,
                       black_box_fits=args.black_box_fits, confidence=args.confidence,
                       progress=not args.quiet).to_dict()
    with atomic_path(out) as tmp:
        Path(tmp).write_text(json.dumps(result, indent=2, default=str), encoding='utf-8')
    if html:
        with atomic_path(html) as tmp:
            Path(tmp).write_text(audit_html(result), encoding='utf-8')
    print(f"claimed epsilon {result['claimed_epsilon']:g}, measured lower bound "
          f"{result['epsilon_lower_bound']:.3g} ({result['method']}, confidence "
          f"{result['confidence']:g}); wrote {out}" + (f' and {html}' if html else ''))
    if result['exceeds_claim']:  # the files are written: exit 1 without main's 'nothing written'
        print('sdv-dpkme audit: the measured lower bound EXCEEDS the claimed epsilon: the '
              'implementation leaks more than it accounts for.', file=sys.stderr)
        raise SystemExit(EXIT_FAILED)


# ---------------------------------------------------------------------------------- main
def build_parser():
    parser = argparse.ArgumentParser(
        prog='sdv-dpkme',
        description='Differentially private synthetic tables from kernel mean embeddings. '
                    'Exit codes: 0 done, 1 failed while working, 2 bad argument or input '
                    '(found before any work). No command leaves a partial file.',
    )
    parser.add_argument('--debug', action='store_true',
                        help='show the traceback of a failure, and the private values that '
                             'error messages otherwise withhold (curator-side diagnostics: '
                             'do not share the output)')
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')

    f = sub.add_parser('fit', help='fit a DP synthesizer on a CSV or Parquet table',
                       description='Fit a DP synthesizer on a private table. Writes the '
                                   'synthesizer file (sdv.utils.load_synthesizer reads it) and '
                                   'the privacy report JSON. The table path is not stored.')
    f.add_argument('data', help='the private table: .csv, .parquet or .pq')
    f.add_argument('--metadata', '-m', required=True, help='SDV metadata JSON file')
    f.add_argument('--domain', '-d', default=None,
                   help='domain spec JSON with the public bounds and categories (see '
                        'docs/domains.md; start from `sdv-dpkme domain-template`)')
    f.add_argument('--synthesizer', '-s', choices=sorted(SYNTHESIZERS), default='dphp')
    f.add_argument('--epsilon', type=_epsilon, required=True, help='privacy budget, > 0')
    f.add_argument('--delta', type=_delta, default=1e-5, help='in (0, 1); default 1e-5')
    f.add_argument('--target', default=None, help='categorical target column (required by '
                                                  'dpkip)')
    f.add_argument('--table', default=None, help='table name, if the metadata has several')
    f.add_argument('--public-data', default=None,
                   help='reweighting only: a table of PUBLIC rows (same columns) to reweight')
    f.add_argument('--seed', type=int, default=None,
                   help='model seed for reproducible training (never the privacy noise)')
    f.add_argument('--discovery-share', type=_share, default=0.1,
                   help='share of the budget spent discovering undeclared domains under DP '
                        '(default 0.1); 0 makes an undeclared column an error')
    f.add_argument('--metadata-is-public', action='store_true',
                   help='the metadata ranges were written from public knowledge, not detected')
    f.add_argument('--param', '-p', action='append', metavar='NAME=VALUE',
                   help="another synthesizer argument, value as JSON (e.g. -p steps=300 "
                        "-p 'generator_dims=[128,128]'); repeatable")
    f.add_argument('--na-value', action='append', metavar='TEXT',
                   help='a CSV field that means a missing value (default: only an empty field); '
                        'repeatable')
    f.add_argument('--out', '-o', required=True, help='synthesizer file to write, e.g. '
                                                      'synth.pkl')
    f.add_argument('--privacy-report', default=None,
                   help='privacy report JSON (default: the --out name with .privacy.json)')
    f.add_argument('--quiet', '-q', action='store_true', help='no progress bar')

    s = sub.add_parser('sample', help='sample a synthetic table from a synthesizer file',
                       description='Sample rows from a fitted synthesizer file (post-processing:'
                                   ' costs no privacy budget).')
    s.add_argument('synthesizer', help='synthesizer file written by `fit`')
    s.add_argument('--rows', '-n', type=_rows, required=True, help='rows to sample, >= 1')
    s.add_argument('--out', '-o', required=True, help='.csv or .parquet file to write')

    r = sub.add_parser('report', help='write an HTML report of a synthesizer file',
                       description='Write one self-contained HTML report. Without --real it '
                                   'holds only DP outputs (privacy ledger, training loss, '
                                   'synthetic rows). With --real it adds SDMetrics scores, plots '
                                   'of the worst columns and pairs and TSTR: that report shows '
                                   'real data and is NOT private.')
    r.add_argument('synthesizer', help='synthesizer file written by `fit`')
    r.add_argument('--real', default=None,
                   help='real table to compare with (.csv/.parquet); makes the report '
                        'non-private. Best a held-out table not used to fit.')
    r.add_argument('--rows', '-n', type=_rows, default=None,
                   help='synthetic rows to sample (default: as many as the real table, or 1000)')
    r.add_argument('--classifiers', default=None,
                   help='comma-separated TSTR classifiers (default: LogisticRegression,'
                        'GaussianNB,DecisionTreeClassifier,RandomForestClassifier)')
    r.add_argument('--na-value', action='append', metavar='TEXT',
                   help='a CSV field of --real that means a missing value (default: empty)')
    r.add_argument('--audit', default=None,
                   help='an audit JSON written by `sdv-dpkme audit`, shown next to the ledger')
    r.add_argument('--out', '-o', required=True, help='.html file to write')

    t = sub.add_parser(
        'domain-template',
        help='write a domain spec skeleton from an SDV metadata JSON (never reads rows)',
        description='Write a domain spec skeleton from the metadata alone: it never reads a '
                    'row, and copies no data-derived metadata key. Fill each null with a public '
                    'fact, then pass the file to `fit --domain`.',
    )
    t.add_argument('metadata', help='SDV metadata JSON file')
    t.add_argument('--table', default=None, help='table name (needed if the metadata has several)')
    t.add_argument('--out', default=None, help='output JSON file (default: standard output)')

    p = sub.add_parser('demo', help='fit DP-HP on the bundled Adult sample and write the results')
    p.add_argument('--epsilon', type=_epsilon, default=1.0)
    p.add_argument('--delta', type=_delta, default=1e-5)
    p.add_argument('--rows', type=_rows, default=None, help='synthetic rows (default: as many)')
    p.add_argument('--seed', type=int, default=0, help='model seed (never the privacy noise)')
    p.add_argument('--out', default='out')

    a = sub.add_parser(
        'audit', help='measure a lower bound on epsilon on a PUBLIC stand-in table',
        description='Empirical privacy audit: fits the synthesizer with and without a canary row '
                    'on a PUBLIC stand-in table (default: the bundled Adult sample) and writes '
                    'the measured lower bound on epsilon next to the claimed one. NEVER give it '
                    'private rows: its output is not private. See docs/audit.md.')
    a.add_argument('--synthesizer', '-s', choices=sorted(SYNTHESIZERS), default='dphp')
    a.add_argument('--epsilon', type=_epsilon, default=1.0)
    a.add_argument('--delta', type=_delta, default=1e-5)
    a.add_argument('--data', default=None, help='a PUBLIC stand-in table (default: Adult sample)')
    a.add_argument('--metadata', '-m', default=None, help='SDV metadata JSON (with --data)')
    a.add_argument('--domain', '-d', default=None, help='public domain spec JSON (with --data)')
    a.add_argument('--table', default=None, help='table name, if the metadata has several')
    a.add_argument('--target', default=None, help='target column (default on Adult: income)')
    a.add_argument('--rows', type=_rows, default=None, help='use the first ROWS stand-in rows')
    a.add_argument('--trials', type=int, default=50,
                   help='white-box trials (fits stopped after their releases); default 50')
    a.add_argument('--black-box-fits', type=int, default=0,
                   help='full fits scored on samples (black-box); default 0')
    a.add_argument('--confidence', type=float, default=0.95)
    a.add_argument('--seed', type=int, default=0, help='model seed (never the privacy noise)')
    a.add_argument('--param', '-p', action='append', metavar='NAME=VALUE',
                   help='another synthesizer argument, value as JSON; repeatable')
    a.add_argument('--out', '-o', required=True, help='audit JSON file to write')
    a.add_argument('--html', default=None, help='also write an HTML page of the audit')
    a.add_argument('--quiet', '-q', action='store_true', help='no progress bar')
    return parser


COMMANDS = {'fit': fit, 'sample': sample, 'report': report, 'demo': demo,
            'domain-template': domain_template, 'audit': audit}


@contextlib.contextmanager
def _plain_warnings():
    """Warnings as one line each ('warning: ...'), without the source line of the library."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        print(f'warning ({category.__name__}): {message}', file=file or sys.stderr)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f'{parser.prog} {args.command}'
    from sdv_dpkme.privacy.diagnostics import private_values_in_errors

    try:  # the fit path withholds private values from its errors, unless --debug
        with _plain_warnings(), private_values_in_errors(args.debug):
            COMMANDS[args.command](args)
    except UsageError as err:
        print(f'{prog}: error: {err}', file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    except KeyboardInterrupt:
        print(f'{prog}: interrupted; nothing was written.', file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Exception as err:  # noqa: BLE001 - a message, not a traceback, unless --debug
        if args.debug:
            raise
        what = str(err) if isinstance(err, CommandError) else f'{type(err).__name__}: {err}'
        print(f'{prog}: error: {what}\nNothing was written. (--debug shows the traceback and '
              'private values.)', file=sys.stderr)
        raise SystemExit(EXIT_FAILED) from None
    return 0


if __name__ == '__main__':
    sys.exit(main())
