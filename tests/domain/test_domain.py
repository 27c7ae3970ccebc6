import warnings

import numpy as np
import pandas as pd
import pytest

from sdv_dpkme.domain import (
    DomainError,
    DPCategoricalTransformer,
    DPDatetimeTransformer,
    DPDiscreteTransformer,
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
    t, out = _fit(DPCategoricalTransformer(['a'], missing='absorb'), ['a', None])
    assert out.to_numpy().argmax(1).tolist() == [0, 1]  # the out-of-domain bucket
    t, out = _fit(DPDatetimeTransformer(0, 10**18, missing='absorb'), ['2001-01-01', None])
    assert out['c'].iloc[1] == 0.5
    with pytest.raises(ValueError, match='missing must be'):
        _fit(DPNumericalTransformer(0, 10, missing='drop'), [1.0])


@pytest.mark.parametrize('make,values', [
    (lambda m: DPNumericalTransformer(0, 10, missing=m), [1.0, 50.0]),
    (lambda m: DPDiscreteTransformer(0, 10, missing=m), [1.0, -5.0]),
    (lambda m: DPCategoricalTransformer(['a'], missing=m), ['a', 'CANARY']),
    (lambda m: DPDatetimeTransformer(0, 10**17, missing=m), ['1971-01-01', '2100-01-01']),
])
def test_discovered_columns_never_say_a_value_lies_outside(make, values):
    # finding 9: on a DP-discovered domain, 'clipped' / 'out-of-domain' would be the one bit
    # (some value lies outside the released domain) that discovery promises not to reveal
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        _fit(make('absorb'), values)
    with pytest.warns(UserWarning, match='clipped|out-of-domain'):  # declared domains do warn
        _fit(make('error'), values)


def test_transformer_for_discovered_domain():
    from sdv_dpkme.domain import ColumnDomain, transformer_for

    dom = ColumnDomain('c', 'categorical', categories=['a'], discovered=True)
    assert transformer_for(dom).missing == 'absorb'
    dom.discovered = False
    assert transformer_for(dom).missing == 'error'


def test_date_strings_are_parsed_one_by_one_not_by_a_format_guessed_from_row_0():
    # pandas guesses one format from the first value and applies it to all rows: replacing row 0
    # ('01/03/2020' -> '13/03/2020') then re-read every other row day-first, moving the whole
    # embedding by more than one row's worth (measured: sum kernel 0.0263 > 2/n = 0.025)
    rows = ['02/04/2020', '11/05/2021', '07/12/2020']
    low, high = pd.Timestamp('2019-01-01').value, pd.Timestamp('2022-01-01').value
    encoded = [_fit(DPDatetimeTransformer(low, high), [first, *rows])[1]['c'].to_numpy()
               for first in ('01/03/2020', '13/03/2020')]
    assert np.array_equal(encoded[0][1:], encoded[1][1:])
    assert encoded[0][0] != encoded[1][0]
    # a declared format reads every value with it
    t, out = _fit(DPDatetimeTransformer(low, high, datetime_format='%d/%m/%Y'), ['02/04/2020'])
    expected = (pd.Timestamp('2020-04-02').value - low) / (high - low)
    assert out['c'].iloc[0] == pytest.approx(expected)
