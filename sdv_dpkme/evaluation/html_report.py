"""One self-contained HTML report of a fitted DP synthesizer (PNG figures embedded as base64).

Without a real table the report holds only DP outputs: the privacy ledger, the training loss
(computed against the noisy releases) and synthetic rows sampled from the model, so it is as
shareable as the synthetic data. With a real table it adds the SDMetrics quality and diagnostic
scores, real-vs-synthetic plots of the worst columns and pairs, and TSTR; all of those are
computed from the real rows, so that report is not private and says so in a banner.

Every string that reaches the page (column names, category values, notes) is escaped.
"""

from __future__ import annotations

import datetime
import importlib.util
import warnings

import pandas as pd

from sdv_dpkme._version import __version__
from sdv_dpkme.evaluation._common import infer_column_types, normalize_metadata
from sdv_dpkme.evaluation.html_page import (
    STYLE,
    e,
    format_number,
    html_section,
    html_table,
    png_figure,
    score_cell,
)

#: TSTR classifiers of the report (fast ones; the benchmarks use all 12 of DEFAULT_CLASSIFIERS)
REPORT_CLASSIFIERS = ('LogisticRegression', 'GaussianNB', 'DecisionTreeClassifier',
                      'RandomForestClassifier')
#: synthetic rows drawn for a report without a real table
DEFAULT_ROWS = 1000
#: rows of the per-pair table (worst first); the rest are counted
PAIR_ROWS = 20
#: synthetic-only figures in a report without a real table
OVERVIEW_COLUMNS = 12


class ReportDependencyError(ImportError):
    """matplotlib, which draws the report's figures, is not installed."""


def check_dependencies():
    if importlib.util.find_spec('matplotlib') is None:
        from sdv_dpkme.evaluation.report_plots import missing_matplotlib_message

        raise ReportDependencyError(missing_matplotlib_message())


# ------------------------------------------------------------------------------- sections
def _summary(synthesizer, table_name, synthetic, real, real_name, generated):
    report = synthesizer.get_privacy_report()
    info = synthesizer.get_info()
    facts = [
        ('Synthesizer', type(synthesizer).__name__),
        ('Fitted with', f"sdv_dpkme {info.get('sdv_dpkme_version', '?')}, SDV "
                        f"{info.get('fitted_sdv_version', '?')}; last fit "
                        f"{info.get('last_fit_date', '?')}"),
        ('Table', table_name),
        ('Target column', synthesizer.target_column or 'none'),
        ('Privacy', f'(ε = {format_number(report.epsilon)}, '
                    f'δ = {format_number(report.delta)})-DP, '
                    f'ε spent = {format_number(report.epsilon_spent, 4)}'
                    if report.guarantee_holds else
                    'NOT differentially private (fixed noise seed, test only)'),
        ('Synthetic rows in this report', f'{len(synthetic):,} (sampled for this report)'),
    ]
    if real is not None:
        facts.append(('Real table compared', f'{real_name or "given"} ({len(real):,} rows)'))
    else:
        facts.append(('Real table compared', 'none: this report holds no real data'))
    facts.append(('Report written', f'{generated} by sdv_dpkme {__version__}'))
    rows = ''.join(f'<tr><th>{e(k)}</th><td>{e(v)}</td></tr>' for k, v in facts)
    return html_section('summary', 'Summary', f'<table class="facts">{rows}</table>')


