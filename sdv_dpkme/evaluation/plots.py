"""Minimal plotting helper for benchmark results (matplotlib, Agg canvas)."""

from __future__ import annotations

import os
from pathlib import Path


def plot_results(df, x, y, hue, path, title=None, logx=False, xlabel=None, ylabel=None):
    """Plot ``y`` against ``x`` with one line per ``hue`` value and save it as a PNG.

    Rows sharing the same (``hue``, ``x``) — e.g. repeated seeds — are averaged and
    drawn with a standard-deviation error bar. The figure is rendered on a
    matplotlib Agg canvas, so no display or global backend change is needed.

    Args:
        df (pandas.DataFrame): Results in long format.
        x (str): Column for the horizontal axis (e.g. ``'epsilon'``).
        y (str): Column for the vertical axis (e.g. ``'tstr_roc_auc'``).
        hue (str or None): Column whose values give separate lines (e.g.
            ``'synthesizer'``); ``None`` draws a single line.
        path (str or os.PathLike): Output PNG path; parent folders are created.
        title (str or None): Figure title.
        logx (bool): Logarithmic x axis.
        xlabel, ylabel (str or None): Axis labels (default: the column names).

    Returns:
        str: The path written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    missing = [c for c in (x, y, hue) if c is not None and c not in df.columns]
    if missing:
        raise ValueError(f'Columns {missing} are not in the DataFrame.')

    figure = Figure(figsize=(6, 4), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)

    groups = [(None, df)] if hue is None else df.groupby(hue, sort=True, dropna=False)
    for label, group in groups:
        stats = group.groupby(x, sort=True)[y].agg(['mean', 'std', 'count'])
        errors = stats['std'].where(stats['count'] > 1)
        has_errors = errors.notna().any()
        axes.errorbar(
            stats.index.to_numpy(),
            stats['mean'].to_numpy(dtype=float),
            yerr=errors.fillna(0).to_numpy(dtype=float) if has_errors else None,
            marker='o',
            capsize=3,
            label=None if hue is None else str(label),
        )

    if logx:
        axes.set_xscale('log')
    axes.set_xlabel(xlabel or str(x))
    axes.set_ylabel(ylabel or str(y))
    if title:
        axes.set_title(title)
    if hue is not None:
        axes.legend(title=str(hue), fontsize='small')
    axes.grid(True, alpha=0.3)
    figure.tight_layout()

    path = os.fspath(path)
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    figure.savefig(path, format='png')
    return path


__all__ = ['plot_results']


def plot_worst_columns(real, synthetic, metadata, results, path, worst=4, bounds=None,
                       categories=None):
    """Save a PNG of real (grey) against synthetic (blue) marginals of the worst columns.

    Args:
        real, synthetic (pandas.DataFrame): The tables ``results`` compared (for ``evaluate``
            with ``real_test``, that is the test table).
        metadata: The metadata given to ``evaluate`` / ``quality_scores``.
        results (dict): What ``evaluate`` or ``quality_scores`` returned; its
            ``column_shape_details`` rank the columns, worst first.
        path (str or os.PathLike): Output PNG path; parent folders are created.
        worst (int): How many columns to draw.
        bounds, categories (dict or None): Public bounds / categories to fix the axes.

    Returns:
        list: The columns drawn, worst first.
    """
    from sdv_dpkme.evaluation._common import normalize_metadata
    from sdv_dpkme.evaluation.report_plots import columns_figure

    table_name, metadata_dict = normalize_metadata(metadata)
    specs = metadata_dict['tables'][table_name].get('columns', {})
    shapes = results['column_shape_details'].dropna(subset=['Score']).head(worst)
    panels, drawn = [], []
    for _, row in shapes.iterrows():
        column, spec = row['Column'], specs[row['Column']]
        sdtype = spec.get('sdtype')
        numeric_bounds = (bounds or {}).get(column) if sdtype == 'numerical' else None
        panels.append(dict(
            column=column, sdtype=sdtype, synthetic=synthetic[column], real=real[column],
            datetime_format=spec.get('datetime_format'),
            title=f'{column}: shape {row["Score"]:.3f} ({row["Metric"]})',
            bounds=tuple(numeric_bounds) if numeric_bounds is not None else None,
            categories=(categories or {}).get(column)))
        drawn.append(column)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(columns_figure(panels))
    return drawn
