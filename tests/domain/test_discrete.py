"""Integer columns declared 'discrete', modelled one-hot over their public values."""

import numpy as np
import pandas as pd
import pytest
from sdv.metadata import Metadata

from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer
from sdv_dpkme.domain import DPDiscreteTransformer, transformer_for
from sdv_dpkme.domain.spec import (
    MAX_DISCRETE_VALUES,
    ColumnDomain,
    DomainError,
    is_discrete,
    merge_declarations,
    resolve_domains,
)
from sdv_dpkme.domain.transformers import DPNumericalTransformer
from tests.conftest import make, FAST_BY_CLASS


def _dom(low, high, integer=True, scale=None):
    return ColumnDomain('x', 'numerical', low=low, high=high, integer=integer, scale=scale)


def test_only_a_declared_discrete_scale_makes_a_column_discrete():
    assert is_discrete(_dom(1, 16, scale='discrete'))
    assert is_discrete(_dom(17, 90, scale='discrete'))
    assert not is_discrete(_dom(1, 16))  # the default stays linear
    assert not is_discrete(_dom(1, 16, scale='linear'))
    assert not is_discrete(_dom(1, 16, integer=False, scale='discrete'))
    assert not is_discrete(_dom(0, MAX_DISCRETE_VALUES, scale='discrete'))  # one value too many
    assert isinstance(transformer_for(_dom(1, 16, scale='discrete')), DPDiscreteTransformer)
    assert type(transformer_for(_dom(1, 16))) is DPNumericalTransformer


def test_round_trip_clips_rounds_and_warns():
    t = DPDiscreteTransformer(1, 16)
    data = pd.DataFrame({'x': [1, 2, 16, 0, 40, 3.4, 7.6]})
    t.fit(data, 'x')
    with pytest.warns(UserWarning, match='clipped'):
        encoded = t.transform(data).to_numpy()
    assert encoded.shape == (7, 17)  # 16 values + the out-of-domain bucket
    np.testing.assert_array_equal(encoded.sum(1), 1)  # one-hot: norm 1 on every row
    assert encoded[:, -1].sum() == 0  # values are clipped, never out of domain
    back = t.reverse_transform(pd.DataFrame(encoded, columns=t.output_columns))['x']
    np.testing.assert_array_equal(back.to_numpy(), [1, 2, 16, 1, 16, 3, 8])


def test_state_does_not_depend_on_the_rows():
    states = []
    for values in ([1, 2, 3], [5, 5, 40]):
        t = DPDiscreteTransformer(1, 5)
        t.fit(pd.DataFrame({'x': values}), 'x')
        states.append({k: v for k, v in vars(t).items() if k != 'random_states'})
    assert states[0] == states[1]


def test_missing_values_need_a_nullable_declaration():
    data = pd.DataFrame({'x': [1.0, np.nan, 3.0]})
    strict = DPDiscreteTransformer(1, 5)
    strict.fit(data, 'x')
    with pytest.raises(ValueError, match="domain={'nullable_columns': \\[..., 'x'\\]}"):
        strict.transform(data)
    nullable = DPDiscreteTransformer(1, 5, nullable=True)
    nullable.fit(data, 'x')
    encoded = nullable.transform(data)
    back = nullable.reverse_transform(encoded)['x'].to_numpy()
    np.testing.assert_array_equal(np.isnan(back), [False, True, False])
    assert back[0] == 1 and back[2] == 3


def test_bad_bounds_and_declarations_are_clear_errors():
    with pytest.raises(ValueError, match='integer bounds'):
        DPDiscreteTransformer(0.5, 4)
    with pytest.raises(ValueError, match=f'at most {MAX_DISCRETE_VALUES}'):
        DPDiscreteTransformer(0, MAX_DISCRETE_VALUES)
    meta = {'x': {'sdtype': 'numerical'}, 'f': {'sdtype': 'numerical'}}
    spec = {'columns': {'x': {'min_value': 0, 'max_value': 10_000, 'scale': 'discrete',
                              'integer': True}}}
    with pytest.raises(DomainError, match='discrete scale'):
        resolve_domains(meta, merge_declarations(domain=spec), False)
    spec = {'columns': {'f': {'min_value': 0, 'max_value': 5, 'scale': 'discrete'}}}
    with pytest.raises(DomainError, match='integer numerical column'):
        resolve_domains(meta, merge_declarations(domain=spec), False)
    with pytest.raises(DomainError, match="'discrete'"):
        merge_declarations(domain={'columns': {'x': {'scale': 'ordinal'}}})


def _table(n=300, seed=0):
    rng = np.random.default_rng(seed)
    label = rng.choice(['a', 'b'], n)
    stars = np.where(label == 'a', rng.choice([1, 2], n), rng.choice([4, 5], n))
    return pd.DataFrame({'stars': stars, 'score': rng.uniform(0, 1, n), 'label': label})


def _metadata():
    return Metadata.load_from_dict({'tables': {'t': {'columns': {
        'stars': {'sdtype': 'numerical'},
        'score': {'sdtype': 'numerical'},
        'label': {'sdtype': 'categorical'},
    }}}})


@pytest.mark.parametrize('cls', [DPHPSynthesizer, DPMERFSynthesizer], ids=lambda c: c.__name__)
def test_synthesizers_model_a_discrete_column_as_categories(cls):
    fast = {k: v for k, v in FAST_BY_CLASS[cls.__name__][0].items() if k != 'nullable_columns'}
    domain = {'known_min_max_values': {'stars': (1, 5), 'score': (0, 1)},
              'known_categories': {'label': ['a', 'b']}, 'integer_columns': ['stars'],
              'columns': {'stars': {'scale': 'discrete'}}}
    synth = make(cls, _metadata(), epsilon=5.0, domain=domain, target_column='label', random_state=0,
                **{**fast, 'steps': 60})
    synth.fit({'t': _table()})
    blocks, _ = synth._layout(synth._data_processor.transform(_table(20)))
    kinds = {b.name: (b.kind, b.width) for b in blocks}
    assert kinds['stars'] == ('categorical', 6)  # 5 values + the out-of-domain bucket
    assert kinds['score'] == ('numeric', 1)
    out = synth.sample(400)['t']
    assert out['stars'].isin([1, 2, 3, 4, 5]).all()
    report = synth.get_privacy_report()
    assert any('one-hot over its integer values' in line for line in report.public_inputs)
