import numpy as np
import pandas as pd
import pytest

from sdv_dpkme.domain import (
    DomainError,
    DPCategoricalTransformer,
    DPDatetimeTransformer,
    DPNumericalTransformer,
    build_domains,
    strip_data_derived,
)


def _fit(transformer, values, name='c'):
    frame = pd.DataFrame({name: values})
    transformer.fit(frame, name)
    return transformer, transformer.transform(frame)


def test_numerical_clips_scales_and_round_trips():
    t, out = _fit(DPNumericalTransformer(0, 10, integer=True), [0, 5, 10, -3, 40])
    assert list(out.columns) == ['c']
    assert out['c'].tolist() == [0, 0.5, 1, 0, 1]
    back = t.reverse_transform(out)
    assert back['c'].tolist() == [0, 5, 10, 0, 10]


def test_numerical_nullable_models_missingness_and_otherwise_errors():
    t, out = _fit(DPNumericalTransformer(0, 10, nullable=True), [1.0, np.nan])
    assert out['c.is_null'].tolist() == [0, 1] and out['c'].tolist() == [0.1, 0.5]
    assert np.isnan(t.reverse_transform(out)['c'].iloc[1])
    with pytest.raises(ValueError, match='nullable_columns'):
        _fit(DPNumericalTransformer(0, 10), [1.0, np.nan])


def test_numerical_rejects_non_numbers():
    with pytest.raises(ValueError, match="'c' is numerical"):
        _fit(DPNumericalTransformer(0, 10), ['1', 'ten'])


def test_categorical_one_hot_with_out_of_domain_bucket():
    with pytest.warns(UserWarning, match='out-of-domain'):
        t, out = _fit(DPCategoricalTransformer(['a', 'b'], nullable=True), ['a', 'b', None, 'zz'])
    assert out.to_numpy().argmax(1).tolist() == [0, 1, 2, 3]
    assert (out.sum(1) == 1).all()
    back = t.reverse_transform(out)['c'].tolist()
    assert back[:2] == ['a', 'b'] and pd.isna(back[2]) and pd.isna(back[3])
    with pytest.raises(ValueError, match='nullable_columns'):
        _fit(DPCategoricalTransformer(['a']), ['a', None])


def test_datetime_round_trip_with_format():
    t, out = _fit(DPDatetimeTransformer(pd.Timestamp('2020-01-01').value,
                                        pd.Timestamp('2020-12-31').value, '%Y-%m-%d'),
                  ['2020-01-01', '2020-07-01', '2025-01-01'])
    assert out['c'].between(0, 1).all() and out['c'].iloc[2] == 1
    assert t.reverse_transform(out)['c'].tolist() == ['2020-01-01', '2020-07-01', '2020-12-31']


def test_seeds_do_not_depend_on_the_rows():
    a, _ = _fit(DPNumericalTransformer(0, 10), [1, 2, 3, 4, 5])
    b, _ = _fit(DPNumericalTransformer(0, 10), [9, 8, 7, 6, 5])
    assert a.random_seed == b.random_seed
    ra, rb = a.random_states['transform'].get_state(), b.random_states['transform'].get_state()
    assert (ra[1] == rb[1]).all()


def test_build_domains_from_declarations_only():
    meta = {'x': {'sdtype': 'numerical', 'range_min': 0, 'range_max': 5},
            'c': {'sdtype': 'categorical', 'range_values': ['p', 'q']},
            'b': {'sdtype': 'boolean'}, 'o': {'sdtype': 'ordinal', 'order': ['lo', 'hi']},
            'i': {'sdtype': 'id'}}
    with pytest.raises(DomainError) as err:
        build_domains(meta, {}, {}, metadata_is_public=False)
    assert "'x'" in str(err.value) and "'c'" in str(err.value) and "'o'" not in str(err.value)
    domains = build_domains(meta, {}, {}, metadata_is_public=True)
    assert (domains['x'].low, domains['x'].high) == (0, 5)
    assert domains['c'].categories == ['p', 'q'] and domains['b'].categories == [False, True]
    assert 'i' not in domains
    assert strip_data_derived(meta['x']) == {'sdtype': 'numerical'}


@pytest.mark.parametrize('bounds,cats', [
    ({'x': (5, 5)}, {'c': ['p']}),
    ({'x': (0, float('inf'))}, {'c': ['p']}),
    ({'x': ('a', 'b')}, {'c': ['p']}),
    ({'x': (0, 1)}, {'c': 'p'}),
    ({'x': (0, 1)}, {'c': ['p', 'p']}),
    ({'x': (0, 1)}, {'c': ['p', None]}),
    ({'x': (0, 1), 'nope': (0, 1)}, {'c': ['p']}),
])
def test_invalid_declarations(bounds, cats):
    meta = {'x': {'sdtype': 'numerical'}, 'c': {'sdtype': 'categorical'}}
    with pytest.raises(DomainError):
        build_domains(meta, bounds, cats, metadata_is_public=False)


def test_discovered_columns_absorb_missing_values_instead_of_raising():
    # an error would tell whoever sees the fit fail that a missing value exists
    t, out = _fit(DPNumericalTransformer(0, 10, missing='absorb'), [1.0, np.nan])
    assert list(out.columns) == ['c'] and out['c'].tolist() == [0.1, 0.5]
    with pytest.warns(UserWarning, match='out-of-domain'):
        t, out = _fit(DPCategoricalTransformer(['a'], missing='absorb'), ['a', None])
    assert out.to_numpy().argmax(1).tolist() == [0, 1]  # the out-of-domain bucket
    t, out = _fit(DPDatetimeTransformer(0, 10**18, missing='absorb'), ['2001-01-01', None])
    assert out['c'].iloc[1] == 0.5
    with pytest.raises(ValueError, match='missing must be'):
        _fit(DPNumericalTransformer(0, 10, missing='drop'), [1.0])


def test_transformer_for_discovered_domain():
    from sdv_dpkme.domain import ColumnDomain, transformer_for

    dom = ColumnDomain('c', 'categorical', categories=['a'], discovered=True)
    assert transformer_for(dom).missing == 'absorb'
    dom.discovered = False
    assert transformer_for(dom).missing == 'error'