def _ledger(report):
    budget = [
        ('ε budget', format_number(report.epsilon, 4)),
        ('ε spent', format_number(report.epsilon_spent, 6)),
        ('ε the releases would spend with secret noise',
         format_number(report.epsilon_calibrated, 6)),
        ('δ', format_number(report.delta, 3)),
        ('δ of the Gaussian composition', format_number(report.gaussian_delta, 3)),
        ('Guarantee holds', 'yes' if report.guarantee_holds else 'NO (fixed noise seed)'),
        ('Neighbouring tables', report.neighbouring_relation),
        ('Accountant', report.accountant),
        ('Noise source', report.noise_source),
    ]
    parts = ['<table class="facts">'
             + ''.join(f'<tr><th>{e(k)}</th><td>{e(v)}</td></tr>' for k, v in budget)
             + '</table>']
    groups = _release_groups(report.releases)
    rows = []
    for number, group in enumerate(groups, 1):
        first = group[0]
        sampling = first.sampling
        if first.sampling != 'none':
            sampling = f'{first.sampling}, q = {format_number(first.sampling_probability, 4)}'
        if len(group) == 1:
            what = f'<td>{e(first.description)}</td>'
        else:  # identical noise, different subsets (e.g. DP-HP's product kernels): one row
            items = ''.join(f'<li>{e(r.description)}</li>' for r in group)
            what = (f'<td>{len(group)} releases, e.g. {e(first.description)}<details><summary>'
                    f'all {len(group)}</summary><ol>{items}</ol></details></td>')
        dimensions = sorted({r.dimension for r in group})
        dimension = (f'{dimensions[0]:,}' if len(dimensions) == 1
                     else f'{dimensions[0]:,}–{dimensions[-1]:,} each')
        rows.append([number, first.name, what, first.mechanism,
                     format_number(first.sensitivity, 4), format_number(first.noise_multiplier, 4),
                     format_number(first.noise_std, 4), f'{sum(r.count for r in group):,}',
                     dimension, sampling])
    parts.append(f'<h3>Releases ({sum(len(g) for g in groups)})</h3>')
    parts.append(html_table(['#', 'Release', 'What', 'Mechanism', 'Sensitivity (L2)',
                             'Noise multiplier', 'Noise std', 'Count', 'Dimension', 'Sampling'],
                            rows, cls='data ledger'))
    if getattr(report, 'plan', None):
        parts.append(_plan(report.plan))
    if report.reserved_delta:
        parts.append('<h3>Reserved δ</h3>')
        parts.append(html_table(['For', 'δ', 'Why'],
                                [[r.name, format_number(r.delta, 3), r.description]
                                 for r in report.reserved_delta]))
    if report.public_inputs:
        parts.append('<h3>Public inputs (declared, or released under DP)</h3><ul class="compact">'
                     + ''.join(f'<li>{e(p)}</li>' for p in report.public_inputs) + '</ul>')
    if report.notes:
        parts.append('<h3>Notes</h3><ul>' + ''.join(f'<li>{e(n)}</li>' for n in report.notes)
                     + '</ul>')
    if getattr(report, 'parameters', None):  # every option of the fit (public settings)
        parts.append('<h3>Options</h3>' + html_table(['Option', 'Value'], [
            [name, repr(value)] for name, value in report.parameters.items()], cls='data'))
    return html_section('privacy-ledger', 'Privacy ledger', ''.join(parts),
                        note='Every noisy release of the fit, as the accountant counted it. The '
                             'same record is in the privacy report JSON written by '
                             '<code>fit</code>.')


def _plan(plan):
    """The release plan, decided before any spend from public facts only."""
    rows = [[p['group'], p['decision'], f"{p['releases']} of {p['planned']}",
             f"{p['dimension']:,}", format_number(p['expected_noise_norm'], 3),
             format_number(p['signal_bound'], 3), format_number(p['ratio'], 3), p['reason']]
            for p in plan]
    return ('<h3>Release plan</h3><p>Decided before any spend, from public facts only (n, ε, '
            'δ, the layout, the options): a term whose expected noise norm is far above the '
            'largest norm its signal can have is dropped or narrowed, and its budget goes to '
            'the terms kept.</p>'
            + html_table(['Release', 'Decision', 'Releases', 'Dimension', 'Expected noise norm',
                          'Signal bound', 'Noise / bound', 'Why'], rows, cls='data plan'))


def _align_dtypes(real, synthetic):
    """The real table with the synthetic table's dtype where the cast loses nothing (a CSV reads
    integer columns as floats): SDMetrics' Data Structure counts a dtype mismatch as a
    different column."""
    real = real.copy()
    for column in real.columns.intersection(synthetic.columns):
        wanted, have = synthetic[column].dtype, real[column].dtype
        if wanted == have or not pd.api.types.is_integer_dtype(wanted):
            continue
        values = real[column]
        if (pd.api.types.is_float_dtype(have) and values.notna().all()
                and (values == values.round()).all()):
            real[column] = values.astype(wanted)
    return real


def _release_groups(releases):
    """Consecutive releases with the same name and noise, as lists (every release kept)."""
    groups = []
    for release in releases:
        key = (release.name, release.mechanism, release.sensitivity, release.noise_multiplier,
               release.noise_std, release.sampling, release.sampling_probability)
        if groups and groups[-1][0] == key:
            groups[-1][1].append(release)
        else:
            groups.append((key, [release]))
    return [members for _, members in groups]


