"""Tests for sdv_dpkme.evaluation (quality, TSTR, marginal TV, evaluate, plots)."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdv_dpkme.evaluation import (
    DEFAULT_CLASSIFIERS,
    evaluate,
    infer_column_types,
    make_classifiers,
    marginal_tv,
    marginal_tv_per_subset,
    plot_results,
    public_bin_edges,
    quality_scores,
    tstr_scores,
)

FAST = ['LogisticRegression', 'DecisionTreeClassifier']


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope='module')
def student():
    """The student_placements demo shipped with sdmetrics (215 rows, 17 columns)."""
    import sdmetrics

    folder = Path(sdmetrics.__file__).parent / 'demos' / 'single_table'
    real = pd.read_csv(folder / 'student_placements_real.csv')
    metadata = json.loads((folder / 'metadata.json').read_text())
    return real, metadata


@pytest.fixture(scope='module')
def cancer():
    """Breast-cancer data (bundled with sklearn) as a mixed-type table, 400/169 split."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.data.iloc[:, :6].copy()
    frame.columns = [f'x{i}' for i in range(frame.shape[1])]
    frame['size'] = pd.cut(
        data.data['mean area'], [0, 500, 1000, np.inf], labels=['small', 'mid', 'large']
    ).astype(object)
    frame['label'] = np.where(data.target == 1, 'benign', 'malignant')
    rng = np.random.default_rng(0)
    frame.loc[rng.random(len(frame)) < 0.1, 'x1'] = np.nan  # exercise imputation
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    return frame.iloc[:400].reset_index(drop=True), frame.iloc[400:].reset_index(drop=True)


CANCER_NUM = [f'x{i}' for i in range(6)]
CANCER_CAT = ['size']
CANCER_CATEGORIES = {'label': ['benign', 'malignant'], 'size': ['small', 'mid', 'large']}


def _shuffled_target(frame, column, seed=1):
    out = frame.copy()
    out[column] = np.random.default_rng(seed).permutation(out[column].to_numpy())
    return out


def _shuffle_columns_independently(frame, seed=2):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.permutation(frame[c].to_numpy()) for c in frame.columns})


# --------------------------------------------------------------------------- quality
def test_quality_real_vs_itself_beats_noise(student):
    real, metadata = student
    rng = np.random.default_rng(0)
    noise = real.copy()
    for column, spec in metadata['tables']['student_placements']['columns'].items():
        if spec['sdtype'] == 'numerical':
            lo, hi = real[column].min(), real[column].max()
            noise[column] = rng.uniform(lo - 3 * (hi - lo), hi + 3 * (hi - lo), len(real))
        elif spec['sdtype'] in ('categorical', 'boolean'):
            noise[column] = rng.choice(real[column].dropna().unique(), len(real))

    same = quality_scores(real, real, metadata)
    bad = quality_scores(real, noise, metadata)
    for scores in (same, bad):
        for key in ('quality', 'column_shapes', 'column_pair_trends', 'diagnostic'):
            assert 0.0 <= scores[key] <= 1.0, key
        assert scores['quality_report'] is not None
        assert scores['diagnostic_report'] is not None

    assert same['quality'] > 0.99
    assert same['diagnostic'] == pytest.approx(1.0)
    assert same['quality'] > bad['quality'] + 0.2
    assert same['column_shapes'] > bad['column_shapes']
    assert same['diagnostic'] > bad['diagnostic']  # noise violates the real ranges


def test_quality_accepts_sdv_metadata_and_single_table_dict(student):
    from sdv.metadata import Metadata

    real, metadata = student
    synthetic = _shuffle_columns_independently(real)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        sdv_metadata = Metadata.load_from_dict(metadata)

    from_dict = quality_scores(real, synthetic, metadata)
    from_object = quality_scores(real, synthetic, sdv_metadata)
    from_table = quality_scores(real, synthetic, metadata['tables']['student_placements'])
    assert from_object['quality'] == pytest.approx(from_dict['quality'])
    assert from_table['quality'] == pytest.approx(from_dict['quality'])
    # shuffling keeps every marginal but destroys the pair trends
    assert from_dict['column_shapes'] > 0.99
    assert from_dict['column_pair_trends'] < 0.95


def test_infer_column_types_from_metadata(student):
    _, metadata = student
    categorical, numerical = infer_column_types(metadata)
    assert 'student_id' not in categorical + numerical  # id / primary key ignored
    assert {'gender', 'placed', 'work_experience', 'degree_type'} <= set(categorical)
    assert {'salary', 'start_date', 'mba_perc'} <= set(numerical)
    assert not set(categorical) & set(numerical)


