"""Figures of the HTML report, rendered to PNG bytes on a matplotlib Agg canvas.

``column_figure`` and ``pair_figure`` draw real against synthetic when given a real table, or the
synthetic table alone; the caller decides which may appear (a figure with real data makes the
report non-private).
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from sdv_dpkme.evaluation._common import to_float

REAL_COLOUR = '#7f7f7f'
SYNTHETIC_COLOUR = '#1f6fb4'
#: categories shown per categorical axis (the most frequent ones; the rest are summed as 'other')
TOP_CATEGORIES = 12
#: points drawn per scatter panel
SCATTER_POINTS = 2000


def missing_matplotlib_message():
    return ("The report's plots need matplotlib: pip install 'sdv-dpkme[report]' "
            '(or pip install matplotlib).')


def _figure(width, height):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout='constrained')
    FigureCanvasAgg(figure)
    return figure


def to_png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format='png')
    return buffer.getvalue()


def _short(value, width=22):
    text = 'missing' if _isna(value) else str(value)
    return text if len(text) <= width else text[:width - 1] + '…'


def _isna(value):
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _numbers(series, sdtype, datetime_format=None):
    values = to_float(series, datetime_format)
    values = values[~np.isnan(values)]
    if sdtype == 'datetime':  # seconds -> matplotlib's days since 1970
        values = values / 86400.0
    return values


def _date_axis(axis, sdtype):
    if sdtype == 'datetime':
        from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

        locator = AutoDateLocator()
        axis.set_major_locator(locator)
        axis.set_major_formatter(ConciseDateFormatter(locator))


def _frequencies(series_list, top=TOP_CATEGORIES, categories=None):
    """Shares of the most common categories over the given series (same order for each); the
    public ``categories`` are all listed, at 0 when no row holds them."""
    counts = [pd.Series(s).astype(object).where(pd.Series(s).notna(), 'missing')
              .map(str).value_counts(normalize=True) for s in series_list]
    combined = pd.concat(counts, axis=1).fillna(0.0)
    extra = [str(c) for c in categories or () if str(c) not in combined.index]
    if extra and len(combined) + len(extra) <= top:  # room to show the never-seen ones
        combined = pd.concat([combined, pd.DataFrame(0.0, index=extra,
                                                     columns=combined.columns)])
    combined = combined.loc[combined.sum(axis=1).sort_values(ascending=False).index]
    if len(combined) > top:
        other = combined.iloc[top:].sum(axis=0)
        combined = combined.iloc[:top]
        combined.loc['(other)'] = other
    return combined


def column_figure(column, sdtype, synthetic, real=None, datetime_format=None, title=None,
                  bounds=None, categories=None):
    """A column's distribution: synthetic (blue), with real (grey) behind it when given.

    ``bounds`` (public low, high; datetimes in ns) fix a numeric axis, ``categories`` (public)
    are all listed on a categorical one."""
    figure = _figure(5.2, 3.2)
    draw_column(figure.add_subplot(1, 1, 1), column, sdtype, synthetic, real, datetime_format,
                title, bounds, categories)
    return to_png(figure)


def columns_figure(panels, ncols=2):
    """Several ``column_figure`` panels in one PNG; ``panels`` holds ``draw_column``'s keyword
    arguments (column, sdtype, synthetic, real, ...) per panel."""
    nrows = max(1, -(-len(panels) // ncols))
    figure = _figure(5.2 * min(ncols, max(1, len(panels))), 3.2 * nrows)
    for i, panel in enumerate(panels):
        draw_column(figure.add_subplot(nrows, ncols, i + 1), **panel)
    return to_png(figure)


def draw_column(axes, column, sdtype, synthetic, real=None, datetime_format=None, title=None,
                bounds=None, categories=None):
    """Draw one column's distribution (see ``column_figure``) on ``axes``."""
    series = [('real', real, REAL_COLOUR)] if real is not None else []
    series.append(('synthetic', synthetic, SYNTHETIC_COLOUR))
    if sdtype in ('numerical', 'datetime'):
        values = [(label, _numbers(s, sdtype, datetime_format), colour)
                  for label, s, colour in series]
        everything = np.concatenate([v for _, v, _ in values]) if values else np.array([])
        if bounds is not None and None not in bounds:
            scale = 1e-9 / 86400.0 if sdtype == 'datetime' else 1.0
            everything = np.array([bounds[0] * scale, bounds[1] * scale])
        if len(everything):
            low, high = np.min(everything), np.max(everything)
            bins = np.linspace(low, high if high > low else low + 1, 31)
            for label, data, colour in values:
                if len(data):
                    axes.hist(data, bins=bins, density=True, alpha=0.55, color=colour,
                              label=f'{label} ({len(data):,})')
        _date_axis(axes.xaxis, sdtype)
        if sdtype == 'numerical' and len(everything) and np.max(np.abs(everything)) >= 1e5:
            from matplotlib.ticker import EngFormatter

            axes.xaxis.set_major_formatter(EngFormatter())
        axes.set_ylabel('density')
    else:
        shares = _frequencies([s for _, s, _ in series], categories=categories)
        positions = np.arange(len(shares))
        height = 0.8 / len(series)
        for i, (label, _, colour) in enumerate(series):
            axes.barh(positions + (i - (len(series) - 1) / 2) * height, shares.iloc[:, i],
                      height=height, color=colour, alpha=0.85, label=label)
        axes.set_yticks(positions, [_short(v) for v in shares.index], fontsize=8)
        axes.invert_yaxis()
        axes.set_xlabel('share of rows')
    axes.set_title(title or _short(column, 60), fontsize=10)
    axes.legend(fontsize=8, frameon=False)
    axes.grid(True, alpha=0.25)


