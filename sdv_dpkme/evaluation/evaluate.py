"""One-stop evaluation of a synthetic table against real data."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np

from sdv_dpkme.evaluation._common import infer_column_types, table_metadata, to_float
from sdv_dpkme.evaluation.marginals import marginal_tv, public_bin_edges
from sdv_dpkme.evaluation.quality import quality_scores
from sdv_dpkme.evaluation.tstr import tstr_scores


def _tstr_summary(table, prefix):
    mean = table.loc[table['classifier'] == 'mean'].iloc[0]
    if table.attrs.get('task') == 'binary':
        summary = {
            f'{prefix}_roc_auc': float(mean['roc_auc']),
            f'{prefix}_pr_auc': float(mean['pr_auc']),
        }
    else:
        summary = {
            f'{prefix}_f1': float(mean['f1_weighted']),
            f'{prefix}_accuracy': float(mean['accuracy']),
        }

    summary[f'{prefix}_table'] = table
    return summary


def _real_bounds(real, columns, datetime_formats):
    bounds = {}
    for column in columns:
        values = to_float(real[column], datetime_formats.get(column))
        values = values[~np.isnan(values)]
        if len(values):
            bounds[column] = (float(values.min()), float(values.max()))

    return bounds


def evaluate(
    real,
    synthetic,
    metadata,
    target_column=None,
    real_test=None,
    categories=None,
    bounds=None,
    alphas=(3,),
    classifiers=None,
    *,
    n_bins=10,
    max_subsets=None,
    random_state=0,
    n_jobs=1,
    verbose=False,
):
    """Evaluate ``synthetic`` against real data with quality, utility and marginal scores.

    Args:
        real (pandas.DataFrame): The real (training) table.
        synthetic (pandas.DataFrame): The synthetic table.
        metadata: ``sdv.metadata.Metadata`` (single table) or a metadata dict. The
            sdtypes decide the column roles: ``numerical``/``datetime`` are numeric,
            ``categorical``/``boolean``/``ordinal`` are categorical, and ``id``/PII/
            other sdtypes (and the primary key) are ignored by TSTR and TV.
        target_column (str or None): Class column for TSTR; TSTR is skipped if None.
        real_test (pandas.DataFrame or None): Real held-out table. When given, it is
            the reference for the quality report, the TSTR test set and the TV
            distances, and a train-real-test-real baseline (``tstr_real_*``) is added.
            Otherwise ``real`` is the reference for everything.
        categories (dict or None): Public category lists ``{column: [values]}`` for
            TSTR (see :func:`tstr_scores`).
        bounds (dict, ``'real'`` or None): Public ``{column: (lo, hi)}`` bounds of
            the numeric columns; TV bins are ``public_bin_edges(bounds, n_bins)``.
            Numeric columns without bounds are left out of the TV scores (with a
            warning). ``'real'`` takes min/max of the reference real table, which is
            convenient but not public.
        alphas (iterable of int): Marginal orders for the TV scores.
        classifiers: TSTR classifiers (see :func:`tstr_scores`); default all 12.
        n_bins (int): Bins per numeric column for TV. Defaults to 10.
        max_subsets (int or None): Subsample of column subsets per alpha for TV.
        random_state (int): Seed for classifiers and subset sampling.
        n_jobs (int): Parallelism for the classifiers that support it.
        verbose (bool): Forwarded to the SDMetrics reports.

    Returns:
        dict: ``quality``, ``diagnostic``, ``column_shapes``, ``column_pair_trends``,
        ``data_validity``, ``data_structure``, ``quality_report``,
        ``diagnostic_report``; with a target ``tstr_roc_auc``/``tstr_pr_auc``
        (binary) or ``tstr_f1``/``tstr_accuracy`` (multi-class), each the mean over
        classifiers, and ``tstr_table``; with ``real_test`` also the same keys with a
        ``tstr_real_`` prefix; ``tv_alpha{a}`` for each alpha (NaN if alpha exceeds
        the number of TV columns); ``tv_columns``; ``n_real``, ``n_synthetic``.
    """
    reference = real if real_test is None else real_test
    table = table_metadata(metadata)
    categorical_columns, numerical_columns = infer_column_types(metadata)
    datetime_formats = {
        column: spec.get('datetime_format')
        for column, spec in table.get('columns', {}).items()
        if spec.get('sdtype') == 'datetime'
    }

    results = {'n_real': len(reference), 'n_synthetic': len(synthetic)}
    results.update(quality_scores(reference, synthetic, metadata, verbose=verbose))

    if target_column is not None:
        feature_categorical = [c for c in categorical_columns if c != target_column]
        feature_numerical = [c for c in numerical_columns if c != target_column]
        tstr_kwargs = {
            'target_column': target_column,
            'categorical_columns': feature_categorical,
            'numerical_columns': feature_numerical,
            'categories': categories,
            'classifiers': classifiers,
            'random_state': random_state,
            'n_jobs': n_jobs,
        }
        results.update(_tstr_summary(tstr_scores(synthetic, reference, **tstr_kwargs), 'tstr'))
        if real_test is not None:
            baseline = tstr_scores(real, real_test, **tstr_kwargs)
            results.update(_tstr_summary(baseline, 'tstr_real'))

    if isinstance(bounds, str):
        if bounds != 'real':
            raise ValueError(f"bounds must be a dict, 'real' or None, got {bounds!r}.")
        bounds = _real_bounds(reference, numerical_columns, datetime_formats)

    if not isinstance(bounds, (Mapping, type(None))):
        raise TypeError(f'bounds must be a dict, \'real\' or None, got {type(bounds).__name__}.')

    bounds = dict(bounds or {})
    unbounded = [c for c in numerical_columns if c not in bounds]
    if unbounded and alphas:
        warnings.warn(
            f'Numeric columns {unbounded} have no public bounds and are left out of the '
            'marginal TV scores; pass bounds={column: (lo, hi)} to include them.',
            UserWarning,
            stacklevel=2,
        )

    bins = public_bin_edges({c: bounds[c] for c in numerical_columns if c in bounds}, n_bins)
    tv_columns = [
        c
        for c in table.get('columns', {})
        if c in categorical_columns or c in bins
    ]
    results['tv_columns'] = tv_columns
    for alpha in alphas:
        key = f'tv_alpha{alpha}'
        if int(alpha) > len(tv_columns):
            warnings.warn(
                f'alpha={alpha} exceeds the {len(tv_columns)} TV columns; {key} is NaN.',
                UserWarning,
                stacklevel=2,
            )
            results[key] = float('nan')
            continue

        results[key] = marginal_tv(
            reference,
            synthetic,
            tv_columns,
            alpha=alpha,
            bins=bins,
            max_subsets=max_subsets,
            random_state=random_state,
            categorical=categorical_columns,
        )

    return results