# --------------------------------------------------------------------------- TSTR
def test_tstr_learnable_vs_shuffled_target(cancer):
    train, test = cancer
    args = dict(
        target_column='label',
        categorical_columns=CANCER_CAT + ['label'],  # target is dropped from features
        numerical_columns=CANCER_NUM,
        categories=CANCER_CATEGORIES,
        classifiers=FAST,
    )
    good = tstr_scores(train, test, **args)
    assert list(good.columns) == ['classifier', 'roc_auc', 'pr_auc', 'fit_seconds', 'note']
    assert list(good['classifier']) == FAST + ['mean']
    assert good.attrs['task'] == 'binary'
    assert good.attrs['positive_class'] == 'malignant'
    assert (good['roc_auc'] > 0.8).all()
    assert good['roc_auc'].iloc[-1] == pytest.approx(good['roc_auc'].iloc[:-1].mean())
    assert (good['fit_seconds'] >= 0).all()

    bad = tstr_scores(_shuffled_target(train, 'label'), test, **args)
    mean_bad = bad.set_index('classifier').loc['mean']
    assert abs(mean_bad['roc_auc'] - 0.5) < 0.12
    prevalence = (test['label'] == 'malignant').mean()
    assert abs(mean_bad['pr_auc'] - prevalence) < 0.15
    assert good.set_index('classifier').loc['mean', 'roc_auc'] > mean_bad['roc_auc'] + 0.3


def test_tstr_positive_class_is_second_category(cancer):
    train, test = cancer
    shuffled = _shuffled_target(train, 'label')
    reversed_categories = dict(CANCER_CATEGORIES, label=['malignant', 'benign'])
    table = tstr_scores(
        shuffled,
        test,
        'label',
        CANCER_CAT,
        CANCER_NUM,
        categories=reversed_categories,
        classifiers=['LogisticRegression'],
    )
    assert table.attrs['positive_class'] == 'benign'
    benign_rate = (test['label'] == 'benign').mean()
    assert benign_rate > 0.5
    # an uninformative classifier has PR-AUC close to the positive-class rate
    assert abs(table['pr_auc'].iloc[0] - benign_rate) < 0.15


def test_tstr_linear_svc_uses_decision_function(cancer):
    train, test = cancer
    table = tstr_scores(
        train, test, 'label', CANCER_CAT, CANCER_NUM, categories=CANCER_CATEGORIES,
        classifiers=['LinearSVC'],
    )
    assert table['roc_auc'].iloc[0] > 0.8


def test_tstr_missing_numerics_get_null_indicator():
    rng = np.random.default_rng(0)
    n = 400
    x = rng.normal(0.0, 1.0, n)
    missing = rng.random(n) < 0.5
    x[missing] = np.nan
    frame = pd.DataFrame({
        'x': x,
        'noise': rng.normal(size=n),
        'y': np.where(missing, 'yes', 'no'),
    })
    # after mean-imputation x is 0 for the 'yes' rows, which a linear model cannot
    # separate from the spread-out 'no' rows; only the is-null indicator carries it
    table = tstr_scores(
        frame.iloc[:300], frame.iloc[300:], 'y', [], ['x', 'noise'],
        categories={'y': ['no', 'yes']}, classifiers=['LogisticRegression'],
    )
    assert table['roc_auc'].iloc[0] > 0.95


def test_tstr_single_class_gives_nan_with_note(cancer):
    train, test = cancer
    one_class = train[train['label'] == 'benign']
    table = tstr_scores(
        one_class, test, 'label', CANCER_CAT, CANCER_NUM, categories=CANCER_CATEGORIES,
        classifiers=FAST,
    )
    assert table[['roc_auc', 'pr_auc']].isna().all().all()
    assert table['note'].iloc[:-1].str.contains('class').all()


def test_tstr_categories_default_to_union_and_unknowns_are_ignored(cancer):
    train, test = cancer
    test = test.copy()
    test.loc[:9, 'size'] = 'unseen'  # appears only in the test table
    test.loc[10:19, 'size'] = np.nan
    table = tstr_scores(train, test, 'label', CANCER_CAT, CANCER_NUM, classifiers=FAST)
    assert table.attrs['classes'] == ['benign', 'malignant']  # sorted union
    assert table['roc_auc'].iloc[:-1].gt(0.8).all()


