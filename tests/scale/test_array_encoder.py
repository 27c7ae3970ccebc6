"""The distributed pass's array encoder gives the data processor's encoding, bit for bit, with the
same warnings and errors, on extreme and out-of-domain inputs."""

import warnings

import numpy as np
import pandas as pd
import pytest

from sdv_dpkme.domain import DPDiscreteTransformer
from sdv_dpkme.domain.unit_box import unit_box
from sdv_dpkme.engines.row_encoding import ArrayEncoder
from tests.conftest import make_table
from tests.scale.test_fit_distributed import _synth

COLUMNS = ['pk', 'user', 'email', 'age', 'income', 'city', 'flag', 'when', 'label']


def _fitted(discrete_age):
    synth = _synth()
    if discrete_age:
        synth.update_transformers({'age': DPDiscreteTransformer(18, 90)})
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table(200)})
    processor = synth._data_processor
    encoded = list(processor.transform(make_table(5)).columns)
    return processor, encoded


def _extreme_rows():
    """Values at the float limits, out of range, missing where nullable, unseen categories."""
    big = 1e308
    return pd.DataFrame({
        'pk': np.arange(12),
        'user': [f'U{i}' for i in range(12)],
        'email': [f'a{i}@b.c' for i in range(12)],
        'age': [big, -big, np.inf, -np.inf, 17, 91, 18, 90, 45.5, 5e-324, -0.0, 89.999999],
        'income': [np.nan, big, -big, None, 0, 200_000, 2e5 + 1e-9, 5e-324, -1, 1e5, np.nan,
                   3.3],
        'city': ['Lima', 'Paris', '', 'lima', 'Rome', 'Oslo', 'Oslo ', 'Lima', 'Rome', 'Rome',
                 'x' * 1000, 'Oslo'],
        'flag': [True, False, 1, 0, 'x', True, 1.0, False, 2, True, False, True],
        'when': pd.to_datetime(['1677-09-22', '2262-04-11', '2019-12-31', '2022-01-01',
                                '2020-01-01', '2021-12-31', '2020-06-01', '2020-06-01',
                                '2020-06-01', '2020-06-01', '2020-06-01', '2020-06-01']),
        'label': ['yes', 'no', 'maybe', 'YES', 'no', 'yes', 'no ', 'no', 'no', 'yes', 'no', 'no'],
    })


def _encode_both(processor, encoded, raw):
    """(array encoder output, processor path output), each with its warnings' messages."""
    fast = ArrayEncoder.build(processor, COLUMNS, encoded)
    assert fast is not None  # the test must exercise the array path
    out = []
    for encode in (lambda: fast(raw), lambda: unit_box(processor.transform(raw)[encoded])):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            x = encode()
        out.append((x, [str(w.message) for w in caught]))
    return out


@pytest.mark.parametrize('discrete_age', [False, True], ids=['linear-age', 'discrete-age'])
def test_extreme_values_encode_bit_for_bit_as_the_processor(discrete_age):
    processor, encoded = _fitted(discrete_age)
    (fast, fast_warnings), (slow, slow_warnings) = _encode_both(processor, encoded,
                                                                _extreme_rows())
    assert fast.dtype == np.float64 and fast.shape == slow.shape == (12, len(encoded))
    np.testing.assert_array_equal(fast, slow)
    assert np.signbit(fast).tolist() == np.signbit(slow).tolist()  # -0.0 is not 0.0 bitwise
    assert fast_warnings == slow_warnings
    assert any('outside the public bounds' in w for w in fast_warnings)
    assert any('outside the public categories' in w for w in fast_warnings)
    # the extremes really are clipped into the box (so the test sees the clipping paths)
    assert ((fast >= 0) & (fast <= 1)).all()


@pytest.mark.parametrize('column, value, message', [
    ('age', np.nan, "'age' has missing values but was not declared nullable"),
    ('age', 'abc', "'age' is numerical but holds values that are not numbers"),
    ('city', None, "'city' has missing values but was not declared nullable"),
    ('when', 'not a date', "'when' holds values that are not dates"),
])
def test_bad_values_raise_the_processors_error(column, value, message):
    processor, encoded = _fitted(False)
    raw = _extreme_rows()
    raw[column] = raw[column].astype(object)
    raw.loc[3, column] = value
    fast = ArrayEncoder.build(processor, COLUMNS, encoded)
    with pytest.raises(ValueError, match=message) as fast_error:
        fast(raw)
    with pytest.raises(ValueError, match=message) as slow_error:
        processor.transform(raw)
    assert str(fast_error.value) == str(slow_error.value)


def test_a_processor_with_a_non_dp_transformer_keeps_its_own_transform():
    from rdt.transformers import FloatFormatter

    processor, encoded = _fitted(False)
    hyper = processor._hyper_transformer
    sequence = list(hyper._transformers_sequence)
    age = next(i for i, t in enumerate(sequence) if t.get_input_column() == 'age')
    other = FloatFormatter()
    other.columns, other.output_columns = ['age'], ['age']
    hyper._transformers_sequence = sequence[:age] + [other] + sequence[age + 1:]
    assert ArrayEncoder.build(processor, COLUMNS, encoded) is None
    hyper._transformers_sequence = sequence
    assert ArrayEncoder.build(processor, COLUMNS, encoded[:-1]) is None  # a column unwritten
