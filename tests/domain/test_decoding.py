"""Issue 42 item 7: the column-local fit and transform of ``DPHyperTransformer`` give what RDT's
own whole-frame passes give (the same frame, the same fitted state, the same warnings and
errors), and hand anything they do not cover back to RDT. No timings here:
``benchmarks/studies/fit_time.py`` measures them."""

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
import rdt

from sdv_dpkme.domain.decoding import DPHyperTransformer
from sdv_dpkme.domain.transformers import DPCategoricalTransformer
from tests.conftest import (
    BOUNDS,
    CATEGORIES,
    FAST_BY_CLASS,
    SYNTHESIZERS,
    make,
    make_metadata,
    make_table,
)


def fitted_hyper():
    """The fitted processor's transformers of a small fit (ours, id and PII generators)."""
    cls = next(iter(SYNTHESIZERS))
    synth = make(cls, make_metadata(), epsilon=1.0, known_min_max_values=BOUNDS,
                 known_categories=CATEGORIES, random_state=0, target_column='label',
                 domain={'nullable_columns': ['income']}, **FAST_BY_CLASS[cls.__name__][0])
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    hyper = synth._data_processor._hyper_transformer
    assert type(hyper) is DPHyperTransformer
    return hyper


def run(method, hyper, *args):
    """``method(hyper, *args)`` -> (result or the error's type and text, warning texts)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        try:
            result = method(hyper, *args)
        except Exception as err:  # noqa: BLE001 -- compared between the two paths
            result = (type(err), str(err))
    return result, [str(w.message) for w in caught]


def state(hyper):
    return (hyper._input_columns, hyper._output_columns, sorted(map(str, hyper._fitted_fields)),
            [(type(t).__name__, t.columns, t.output_columns, t.random_states['transform']
              .get_state()[1].tolist()) for t in hyper._transformers_sequence])


def both(table, subset=False):
    """Fit and transform ``table`` with the column-local passes and with RDT's own."""
    base = fitted_hyper()
    fast, slow = copy.deepcopy(base), copy.deepcopy(base)
    out = {}
    for name, hyper, fit, transform in (
        ('fast', fast, DPHyperTransformer.fit, DPHyperTransformer._transform),
        ('slow', slow, rdt.HyperTransformer.fit, rdt.HyperTransformer._transform),
    ):
        fitted = run(fit, hyper, table)
        data = table.drop(columns=['when']) if subset else table
        out[name] = (fitted, run(transform, hyper, data, not subset), state(hyper))
    return out['fast'], out['slow']


def assert_same(fast, slow):
    (fit_f, (frame_f, warn_f), state_f), (fit_s, (frame_s, warn_s), state_s) = fast, slow
    assert fit_f == fit_s and warn_f == warn_s and state_f == state_s
    if isinstance(frame_s, pd.DataFrame):
        pd.testing.assert_frame_equal(frame_f, frame_s)
        assert frame_f.to_numpy().tobytes() == frame_s.to_numpy().tobytes()
        assert frame_f._mgr.nblocks == 1  # one float block, as RDT's final reindex leaves
    else:
        assert frame_f == frame_s


def test_column_local_fit_and_transform_equal_rdts_issue42():
    table = make_table(300, seed=4)
    table.loc[:5, 'age'] = 200  # clipped, with RDT's warning
    table.loc[7, 'city'] = 'Paris'  # out of the public categories: its bucket and warning
    assert_same(*both(table))


def test_duplicated_index_and_a_subset_are_transformed_as_rdt_does_issue42():
    table = make_table(120, seed=5)
    table.index = np.repeat(np.arange(60), 2)
    assert_same(*both(table))
    assert_same(*both(make_table(80, seed=6), subset=True))  # transform_subset's kept columns


def test_errors_of_a_transform_are_rdts_issue42():
    table = make_table(60, seed=7)
    table['age'] = table['age'].astype(object)
    table.loc[3, 'age'] = 'forty'  # not a number: the transformer's error, from both paths
    fast, slow = both(table)
    assert_same(fast, slow)
    error = fast[0][0]  # raised by the fit's own transform, as in RDT
    assert isinstance(error, tuple) and 'not numbers' in error[1]


def test_an_output_name_rdt_must_rename_goes_through_rdt_issue42():
    table = make_table(50, seed=8).rename(columns={'email': 'city.value0'})
    table = table[[c for c in table.columns if c != 'city.value0'] + ['city.value0']]
    base = fitted_hyper()
    config = base.get_config()
    for key in ('sdtypes', 'transformers'):
        config[key]['city.value0'] = config[key].pop('email')
    fast, slow = DPHyperTransformer(), rdt.HyperTransformer()
    fast.set_config(copy.deepcopy(config))
    slow.set_config(copy.deepcopy(config))
    results = []
    for hyper in (fast, slow):
        fitted = run(type(hyper).fit, hyper, table)
        results.append((fitted, run(type(hyper)._transform, hyper, table, True), state(hyper)))
    assert any('#' in c for c in results[1][2][1])  # RDT renamed an output
    assert_same(*results)


@pytest.mark.parametrize('categories, values', [
    (['a', 'b', 'c'], ['b', 'a', 'zz', 'c', 'b']),  # strings: the hash join
    (['a', 'b', 'a'], ['a', 'b', 'x']),  # a repeated category: the later one wins
    (['a', 1, 'b'], ['a', 'b', '1', 'q']),  # a number among the categories
    (['a', 'b'], ['a', None, np.nan, 'b', pd.NA]),  # missing values among strings
    (['a', None, 'b'], ['a', None, 'b', 'c']),  # a missing category: looked up one by one
    ([1, 2, True], [1, 2, True, 1.0, 0, 'x']),  # not strings: looked up one by one
    (['a', 'b'], [np.str_('a'), 'b', np.str_('c')]),
])
def test_category_codes_equal_one_lookup_per_value_issue42(categories, values):
    transformer = DPCategoricalTransformer(categories, nullable=True)
    transformer.columns = ['c']
    lookup = {category: i for i, category in enumerate(categories)}
    other = len(transformer.buckets) - 1
    expected = np.array([lookup.get(v, other) for v in values])
    expected[pd.isna(pd.Series(values, dtype=object)).to_numpy()] = len(categories)
    codes = transformer._codes(pd.Series(values, dtype=object))
    assert codes.dtype == np.int64 and codes.tolist() == expected.tolist()
