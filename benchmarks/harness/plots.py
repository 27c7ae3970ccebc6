"""The plots of a study that compares methods over ε (matplotlib, written to PNG files)."""
from __future__ import annotations

import math

import pandas as pd


def _new_figure(width, height):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=120)
    FigureCanvasAgg(figure)
    return figure


MARKERS = ('o', 's', 'D', 'v', '^', 'P', 'X', '*')


def _ok(frame):
    return frame.loc[frame['error'].isna()] if 'error' in frame else frame


def _save(figure, title, path):
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, format='png')
    return path


def quality_vs_epsilon(frame, path, labels, title, delta, reference_label):
    """Quality, TSTR ROC-AUC and PR-AUC against ε per method (log x; ∞ / non-DP at the right,
    hollow), with the real-data row (method 'reference') as a dotted line."""
    data = _ok(frame)
    methods = [m for m in labels if (data['method'] == m).any()]
    if not methods:
        return None
    finite = sorted({float(e) for e in data.loc[data['method'].isin(methods), 'epsilon']
                     if math.isfinite(e)})
    inf_x = (max(finite) * 10) if finite else 1.0
    reference = data.loc[data['method'] == 'reference']
    panels = (('quality', 'SDMetrics quality'), ('tstr_roc_auc', 'TSTR ROC-AUC'),
              ('tstr_pr_auc', 'TSTR PR-AUC'))
    figure = _new_figure(15, 4.6)
    for index, (column, title) in enumerate(panels):
        axes = figure.add_subplot(1, 3, index + 1)
        for number, method in enumerate(methods):
            # Small multiplicative x-offset per method so that error bars do not overlap.
            shift = 1.0 + 0.07 * (number - (len(methods) - 1) / 2)
            sub = data.loc[data['method'] == method]
            stats = sub.groupby('epsilon')[column].agg(['mean', 'std'])
            xs = [e for e in stats.index if math.isfinite(e)]
            position = list(labels).index(method)  # the same look whichever methods ran
            color, marker = f'C{position}', MARKERS[position % len(MARKERS)]
            label = labels[method]
            if xs:
                axes.errorbar([x * shift for x in xs], stats.loc[xs, 'mean'],
                              yerr=stats.loc[xs, 'std'].fillna(0),
                              color=color, marker=marker, capsize=3, label=label)
                label = None
            infs = [e for e in stats.index if math.isinf(e)]
            if infs:
                axes.errorbar([inf_x * shift], [stats.loc[infs[0], 'mean']],
                              yerr=[0 if pd.isna(stats.loc[infs[0], 'std'])
                                    else stats.loc[infs[0], 'std']],
                              color=color, marker=marker, markerfacecolor='white', capsize=3,
                              linestyle='none', label=label)
        if len(reference) and pd.notna(reference.iloc[0].get(column)):
            axes.axhline(float(reference.iloc[0][column]), color='black', linestyle=':',
                         linewidth=1, label=reference_label)
        ticks = finite + [inf_x]
        if finite:
            axes.axvline(math.sqrt(max(finite) * inf_x), color='grey', linewidth=0.8,
                         linestyle='--')
        axes.set_xscale('log')
        axes.set_xticks(ticks)
        axes.set_xticklabels([f'{e:g}' for e in finite] + ['∞ / non-DP'])
        axes.minorticks_off()
        axes.set_xlim(min(ticks) / 2, max(ticks) * 2)
        axes.set_xlabel(f'ε (δ = {delta:g}); hollow = no noise / non-DP')
        axes.set_title(title)
        axes.grid(True, alpha=0.3)
        if index == 0:
            axes.legend(fontsize='small', loc='best')
    return _save(figure, title, path)


def cost_bars(frame, path, labels, title, bars):
    """Fit wall time (log) and peak RSS per method and ε; ``bars``: {column: (value, label)}."""
    data = _ok(frame)
    methods = [m for m in labels if (data['method'] == m).any()]
    if not methods:
        return None
    epsilons = sorted({float(e) for e in data.loc[data['method'].isin(methods), 'epsilon']},
                      key=lambda e: (math.isinf(e), e))
    width = 0.8 / max(len(epsilons), 1)
    cmap = {e: f'C{i}' for i, e in enumerate(epsilons)}
    figure = _new_figure(13, 4.6)
    panels = (('fit_s', 'fit wall time (s, log scale)', True),
              ('peak_mb', 'peak RSS of fit + sample (MB)', False))
    for index, (column, ylabel, log) in enumerate(panels):
        axes = figure.add_subplot(1, 2, index + 1)
        present = {m: [e for e in epsilons
                       if ((data['method'] == m) & (data['epsilon'] == e)).any()]
                   for m in methods}
        labelled = set()
        for i, method in enumerate(methods):
            count = len(present[method])
            for j, epsilon in enumerate(present[method]):
                sub = data.loc[(data['method'] == method) & (data['epsilon'] == epsilon), column]
                sub = pd.to_numeric(sub, errors='coerce').dropna()
                if not len(sub):
                    continue
                x = i + width * (j - (count - 1) / 2)  # bars centred on the method's tick
                mean = float(sub.mean())
                std = float(sub.std(ddof=1)) if len(sub) > 1 else 0.0
                label = None
                if epsilon not in labelled:
                    label = 'ε = ∞ / non-DP' if math.isinf(epsilon) else f'ε = {epsilon:g}'
                    labelled.add(epsilon)
                axes.bar([x], [mean], width=width * 0.95, yerr=[std], capsize=2,
                         color=cmap[epsilon], alpha=0.85, label=label)
                axes.annotate(f'{mean:.0f}', (x, mean + std), textcoords='offset points',
                              xytext=(0, 2), ha='center', fontsize=6)
        if column in bars:
            axes.axhline(bars[column][0], color='black', linestyle='--', linewidth=1,
                         label=bars[column][1])
        axes.set_xticks(range(len(methods)))
        axes.set_xticklabels([labels[m].replace(' (smartnoise)', '\n(smartnoise)')
                              for m in methods], fontsize='small')
        axes.set_ylabel(ylabel)
        if log:
            axes.set_yscale('log')
        axes.grid(True, axis='y', alpha=0.3)
        axes.legend(fontsize='x-small', loc='best')
    return _save(figure, title, path)
