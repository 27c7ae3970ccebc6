"""Evaluation of synthetic tables: SDMetrics quality, TSTR utility and marginal TV.

Importing this package does not require xgboost or matplotlib; they are imported
lazily by :func:`tstr_scores` (``XGBClassifier``) and :func:`plot_results`.
"""

from sdv_dpkme.evaluation._common import infer_column_types
from sdv_dpkme.evaluation.evaluate import evaluate
from sdv_dpkme.evaluation.marginals import marginal_tv, marginal_tv_per_subset, public_bin_edges
from sdv_dpkme.evaluation.plots import plot_results, plot_worst_columns
from sdv_dpkme.evaluation.quality import quality_details, quality_scores, quality_summary
from sdv_dpkme.evaluation.tstr import DEFAULT_CLASSIFIERS, make_classifiers, tstr_scores

__all__ = [
    'DEFAULT_CLASSIFIERS',
    'evaluate',
    'infer_column_types',
    'make_classifiers',
    'marginal_tv',
    'marginal_tv_per_subset',
    'plot_results',
    'plot_worst_columns',
    'public_bin_edges',
    'quality_details',
    'quality_scores',
    'quality_summary',
    'tstr_scores',
]