def _worst_first(frame, score='Score'):
    frame = frame.copy()
    frame['_missing'] = frame[score].isna()
    return frame.sort_values(['_missing', score], kind='stable').drop(columns='_missing')


def _quality(scores, sdtypes):
    quality = scores['quality_report']
    shapes = _worst_first(quality.get_details('Column Shapes'))
    pairs = _worst_first(quality.get_details('Column Pair Trends'))
    overall = html_table(['Quality score', 'Column shapes', 'Column pair trends'],
                         [[score_cell(scores['quality']), score_cell(scores['column_shapes']),
                           score_cell(scores['column_pair_trends'])]], cls='data overall')
    column_rows = [[row['Column'], sdtypes.get(row['Column'], ''), row['Metric'],
                    score_cell(row['Score'])] for _, row in shapes.iterrows()]
    pair_rows = []
    for _, row in pairs.head(PAIR_ROWS).iterrows():
        real_value = row.get('Real Correlation')
        if pd.isna(real_value):
            real_value = row.get('Real Association')
        pair_rows.append([row['Column 1'], row['Column 2'], row['Metric'],
                          score_cell(row['Score']), format_number(real_value),
                          format_number(row.get('Synthetic Correlation'))])
    more = len(pairs) - len(pair_rows)
    body = (overall
            + '<h3>Per column (worst first)</h3>'
            + html_table(['Column', 'sdtype', 'Metric', 'Score'], column_rows)
            + f'<h3>Per pair of columns (worst {len(pair_rows)} of {len(pairs)})</h3>'
            + html_table(['Column 1', 'Column 2', 'Metric', 'Score', 'Real correlation / '
                          'association', 'Synthetic correlation'], pair_rows)
            + (f'<p class="section-note">{more} better pairs are not listed.</p>' if more else ''))
    return html_section('quality', 'SDMetrics quality', body,
                        note='SDMetrics QualityReport: how closely each column\'s distribution '
                             '(KS / TV complement) and each pair\'s correlation or contingency '
                             'match the real table. 1 is a perfect match.')


def _diagnostic(scores):
    diagnostic = scores['diagnostic_report']
    validity = _worst_first(diagnostic.get_details('Data Validity'))
    overall = html_table(['Diagnostic score', 'Data validity', 'Data structure'],
                         [[score_cell(scores['diagnostic']), score_cell(scores['data_validity']),
                           score_cell(scores['data_structure'])]], cls='data overall')
    rows = [[row['Column'], row['Metric'], score_cell(row['Score'])]
            for _, row in validity.iterrows()]
    body = (overall + '<h3>Data validity per column (worst first)</h3>'
            + html_table(['Column', 'Metric', 'Score'], rows))
    return html_section('diagnostic', 'SDMetrics diagnostic', body,
                        note='SDMetrics DiagnosticReport: whether synthetic values stay inside the '
                             'real table\'s range and categories, and whether the columns match. '
                             'A DP synthesizer samples inside the <em>public</em> domain, which '
                             'can be wider than the range the real rows happen to cover.')


def _public_axis(domain):
    """The public bounds or categories of a column, to draw its axis (never the rows')."""
    if domain is None:
        return {}
    if domain.is_numeric:
        return {'bounds': (domain.low, domain.high)} if domain.low is not None else {}
    return {'categories': [False, True] if domain.sdtype == 'boolean' else domain.categories}


def _comparison_plots(scores, real, synthetic, sdtypes, formats, domains, worst_columns,
                      worst_pairs):
    from sdv_dpkme.evaluation.report_plots import column_figure, pair_figure

    quality = scores['quality_report']
    shapes = quality.get_details('Column Shapes').dropna(subset=['Score'])
    pairs = quality.get_details('Column Pair Trends').dropna(subset=['Score'])
    figures = ['<h3>Worst columns</h3><div class="grid">']
    for _, row in shapes.sort_values('Score', kind='stable').head(worst_columns).iterrows():
        column = row['Column']
        png = column_figure(column, sdtypes[column], synthetic[column], real[column],
                            formats.get(column), **_public_axis(domains.get(column)))
        figures.append(png_figure(png, f'real and synthetic distribution of {column}',
                                  'real-data-plot', f'{column}: {row["Metric"]} {row["Score"]:.3f}',
                                  [column]))
    figures.append('</div><h3>Worst pairs</h3>')
    for _, row in pairs.sort_values('Score', kind='stable').head(worst_pairs).iterrows():
        a, b = row['Column 1'], row['Column 2']
        png = pair_figure((a, b), (sdtypes[a], sdtypes[b]), real, synthetic, formats)
        figures.append(png_figure(png, f'real and synthetic joint distribution of {a} and {b}',
                                  'real-data-plot wide',
                                  f'{a} × {b}: {row["Metric"]} {row["Score"]:.3f}', [a, b]))
    return html_section('comparison-plots', 'Real against synthetic: worst columns and pairs',
                        ''.join(figures),
                        note='Grey: real rows. Blue: synthetic rows. These figures show the real '
                             'data.')