def test_tstr_multiclass_f1_and_missing_class():
    from sklearn.datasets import load_wine

    data = load_wine(as_frame=True)
    frame = data.data.copy()
    frame['cultivar'] = np.array(['c0', 'c1', 'c2'])[data.target]
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    train, test = frame.iloc[:120], frame.iloc[120:]
    numeric = list(data.data.columns)
    args = dict(
        target_column='cultivar', categorical_columns=[], numerical_columns=numeric,
        categories={'cultivar': ['c0', 'c1', 'c2']},
    )
    good = tstr_scores(train, test, classifiers=FAST, **args)
    assert list(good.columns) == ['classifier', 'f1_weighted', 'accuracy', 'fit_seconds', 'note']
    assert good.attrs['task'] == 'multiclass'
    assert (good['f1_weighted'] > 0.8).all()

    bad = tstr_scores(_shuffled_target(train, 'cultivar'), test, classifiers=FAST, **args)
    assert bad['f1_weighted'].iloc[-1] < 0.6

    # a class absent from the synthetic data must not break label handling (XGBoost
    # needs contiguous labels)
    two_classes = train[train['cultivar'] != 'c1']
    names = ['LogisticRegression']
    try:
        import xgboost  # noqa: F401

        names.append('XGBClassifier')
    except ImportError:
        pass
    partial = tstr_scores(two_classes, test, classifiers=names, **args)
    assert partial['f1_weighted'].iloc[:-1].notna().all()
    assert (partial['f1_weighted'].iloc[:-1] < good['f1_weighted'].max()).all()


def test_default_classifiers_are_the_papers_twelve(monkeypatch):
    assert len(DEFAULT_CLASSIFIERS) == 12
    assert len(set(DEFAULT_CLASSIFIERS)) == 12
    built = make_classifiers(random_state=3)
    try:
        import xgboost  # noqa: F401
    except ImportError:
        assert 'XGBClassifier' not in built
    else:
        assert list(built) == list(DEFAULT_CLASSIFIERS)

    assert built['LogisticRegression'].max_iter == 1000
    assert built['RandomForestClassifier'].n_estimators == 100
    assert built['MLPClassifier'].hidden_layer_sizes == (100,)
    assert built['DecisionTreeClassifier'].random_state == 3
    assert all(not hasattr(est, 'classes_') for est in built.values())  # not fitted

    monkeypatch.setitem(sys.modules, 'xgboost', None)  # import xgboost -> ImportError
    with pytest.warns(UserWarning, match='xgboost'):
        without = make_classifiers()
    assert list(without) == [n for n in DEFAULT_CLASSIFIERS if n != 'XGBClassifier']

    with pytest.raises(ValueError, match='Unknown classifier'):
        make_classifiers(['NotAClassifier'])


def test_tstr_accepts_estimator_instances(cancer):
    from sklearn.naive_bayes import GaussianNB

    train, test = cancer
    table = tstr_scores(
        train, test, 'label', CANCER_CAT, CANCER_NUM, categories=CANCER_CATEGORIES,
        classifiers={'nb': GaussianNB()},
    )
    assert list(table['classifier']) == ['nb', 'mean']
    assert table['roc_auc'].iloc[0] > 0.8


# --------------------------------------------------------------------------- marginal TV
@pytest.fixture(scope='module')
def dependent_table():
    rng = np.random.default_rng(0)
    n = 400
    a = rng.choice(['p', 'q', 'r'], n)
    b = np.where(a == 'p', 'x', np.where(a == 'q', 'y', 'z'))  # b is a function of a
    x = (a == 'p') * 5.0 + rng.normal(0.0, 0.5, n)
    c = rng.choice(['u', 'v', None], n)
    return pd.DataFrame({'a': a, 'b': b, 'x': x, 'c': c})


BINS = {'x': public_bin_edges((-2.0, 7.0), n_bins=9)}


