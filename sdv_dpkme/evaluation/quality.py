"""SDMetrics quality and diagnostic scores for a single table."""

from __future__ import annotations

import warnings

import pandas as pd

from sdv_dpkme.evaluation._common import normalize_metadata


def _property_score(report, name):
    properties = report.get_properties()
    match = properties.loc[properties['Property'] == name, 'Score']
    if match.empty:
        return float('nan')

    return float(match.iloc[0])


def quality_scores(real, synthetic, metadata, verbose=False):
    """Compute the SDMetrics ``QualityReport`` and ``DiagnosticReport`` scores.

    Args:
        real (pandas.DataFrame): The real table.
        synthetic (pandas.DataFrame): The synthetic table.
        metadata: An ``sdv.metadata.Metadata`` with a single table, a unified
            metadata dict (``{'tables': {name: {...}}}``, one table) or a
            single-table dict (``{'columns': {...}}``).
        verbose (bool): Forwarded to the reports. Defaults to ``False``.

    Returns:
        dict: ``quality`` (overall quality score), ``column_shapes``,
        ``column_pair_trends``, ``diagnostic`` (overall diagnostic score, i.e. the
        mean of Data Validity and Data Structure), ``data_validity``,
        ``data_structure``, plus the report objects under ``quality_report`` and
        ``diagnostic_report``, and the per-column and per-pair scores, worst first, under
        ``column_shape_details`` and ``pair_trend_details`` (see :func:`quality_details`).

    Data columns that are not described by the metadata are dropped (with a
    warning); metadata columns missing from either table raise ``ValueError``.
    """
    from sdmetrics.reports import DiagnosticReport, QualityReport

    if not isinstance(real, pd.DataFrame) or not isinstance(synthetic, pd.DataFrame):
        raise TypeError('real and synthetic must be pandas DataFrames.')

    table_name, metadata_dict = normalize_metadata(metadata)
    columns = list(metadata_dict['tables'][table_name].get('columns', {}))
    missing = [c for c in columns if c not in real.columns or c not in synthetic.columns]
    if missing:
        raise ValueError(f'Columns {missing} are in the metadata but not in the data.')

    extra = sorted({str(c) for c in set(real.columns) | set(synthetic.columns)} - set(columns))
    if extra:
        warnings.warn(
            f'Columns {extra} are not in the metadata and are ignored by the reports.',
            stacklevel=2,
        )

    real_data = {table_name: real[columns].reset_index(drop=True)}
    synthetic_data = {table_name: synthetic[columns].reset_index(drop=True)}

    with warnings.catch_warnings():
        if not verbose:
            warnings.simplefilter('ignore')

        quality_report = QualityReport()
        quality_report.generate(real_data, synthetic_data, metadata_dict, verbose=verbose)
        diagnostic_report = DiagnosticReport()
        diagnostic_report.generate(real_data, synthetic_data, metadata_dict, verbose=verbose)

    shapes, pairs = quality_details(quality_report)
    return {
        'column_shape_details': shapes,
        'pair_trend_details': pairs,
        'quality': float(quality_report.get_score()),
        'column_shapes': _property_score(quality_report, 'Column Shapes'),
        'column_pair_trends': _property_score(quality_report, 'Column Pair Trends'),
        'diagnostic': float(diagnostic_report.get_score()),
        'data_validity': _property_score(diagnostic_report, 'Data Validity'),
        'data_structure': _property_score(diagnostic_report, 'Data Structure'),
        'quality_report': quality_report,
        'diagnostic_report': diagnostic_report,
    }


def quality_details(quality_report):
    """Per-column shapes and per-pair trends of a ``QualityReport``, worst first.

    Returns ``(shapes, pairs)``: DataFrames with ``Column`` (or ``Column 1``, ``Column 2``),
    ``Metric`` and ``Score``; a column or pair SDMetrics could not score (NaN) comes last.
    """
    def worst_first(frame):
        return frame.sort_values('Score', kind='stable', na_position='last').reset_index(drop=True)

    return (worst_first(quality_report.get_details('Column Shapes')),
            worst_first(quality_report.get_details('Column Pair Trends')))


def quality_summary(results, worst=3):
    """A few lines naming the overall scores and the worst columns and pairs.

    ``results`` is what :func:`quality_scores` or ``evaluate`` returns.
    """
    def scored(frame):
        return frame.dropna(subset=['Score']).head(worst)

    shapes, pairs = results['column_shape_details'], results['pair_trend_details']
    lines = [f"quality {results['quality']:.3f}: column shapes {results['column_shapes']:.3f}, "
             f"pair trends {results['column_pair_trends']:.3f}"]
    columns = ', '.join(f"{r['Column']} {r['Score']:.3f} ({r['Metric']})"
                        for _, r in scored(shapes).iterrows())
    lines.append(f'  worst columns: {columns or "none scored"}')
    pair_text = ', '.join(f"{r['Column 1']} x {r['Column 2']} {r['Score']:.3f} ({r['Metric']})"
                          for _, r in scored(pairs).iterrows())
    lines.append(f'  worst pairs: {pair_text or "none scored"}')
    return '\n'.join(lines)