def _tstr(synthesizer, real, synthetic, metadata, modelled, categories, classifiers):
    from sdv_dpkme.evaluation.tstr import tstr_scores

    target = synthesizer.target_column
    categorical, numerical = infer_column_types(metadata, exclude=[target])
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        table = tstr_scores(synthetic, real, target,
                            [c for c in categorical if c in modelled],
                            [c for c in numerical if c in modelled],
                            categories=categories, classifiers=list(classifiers))
    scores = [c for c in table.columns if c not in ('classifier', 'fit_seconds', 'note')]
    rows = []
    for _, row in table.iterrows():
        rows.append([row['classifier'], *[score_cell(row[s]) for s in scores],
                     format_number(row['fit_seconds'], 2), row['note'] or ''])
    task = table.attrs.get('task')
    what = (f"binary; positive class {table.attrs.get('positive_class')!r}" if task == 'binary'
            else f"{len(table.attrs.get('classes', []))} classes")
    body = html_table(['Classifier', *[s.replace('_', ' ') for s in scores], 'Fit seconds',
                       'Note'], rows,
                      row_classes=['mean' if c == 'mean' else '' for c in table['classifier']])
    return html_section('tstr', f'Train on synthetic, test on real: {target}', body,
                        note=f'Each classifier is trained on the synthetic rows and scored on the '
                             f'real table given ({e(what)}). For a fair score, give a real table '
                             'that was not used to fit the synthesizer.')


def _training(synthesizer):
    from sdv_dpkme.evaluation.report_plots import loss_figure

    try:
        loss = synthesizer.get_loss_values()
    except Exception:  # noqa: BLE001 - a model without a loss record: nothing to show
        return ''
    if loss is None or not len(loss):
        return ''
    png = loss_figure(loss)
    return html_section('training', 'Training loss',
                        png_figure(png, 'training loss per step', 'dp-output-plot',
                                   'Loss against the noisy releases, per step.'),
                        note='Computed against the noisy releases only (post-processing), so it '
                             'holds nothing more about the private rows than they do.')


def _overview(synthetic, sdtypes, formats, modelled, domains):
    from sdv_dpkme.evaluation.report_plots import column_figure

    shown = modelled[:OVERVIEW_COLUMNS]
    figures = ['<div class="grid">']
    for column in shown:
        png = column_figure(column, sdtypes[column], synthetic[column], None, formats.get(column),
                            **_public_axis(domains.get(column)))
        figures.append(png_figure(png, f'synthetic distribution of {column}', 'synthetic-plot',
                                  columns=[column]))
    figures.append('</div>')
    more = len(modelled) - len(shown)
    note = ('The synthetic rows alone (DP post-processing).'
            + (f' The first {len(shown)} of {len(modelled)} modelled columns.' if more else ''))
    return html_section('synthetic-overview', 'Synthetic columns', ''.join(figures), note=note)


def _without_real():
    body = ('<p>This report was made from the synthesizer file alone. It shows the privacy '
            'ledger, the training loss and rows sampled from the model: outputs of the '
            'differentially private fit, and nothing else derived from the private rows. It can '
            'be shared like the synthetic data.</p>'
            '<p>The SDMetrics quality and diagnostic scores, the real-against-synthetic plots of '
            'the worst columns and pairs, and train-synthetic-test-real need a real table. '
            '<code>sdv-dpkme report SYNTHESIZER --real TABLE --out report.html</code> adds them; '
            'that report shows real data and is <strong>not</strong> private.</p>')
    return html_section('without-real-data', 'What this report leaves out', body)