def test_marginal_tv_identity_and_independent_shuffle(dependent_table):
    columns = ['a', 'b', 'x', 'c']
    assert marginal_tv(dependent_table, dependent_table, columns, alpha=3, bins=BINS) == 0.0
    assert marginal_tv(dependent_table, dependent_table, columns, alpha=1, bins=BINS) == 0.0

    shuffled = _shuffle_columns_independently(dependent_table)
    # 1-way marginals are untouched by shuffling, joint ones are not
    assert marginal_tv(dependent_table, shuffled, columns, alpha=1, bins=BINS) == 0.0
    tv2 = marginal_tv(dependent_table, shuffled, columns, alpha=2, bins=BINS)
    tv3 = marginal_tv(dependent_table, shuffled, columns, alpha=3, bins=BINS)
    assert 0.2 < tv2 <= 1.0
    assert 0.2 < tv3 <= 1.0

    per_subset = marginal_tv_per_subset(dependent_table, shuffled, columns, alpha=2, bins=BINS)
    assert len(per_subset) == 6
    assert per_subset[('a', 'b')] > 0.4  # the deterministic pair
    assert np.mean(list(per_subset.values())) == pytest.approx(tv2)
    assert all(0.0 <= v <= 1.0 for v in per_subset.values())


def test_marginal_tv_bounds_and_disjoint_support():
    real = pd.DataFrame({'a': ['x'] * 10, 'b': ['y'] * 10})
    synthetic = pd.DataFrame({'a': ['z'] * 7, 'b': ['y'] * 7})
    assert marginal_tv(real, synthetic, ['a', 'b'], alpha=2) == pytest.approx(1.0)
    half = pd.DataFrame({'a': ['x', 'z'], 'b': ['y', 'y']})
    assert marginal_tv(real, half, ['a', 'b'], alpha=2) == pytest.approx(0.5)


def test_marginal_tv_requires_explicit_edges_for_numeric(dependent_table):
    with pytest.raises(ValueError, match='public_bin_edges'):
        marginal_tv(dependent_table, dependent_table, ['a', 'x'], alpha=2)
    with pytest.raises(ValueError, match='strictly increasing'):
        marginal_tv(dependent_table, dependent_table, ['a', 'x'], alpha=2, bins={'x': [3, 1]})
    with pytest.raises(ValueError, match='alpha'):
        marginal_tv(dependent_table, dependent_table, ['a', 'b'], alpha=3)
    # integer-coded categories can be declared categorical instead of binned
    codes = pd.DataFrame({'k': [1, 2, 2, 3], 'a': list('ppqq')})
    assert marginal_tv(codes, codes, ['k', 'a'], alpha=2, categorical=['k']) == 0.0


def test_marginal_tv_clips_to_end_bins_and_counts_nan():
    edges = public_bin_edges((0.0, 10.0), n_bins=5)
    real = pd.DataFrame({'x': [9.5, 9.9, 0.1, 0.2], 'c': ['a', 'a', 'b', 'b']})
    far = pd.DataFrame({'x': [1e6, 50.0, -1e6, -3.0], 'c': ['a', 'a', 'b', 'b']})
    # out-of-range values land in the end bins, so the histograms coincide
    assert marginal_tv(real, far, ['x', 'c'], alpha=2, bins={'x': edges}) == 0.0

    with_nan = real.assign(x=[np.nan, 9.9, 0.1, 0.2])
    assert marginal_tv(real, with_nan, ['x'], alpha=1, bins={'x': edges}) == pytest.approx(0.25)
    cat_nan = real.assign(c=[None, 'a', 'b', 'b'])
    assert marginal_tv(real, cat_nan, ['c'], alpha=1) == pytest.approx(0.25)
    assert marginal_tv(cat_nan, cat_nan, ['c'], alpha=1) == 0.0


def test_marginal_tv_max_subsets_is_seeded(dependent_table):
    columns = ['a', 'b', 'x', 'c']
    shuffled = _shuffle_columns_independently(dependent_table)
    first = marginal_tv_per_subset(
        dependent_table, shuffled, columns, alpha=2, bins=BINS, max_subsets=3, random_state=5
    )
    again = marginal_tv_per_subset(
        dependent_table, shuffled, columns, alpha=2, bins=BINS, max_subsets=3, random_state=5
    )
    assert len(first) == 3
    assert first == again


def test_public_bin_edges():
    edges = public_bin_edges((0, 100), n_bins=4)
    np.testing.assert_allclose(edges, [0, 25, 50, 75, 100])
    many = public_bin_edges({'a': (0, 1), 'b': (-5, 5)}, n_bins=10)
    assert set(many) == {'a', 'b'}
    assert len(many['b']) == 11
    assert len(public_bin_edges((3, 3))) == 2
    with pytest.raises(ValueError):
        public_bin_edges((5, 1))
    with pytest.raises(ValueError):
        public_bin_edges((0, 1), n_bins=0)


