"""Train-on-synthetic, test-on-real (TSTR) classification utility.

The protocol follows the DP-MERF / DP-HP papers: a battery of 12 off-the-shelf
classifiers is trained on the synthetic table and scored on real held-out data
(ROC-AUC and PR-AUC for binary targets, weighted F1 for multi-class targets).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, average_precision_score, f1_score, roc_auc_score

from sdv_dpkme.evaluation._common import to_float, unique_non_null

#: Names of the 12 classifiers used by the DP-MERF / DP-HP tabular benchmarks.
DEFAULT_CLASSIFIERS = (
    'LogisticRegression',
    'GaussianNB',
    'BernoulliNB',
    'LinearSVC',
    'DecisionTreeClassifier',
    'LinearDiscriminantAnalysis',
    'AdaBoostClassifier',
    'BaggingClassifier',
    'RandomForestClassifier',
    'GradientBoostingClassifier',
    'MLPClassifier',
    'XGBClassifier',
)


def _build(name, random_state, n_jobs):
    """Instantiate one of the default classifiers by (case-insensitive) name."""
    key = name.lower()
    if key == 'logisticregression':
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=1000, random_state=random_state)
    if key == 'gaussiannb':
        from sklearn.naive_bayes import GaussianNB

        return GaussianNB()
    if key == 'bernoullinb':
        from sklearn.naive_bayes import BernoulliNB

        return BernoulliNB()
    if key == 'linearsvc':
        from sklearn.svm import LinearSVC

        return LinearSVC(random_state=random_state)
    if key == 'decisiontreeclassifier':
        from sklearn.tree import DecisionTreeClassifier

        return DecisionTreeClassifier(random_state=random_state)
    if key == 'lineardiscriminantanalysis':
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

        return LinearDiscriminantAnalysis()
    if key == 'adaboostclassifier':
        from sklearn.ensemble import AdaBoostClassifier

        return AdaBoostClassifier(random_state=random_state)
    if key == 'baggingclassifier':
        from sklearn.ensemble import BaggingClassifier

        return BaggingClassifier(random_state=random_state, n_jobs=n_jobs)
    if key == 'randomforestclassifier':
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(
            n_estimators=100, random_state=random_state, n_jobs=n_jobs
        )
    if key == 'gradientboostingclassifier':
        from sklearn.ensemble import GradientBoostingClassifier

        return GradientBoostingClassifier(random_state=random_state)
    if key == 'mlpclassifier':
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier(hidden_layer_sizes=(100,), random_state=random_state)
    if key == 'xgbclassifier':
        try:
            from xgboost import XGBClassifier
        except ImportError:
            return None

        return XGBClassifier(random_state=random_state, n_jobs=n_jobs, verbosity=0)

    raise ValueError(f'Unknown classifier {name!r}; expected one of {list(DEFAULT_CLASSIFIERS)}.')


def make_classifiers(names=None, random_state=0, n_jobs=1):
    """Build the TSTR classifiers (unfitted).

    Args:
        names (iterable of str or None): Classifier names from
            :data:`DEFAULT_CLASSIFIERS` (case-insensitive). ``None`` means all 12.
        random_state (int): Seed given to every classifier that accepts one.
        n_jobs (int): Parallelism for the classifiers that support it
            (bagging, random forest, XGBoost).

    Returns:
        dict: ``{name: estimator}`` in the requested order. ``XGBClassifier`` is
        imported lazily and skipped with a ``UserWarning`` when xgboost is not
        installed.
    """
    names = DEFAULT_CLASSIFIERS if names is None else names
    canonical = {name.lower(): name for name in DEFAULT_CLASSIFIERS}
    classifiers = {}
    for name in names:
        estimator = _build(name, random_state, n_jobs)
        name = canonical.get(name.lower(), name)
        if estimator is None:
            warnings.warn(
                f'{name} skipped: xgboost is not installed (pip install xgboost).',
                UserWarning,
                stacklevel=2,
            )
            continue

        classifiers[name] = estimator

    return classifiers


def _resolve_classifiers(classifiers, random_state, n_jobs):
    if classifiers is None or isinstance(classifiers, str):
        names = None if classifiers is None else [classifiers]
        return make_classifiers(names, random_state=random_state, n_jobs=n_jobs)

    if isinstance(classifiers, Mapping):
        return {str(name): clone(estimator) for name, estimator in classifiers.items()}

    resolved = {}
    names = [item for item in classifiers if isinstance(item, str)]
    built = make_classifiers(names, random_state=random_state, n_jobs=n_jobs)
    for item in classifiers:
        if isinstance(item, str):
            key = next((k for k in built if k.lower() == item.lower()), None)
            if key is not None:
                resolved[key] = built[key]
        else:
            name = type(item).__name__
            if name in resolved:
                name = f'{name}_{len(resolved)}'
            resolved[name] = clone(item)

    return resolved


class _FeatureEncoder:
    """One-hot categoricals over fixed category lists + standardised numerics.

    The scaler is fit on the training (synthetic) table only. Missing numerics are
    imputed with 0 after scaling (i.e. the training mean) and flagged with an
    is-null indicator column. Missing or unknown categorical values encode as an
    all-zero one-hot block.
    """

    def __init__(self, categorical_columns, numerical_columns, categories):
        self.categorical_columns = list(categorical_columns)
        self.numerical_columns = list(numerical_columns)
        self.categories = categories

    def fit(self, train, null_indicator_columns):
        self.null_indicator_columns = list(null_indicator_columns)
        if self.numerical_columns:
            values = self._numeric(train)
            with warnings.catch_warnings():  # all-NaN columns: 'Mean of empty slice'
                warnings.simplefilter('ignore', RuntimeWarning)
                mean = np.nanmean(values, axis=0) if len(values) else np.zeros(values.shape[1])
                std = np.nanstd(values, axis=0) if len(values) else np.ones(values.shape[1])
            self.mean_ = np.where(np.isnan(mean), 0.0, mean)
            self.scale_ = np.where(np.isnan(std) | (std < 1e-12), 1.0, std)

        return self

    def _numeric(self, data):
        return np.column_stack([to_float(data[col]) for col in self.numerical_columns])

    def transform(self, data):
        blocks = []
        for col in self.categorical_columns:
            lookup = {cat: j for j, cat in enumerate(self.categories[col])}
            codes = np.array(
                [_lookup(lookup, v) for v in data[col].to_numpy(dtype=object)], dtype=int
            )
            block = np.zeros((len(data), len(lookup)), dtype=float)
            known = codes >= 0
            block[np.flatnonzero(known), codes[known]] = 1.0
            blocks.append(block)

        if self.numerical_columns:
            values = self._numeric(data)
            isnull = np.isnan(values)
            scaled = (values - self.mean_) / self.scale_
            scaled[isnull] = 0.0
            blocks.append(scaled)
            for col in self.null_indicator_columns:
                j = self.numerical_columns.index(col)
                blocks.append(isnull[:, [j]].astype(float))

        if not blocks:
            raise ValueError('No feature columns were given.')

        return np.hstack(blocks)


def _positive_scores(estimator, features, positive_label):
    """Score of the positive class from predict_proba or decision_function."""
    classes = list(estimator.classes_)
    if hasattr(estimator, 'predict_proba'):
        try:
            proba = estimator.predict_proba(features)
            return np.asarray(proba)[:, classes.index(positive_label)]
        except (AttributeError, NotImplementedError):
            pass

    scores = np.asarray(estimator.decision_function(features))
    if scores.ndim == 2:
        return scores[:, classes.index(positive_label)]

    return scores if classes.index(positive_label) == 1 else -scores


def _lookup(lookup, value):
    """Index of ``value`` in a category lookup, -1 for missing/unknown values."""
    try:
        if pd.isna(value):
            return -1
    except (TypeError, ValueError):
        pass
    try:
        return lookup.get(value, -1)
    except TypeError:  # unhashable
        return -1


def _encode_target(values, classes, label):
    lookup = {cls: i for i, cls in enumerate(classes)}
    codes = np.array([_lookup(lookup, v) for v in values], dtype=int)
    n_bad = int((codes < 0).sum())
    if n_bad:
        warnings.warn(
            f'{n_bad} {label} rows have a missing target or a class outside the public '
            'class list; they are dropped.',
            UserWarning,
            stacklevel=3,
        )

    return codes


def tstr_scores(
    synthetic_train,
    real_test,
    target_column,
    categorical_columns,
    numerical_columns,
    categories=None,
    classifiers=None,
    random_state=0,
    n_jobs=1,
):
    """Train classifiers on ``synthetic_train`` and score them on ``real_test``.

    Features are the one-hot encoded ``categorical_columns`` (over the public
    category lists) and the ``numerical_columns`` standardised with statistics of
    the synthetic training table; missing numerics are imputed with 0 after
    scaling and get an is-null indicator column. The target is encoded with its
    public class list.

    Args:
        synthetic_train (pandas.DataFrame): Training table (usually synthetic).
        real_test (pandas.DataFrame): Test table (real held-out data).
        target_column (str): Name of the class column.
        categorical_columns (list): Categorical feature columns (the target is
            removed if listed).
        numerical_columns (list): Numeric feature columns (bool/datetime allowed).
        categories (dict or None): Public category lists ``{column: [values]}`` for
            the categorical columns and the target. Columns without an entry (or
            all columns when ``None``) use the sorted union of the non-null values
            seen in the synthetic and the real table; that union is data dependent,
            so pass public lists where they exist.
        classifiers: ``None`` (the 12 :data:`DEFAULT_CLASSIFIERS`), a list of
            names and/or estimator instances, or a dict ``{name: estimator}``
            (estimators are cloned).
        random_state (int): Seed for the default classifiers.
        n_jobs (int): Parallelism for classifiers that support it.

    Returns:
        pandas.DataFrame: One row per classifier plus a final ``'mean'`` row (the
        NaN-skipping mean of each score). Binary targets (two public classes) have
        columns ``classifier, roc_auc, pr_auc, fit_seconds, note`` where the
        positive class is the second class of the target's category list;
        multi-class targets have ``classifier, f1_weighted, accuracy, fit_seconds,
        note``. A classifier that cannot be trained (e.g. the training data holds a
        single class) gets NaN scores and an explanation in ``note``.
        ``df.attrs`` holds ``task``, ``classes`` and ``positive_class``.
    """
    categories = dict(categories or {})
    categorical_columns = [c for c in categorical_columns if c != target_column]
    numerical_columns = [c for c in numerical_columns if c != target_column]
    missing = [
        c
        for c in [target_column, *categorical_columns, *numerical_columns]
        if c not in synthetic_train.columns or c not in real_test.columns
    ]
    if missing:
        raise ValueError(f'Columns {missing} are missing from the training or test table.')

    def category_list(column):
        if categories.get(column) is not None:
            return list(categories[column])

        return unique_non_null(synthetic_train[column], real_test[column])

    classes = category_list(target_column)
    if len(classes) < 2:
        raise ValueError(
            f'Target {target_column!r} needs at least two classes, got {classes}.'
        )

    binary = len(classes) == 2
    positive_label = 1
    y_train = _encode_target(synthetic_train[target_column].to_numpy(object), classes, 'training')
    y_test = _encode_target(real_test[target_column].to_numpy(object), classes, 'test')
    train = synthetic_train.loc[y_train >= 0]
    test = real_test.loc[y_test >= 0]
    y_train = y_train[y_train >= 0]
    y_test = y_test[y_test >= 0]

    encoder = _FeatureEncoder(
        categorical_columns,
        numerical_columns,
        {col: category_list(col) for col in categorical_columns},
    )
    null_columns = [
        col
        for col in numerical_columns
        if np.isnan(to_float(train[col])).any() or np.isnan(to_float(test[col])).any()
    ]
    encoder.fit(train, null_columns)
    x_train = encoder.transform(train) if len(train) else None
    x_test = encoder.transform(test) if len(test) else None

    estimators = _resolve_classifiers(classifiers, random_state, n_jobs)
    score_names = ['roc_auc', 'pr_auc'] if binary else ['f1_weighted', 'accuracy']
    rows = []
    train_classes = np.unique(y_train)
    test_classes = np.unique(y_test)
    for name, estimator in estimators.items():
        row = {'classifier': name, **{s: np.nan for s in score_names}}
        row.update({'fit_seconds': np.nan, 'note': ''})
        rows.append(row)
        if len(train_classes) < 2:
            row['note'] = (
                f'training data has {len(train_classes)} class(es); classifier not fitted'
            )
            continue
        if len(test_classes) == 0:
            row['note'] = 'no test rows with a valid target'
            continue

        # Remap to contiguous labels 0..k-1 (XGBoost requires it when classes are absent).
        y_fit = np.searchsorted(train_classes, y_train)
        start = time.perf_counter()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter('always', ConvergenceWarning)
                estimator.fit(x_train, y_fit)
        except Exception as error:  # noqa: BLE001 - report and continue with the others
            row['note'] = f'fit failed: {type(error).__name__}: {error}'
            continue
        finally:
            row['fit_seconds'] = time.perf_counter() - start

        if any(issubclass(w.category, ConvergenceWarning) for w in caught):
            row['note'] = 'did not converge'

        try:
            if binary:
                if len(test_classes) < 2:
                    row['note'] = 'test data has a single class; ROC/PR-AUC undefined'
                    continue
                scores = _positive_scores(estimator, x_test, positive_label)
                row['roc_auc'] = roc_auc_score(y_test == positive_label, scores)
                row['pr_auc'] = average_precision_score(y_test == positive_label, scores)
            else:
                predictions = train_classes[np.asarray(estimator.predict(x_test), dtype=int)]
                row['f1_weighted'] = f1_score(
                    y_test, predictions, average='weighted', zero_division=0
                )
                row['accuracy'] = accuracy_score(y_test, predictions)
        except Exception as error:  # noqa: BLE001
            row['note'] = f'scoring failed: {type(error).__name__}: {error}'

    table = pd.DataFrame(rows, columns=['classifier', *score_names, 'fit_seconds', 'note'])
    numeric = [*score_names, 'fit_seconds']
    mean_row = {'classifier': 'mean', 'note': ''}
    for column in numeric:
        values = table[column].astype(float)
        mean_row[column] = float(values.mean()) if values.notna().any() else np.nan

    table = pd.concat([table, pd.DataFrame([mean_row])], ignore_index=True)
    table[numeric] = table[numeric].astype(float)
    table.attrs.update({
        'task': 'binary' if binary else 'multiclass',
        'classes': classes,
        'positive_class': classes[positive_label] if binary else None,
        'target_column': target_column,
    })
    return table