def _categorical(sdtype):
    return sdtype not in ('numerical', 'datetime')


def pair_figure(columns, sdtypes, real, synthetic, datetime_formats=None, seed=0):
    """Two panels, real | synthetic, of one pair of columns on shared axes."""
    (a, b), (ta, tb) = columns, sdtypes
    datetime_formats = datetime_formats or {}
    if _categorical(ta) and not _categorical(tb):  # categories on the y axis
        (a, b), (ta, tb) = (b, a), (tb, ta)
    figure = _figure(10, 3.6)
    panels = [figure.add_subplot(1, 2, i + 1) for i in range(2)]
    frames = [('real', real, REAL_COLOUR), ('synthetic', synthetic, SYNTHETIC_COLOUR)]
    rng = np.random.default_rng(seed)
    if not _categorical(ta) and not _categorical(tb):
        for axes, (label, frame, colour) in zip(panels, frames):
            x = to_float(frame[a], datetime_formats.get(a))
            y = to_float(frame[b], datetime_formats.get(b))
            keep = ~(np.isnan(x) | np.isnan(y))
            x, y = x[keep], y[keep]
            if len(x) > SCATTER_POINTS:
                pick = rng.choice(len(x), SCATTER_POINTS, replace=False)
                x, y = x[pick], y[pick]
            if ta == 'datetime':
                x = x / 86400.0
            if tb == 'datetime':
                y = y / 86400.0
            axes.scatter(x, y, s=4, alpha=0.35, color=colour, linewidths=0)
            axes.set_xlabel(_short(a, 40))
            axes.set_ylabel(_short(b, 40))
            _date_axis(axes.xaxis, ta)
            _date_axis(axes.yaxis, tb)
        _share_limits(panels)
    elif not _categorical(ta):  # numeric a on x, categories of b on y
        order = list(_frequencies([real[b], synthetic[b]], top=8).index)
        order = [c for c in order if c != '(other)']
        for axes, (label, frame, colour) in zip(panels, frames):
            keys = frame[b].astype(object).where(frame[b].notna(), 'missing').map(str)
            groups = [_numbers(frame.loc[keys == c, a], ta, datetime_formats.get(a))
                      for c in order]
            shown = [g if len(g) else np.array([np.nan]) for g in groups]
            box = axes.boxplot(shown, vert=False, patch_artist=True, widths=0.6,
                               showfliers=False, medianprops={'color': '#1d2733'})
            for patch in box['boxes']:
                patch.set_facecolor(colour)
                patch.set_alpha(0.6)
            axes.set_yticks(np.arange(1, len(order) + 1), [_short(c) for c in order],
                            fontsize=8)
            axes.invert_yaxis()
            axes.set_xlabel(_short(a, 40))
            _date_axis(axes.xaxis, ta)
        _share_limits(panels, y=False)
    else:  # two categorical columns: joint shares
        rows = [c for c in _frequencies([real[a], synthetic[a]], top=8).index if c != '(other)']
        cols = [c for c in _frequencies([real[b], synthetic[b]], top=8).index if c != '(other)']
        tables = []
        for _, frame, _ in frames:
            ka = frame[a].astype(object).where(frame[a].notna(), 'missing').map(str)
            kb = frame[b].astype(object).where(frame[b].notna(), 'missing').map(str)
            table = pd.crosstab(ka, kb, normalize=True) if len(frame) else pd.DataFrame()
            tables.append(table.reindex(index=rows, columns=cols).fillna(0.0).to_numpy())
        vmax = max(float(t.max()) if t.size else 0.0 for t in tables) or 1.0
        for axes, table in zip(panels, tables):
            image = axes.imshow(table, cmap='Blues', vmin=0, vmax=vmax, aspect='auto')
            axes.set_yticks(np.arange(len(rows)), [_short(c, 16) for c in rows], fontsize=7)
            axes.set_xticks(np.arange(len(cols)), [_short(c, 12) for c in cols], fontsize=7,
                            rotation=45, ha='right')
            axes.set_ylabel(_short(a, 40))
            axes.set_xlabel(_short(b, 40))
        figure.colorbar(image, ax=panels, shrink=0.8, label='share of rows')
    for axes, (label, frame, _) in zip(panels, frames):
        axes.set_title(f'{label} ({len(frame):,} rows)', fontsize=10)
    return to_png(figure)