# --------------------------------------------------------------------------- evaluate
def _student_bounds(metadata):
    table = metadata['tables']['student_placements']['columns']
    bounds = {c: (0.0, 100.0) for c in table if c.endswith('_perc')}
    bounds.update({
        'salary': (0.0, 1e6),
        'duration': (0.0, 12.0),
        'experience_years': (0.0, 10.0),
        'start_date': (pd.Timestamp('2019-01-01'), pd.Timestamp('2021-12-31')),
        'end_date': (pd.Timestamp('2019-01-01'), pd.Timestamp('2021-12-31')),
    })
    return bounds


def test_evaluate_with_holdout(student):
    from sdv.metadata import Metadata

    real, metadata = student
    train, test = real.iloc[:150].reset_index(drop=True), real.iloc[150:].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        sdv_metadata = Metadata.load_from_dict(metadata)

    good = evaluate(
        train, train, sdv_metadata, target_column='placed', real_test=test,
        bounds=_student_bounds(metadata), alphas=(2, 3), classifiers=FAST,
    )
    for key in (
        'quality', 'diagnostic', 'column_shapes', 'column_pair_trends', 'tstr_roc_auc',
        'tstr_pr_auc', 'tstr_table', 'tstr_real_roc_auc', 'tstr_real_table', 'tv_alpha2',
        'tv_alpha3',
    ):
        assert key in good, key
    assert 'student_id' not in good['tv_columns']
    assert {'salary', 'start_date', 'placed'} <= set(good['tv_columns'])
    # placed is recoverable from the missingness of salary -> near perfect utility
    assert good['tstr_roc_auc'] > 0.9
    assert good['tstr_real_roc_auc'] == pytest.approx(good['tstr_roc_auc'])
    assert 0.0 <= good['tv_alpha2'] <= good['tv_alpha3'] <= 1.0

    bad_synthetic = _shuffle_columns_independently(train)
    bad = evaluate(
        train, bad_synthetic, sdv_metadata, target_column='placed', real_test=test,
        bounds=_student_bounds(metadata), alphas=(2,), classifiers=FAST,
    )
    assert bad['tstr_roc_auc'] < 0.7 < good['tstr_roc_auc']
    assert bad['tv_alpha2'] > good['tv_alpha2']
    assert bad['column_pair_trends'] < good['column_pair_trends']


def test_evaluate_without_holdout_or_bounds(student):
    real, metadata = student
    with pytest.warns(UserWarning, match='no public bounds'):
        result = evaluate(real, real, metadata, alphas=(2,))
    assert 'tstr_table' not in result and 'tstr_real_table' not in result
    assert result['quality'] > 0.99
    assert result['tv_alpha2'] == 0.0
    assert 'salary' not in result['tv_columns']
    assert 'gender' in result['tv_columns']


def test_evaluate_multiclass_keys(student):
    real, metadata = student
    result = evaluate(
        real, _shuffled_target(real, 'degree_type'), metadata, target_column='degree_type',
        bounds='real', alphas=(), classifiers=['DecisionTreeClassifier'],
    )
    assert 'tstr_f1' in result and 'tstr_accuracy' in result
    assert 'tstr_roc_auc' not in result
    assert 'tstr_real_table' not in result


@pytest.mark.slow
def test_evaluation_importable_without_xgboost_and_matplotlib():
    code = (
        "import sys; sys.modules['xgboost'] = None; sys.modules['matplotlib'] = None; "
        'import sdv_dpkme.evaluation as e; print(len(e.DEFAULT_CLASSIFIERS))'
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, '-c', code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == '12'


# --------------------------------------------------------------------------- plots
def test_plot_results_writes_png(tmp_path):
    df = pd.DataFrame({
        'epsilon': [0.1, 0.1, 1.0, 1.0, 10.0, 10.0] * 2,
        'score': [0.5, 0.55, 0.6, 0.62, 0.8, 0.79, 0.4, 0.45, 0.5, 0.52, 0.7, 0.71],
        'method': ['dphp'] * 6 + ['dpmerf'] * 6,
    })
    path = plot_results(df, 'epsilon', 'score', 'method', tmp_path / 'sub' / 'plot.png')
    data = Path(path).read_bytes()
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    assert len(data) > 1000

    single = plot_results(df, 'epsilon', 'score', None, tmp_path / 'single.png')
    assert Path(single).exists()
    with pytest.raises(ValueError):
        plot_results(df, 'epsilon', 'nope', 'method', tmp_path / 'bad.png')