def build_report(synthesizer, real=None, num_rows=None, real_name=None,
                 classifiers=REPORT_CLASSIFIERS, worst_columns=4, worst_pairs=3, audit=None):
    """The report as one HTML string.

    Args:
        synthesizer: a fitted DP synthesizer of this package.
        real (pandas.DataFrame or None): a real table to compare with. Without it the report
            holds only DP outputs; with it, it holds real data and says so.
        num_rows (int or None): synthetic rows to sample (default: as many as ``real`` has,
            else ``DEFAULT_ROWS``).
        real_name (str or None): how to name the real table in the page (e.g. its file name).
        classifiers: TSTR classifiers (names of ``DEFAULT_CLASSIFIERS``), used with a real
            table when the synthesizer has a ``target_column``.
        worst_columns, worst_pairs (int): how many real-vs-synthetic figures to draw.
        audit (dict or None): an ``AuditResult.to_dict()`` (``sdv-dpkme audit``), shown next to
            the privacy ledger.
    """
    check_dependencies()
    metadata = synthesizer.get_metadata()
    table_name, metadata_dict = normalize_metadata(metadata)
    columns = metadata_dict['tables'][table_name]['columns']
    sdtypes = {c: spec.get('sdtype') for c, spec in columns.items()}
    domains = getattr(synthesizer, '_domains', {}) or {}
    modelled = [c for c in columns if c in domains]
    formats = {c: d.datetime_format for c, d in domains.items() if d.datetime_format}
    categories = {c: ([False, True] if d.sdtype == 'boolean' else list(d.categories))
                  for c, d in domains.items() if not d.is_numeric}
    if num_rows is None:
        num_rows = len(real) if real is not None else DEFAULT_ROWS
    synthetic = synthesizer.sample(num_rows=int(num_rows))
    if isinstance(synthetic, dict):
        synthetic = synthetic[table_name]
    generated = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')

    parts = [_summary(synthesizer, table_name, synthetic, real, real_name, generated),
             _ledger(synthesizer.get_privacy_report())]
    nav = [('summary', 'Summary'), ('privacy-ledger', 'Privacy ledger')]
    if audit is not None:
        from sdv_dpkme.evaluation.audit_report import audit_section

        parts.append(audit_section(audit))
        nav.append(('privacy-audit', 'Privacy audit'))
    if real is not None:
        from sdv_dpkme.evaluation.quality import quality_scores

        real = _align_dtypes(real, synthetic)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            scores = quality_scores(real, synthetic, metadata)
        parts += [_quality(scores, sdtypes), _diagnostic(scores),
                  _comparison_plots(scores, real, synthetic, sdtypes, formats, domains,
                                    worst_columns, worst_pairs)]
        nav += [('quality', 'Quality'), ('diagnostic', 'Diagnostic'),
                ('comparison-plots', 'Worst columns and pairs')]
        if synthesizer.target_column is not None:
            parts.append(_tstr(synthesizer, real, synthetic, metadata, modelled, categories,
                               classifiers))
            nav.append(('tstr', 'TSTR'))
    training = _training(synthesizer)
    if training:
        parts.append(training)
        nav.append(('training', 'Training loss'))
    if real is None:
        parts += [_overview(synthetic, sdtypes, formats, modelled, domains), _without_real()]
        nav += [('synthetic-overview', 'Synthetic columns'),
                ('without-real-data', 'What this report leaves out')]

    if real is not None:
        banner = ('<div id="real-data-banner" class="banner real" role="alert"><strong>This '
                  'report contains real data and is not private.</strong> The quality scores, '
                  'the figures of the worst columns and pairs and the classifier scores are '
                  f'computed from the real table ({e(real_name or "given")}) and show its '
                  'values. Share it only with people allowed to see that table; a report made '
                  'without a real table holds only differentially private outputs.</div>')
    else:
        banner = ('<div id="dp-only-notice" class="banner private"><strong>No real data in this '
                  'report.</strong> Everything below is an output of the differentially '
                  'private fit (privacy ledger, training loss, sampled synthetic rows).</div>')
    title = f'{type(synthesizer).__name__} report: {table_name}'
    navigation = ''.join(f'<a href="#{i}">{e(t)}</a>' for i, t in nav)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{e(title)}</title><style>{STYLE}</style></head><body><main>'
        f'<h1>Synthetic data report</h1><p class="subtitle">{e(type(synthesizer).__name__)} · '
        f'table {e(table_name)} · {e(generated)}</p>{banner}<nav>{navigation}</nav>'
        + ''.join(parts)
        + f'<footer>Written by sdv_dpkme {e(__version__)}. Self-contained: no scripts, no '
          'external files.</footer></main></body></html>\n'
    )