def _share_limits(panels, x=True, y=True):
    if x:
        lows, highs = zip(*(p.get_xlim() for p in panels))
        for p in panels:
            p.set_xlim(min(lows), max(highs))
    if y:
        lows, highs = zip(*(p.get_ylim() for p in panels))
        for p in panels:
            p.set_ylim(min(lows), max(highs))


def loss_figure(loss_values):
    """The training loss per step (post-processing of the noisy releases only)."""
    figure = _figure(6.4, 3.0)
    axes = figure.add_subplot(1, 1, 1)
    steps = loss_values['Step'] if 'Step' in loss_values else np.arange(len(loss_values))
    columns = [c for c in loss_values.columns if c != 'Step']
    main = 'Loss' if 'Loss' in columns else columns[-1]
    values = pd.to_numeric(loss_values[main], errors='coerce')
    window = max(1, len(values) // 25)
    axes.plot(steps, values, color=SYNTHETIC_COLOUR, linewidth=0.6, alpha=0.35, label='per step')
    if window > 1:  # steps cycle through terms (e.g. product kernels): show the trend too
        axes.plot(steps, values.rolling(window, min_periods=1).mean(), color=SYNTHETIC_COLOUR,
                  linewidth=1.8, label=f'mean of {window} steps')
        axes.legend(fontsize=8, frameon=False)
    if (values.dropna() > 0).all() and len(values.dropna()):
        axes.set_yscale('log')
    axes.set_xlabel('training step')
    axes.set_ylabel(str(main))
    axes.grid(True, alpha=0.25)
    return to_png(figure)
