"""``report`` and ``audit``: HTML reports of a synthesizer file, and the empirical privacy audit."""

import json
import sys
from pathlib import Path

from sdv_dpkme.cli.common import (
    EXIT_FAILED,
    SYNTHESIZERS,
    CommandError,
    UsageError,
    _input_file,
    _json_file,
    _load_metadata,
    _load_synthesizer,
    _output_file,
    _read_table,
    _table_file,
)
from sdv_dpkme.cli.params import _constructor_kwargs, _parameters


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

