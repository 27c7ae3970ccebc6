"""The default encoding rule: a numerical column's scale from its declared domain alone."""

import pickle

import numpy as np
import pytest

from sdv_dpkme import DPHPSynthesizer
from sdv_dpkme.domain import DPDiscreteTransformer, DPNumericalTransformer
from sdv_dpkme.domain.scales import DEFAULT_DISCRETE_VALUES, DEFAULT_LOG_RATIO, default_scale
from sdv_dpkme.domain.spec import ColumnDomain, merge_declarations, resolve_domains
from tests.conftest import make, FAST, make_metadata, make_table


def _scale(low, high, integer=False):
    return default_scale(ColumnDomain('x', 'numerical', low=low, high=high, integer=integer))


def test_rule_reads_span_sign_integerness_and_value_count():
    assert _scale(1, 16, integer=True) == 'discrete'  # educational-num
    assert _scale(1, 99, integer=True) == 'discrete'  # hours-per-week
    assert _scale(1, DEFAULT_DISCRETE_VALUES, integer=True) == 'discrete'
    assert _scale(1, DEFAULT_DISCRETE_VALUES + 1, integer=True) == 'linear'  # one value too many
    assert _scale(1, 16) == 'linear'  # integer-ness is declared, never guessed from the bounds
    assert _scale(0.5, 16.5, integer=True) == 'linear'  # no integer bounds, no one-hot
    assert _scale(0, 99_999) == 'log'  # capital-gain
    assert _scale(0, 99_999, integer=True) == 'log'
    assert _scale(0, DEFAULT_LOG_RATIO) == 'log'
    assert _scale(0, DEFAULT_LOG_RATIO - 1) == 'linear'
    assert _scale(10_000, 1_500_000) == 'linear'  # fnlwgt: 150 times its low
    assert _scale(1_000, 10_000_000) == 'log'
    assert _scale(-1, 99_999) == 'linear'  # a log scale needs low >= 0
    assert _scale(17, 90) == 'linear'
    assert default_scale(ColumnDomain('d', 'datetime', low=0.0, high=1e18)) is None


META = {'gain': {'sdtype': 'numerical'}, 'hours': {'sdtype': 'numerical'},
        'age': {'sdtype': 'numerical'}, 'label': {'sdtype': 'categorical'}}
PLAIN = dict(known_min_max_values={'gain': (0, 99_999), 'hours': (1, 99), 'age': (17, 90)},
             known_categories={'label': ['a', 'b']})


def _resolve(spec=None, **kwargs):
    declared, _, _ = resolve_domains(META, merge_declarations(**{**PLAIN, **kwargs},
                                                              domain=spec), False)
    return {c: (d.scale, d.scale_by_rule) for c, d in declared.items() if d.sdtype == 'numerical'}


def test_plain_declaration_gets_the_rule_and_explicit_settings_win():
    assert _resolve() == {'gain': ('log', True), 'hours': ('linear', True),
                          'age': ('linear', True)}
    spec = {'integer_columns': ['hours', 'age']}
    assert _resolve(spec) == {'gain': ('log', True), 'hours': ('discrete', True),
                              'age': ('discrete', True)}
    spec = {'integer_columns': ['hours', 'age'],
            'columns': {'gain': {'scale': 'linear'}, 'hours': {'scale': 'log'},
                        'age': {'scale': 'linear'}}}
    assert _resolve(spec) == {'gain': ('linear', False), 'hours': ('log', False),
                              'age': ('linear', False)}


def _encoding(synth):
    """Transformer class and scale of each numerical column of a fitted synthesizer."""
    fields = synth._data_processor._hyper_transformer.field_transformers
    return {c: (type(fields[c]).__name__, getattr(fields[c], 'scale', None))
            for c in ('age', 'income')}


@pytest.mark.slow
def test_encoding_is_decided_before_any_row_and_is_the_same_for_any_table(monkeypatch):
    spec = {'integer_columns': ['age']}

    def build():
        return make(DPHPSynthesizer, make_metadata(), epsilon=1.0, known_min_max_values={
            'age': (18, 90), 'income': (0, 200_000), 'when': ('2020-01-01', '2021-12-31')},
            known_categories={'city': ['Lima', 'Oslo', 'Rome'], 'label': ['no', 'yes']},
            domain=spec, random_state=0, **{**FAST, 'steps': 2})

    # at construction no row exists: the encoding is already settled there
    synth = build()
    plan = {c: synth._domains[c].scale for c in ('age', 'income')}
    assert plan == {'age': 'discrete', 'income': 'log'}

    # the rule is never handed a row: it would fail on anything but a ColumnDomain
    seen = []

    def spy(domain):
        assert isinstance(domain, ColumnDomain)
        seen.append(domain.name)
        return default_scale(domain)

    monkeypatch.setattr('sdv_dpkme.domain.spec.default_scale', spy)
    # two tables as different as possible, and an empty one: the same encoding
    skewed = make_table(seed=1)
    skewed['income'] = np.where(np.arange(len(skewed)) % 2, 0.0, 199_000.0)
    skewed['age'] = 18
    flat = make_table(seed=2)
    encodings = []
    for table in (skewed, flat):
        synth = build()
        synth.fit({'t': table})
        encodings.append(_encoding(synth))
    empty = make_table().iloc[:0]
    synth = build()
    synth.auto_assign_transformers({'t': empty})
    encodings.append(_encoding(synth))
    assert encodings[0] == encodings[1] == encodings[2] == {
        'age': ('DPDiscreteTransformer', None), 'income': ('DPNumericalTransformer', 'log')}
    assert set(seen) == {'age', 'income'}
    assert isinstance(synth._data_processor._hyper_transformer.field_transformers['age'],
                      DPDiscreteTransformer)
    assert isinstance(synth._data_processor._hyper_transformer.field_transformers['income'],
                      DPNumericalTransformer)


def test_rule_is_named_in_the_privacy_report():
    synth = make(DPHPSynthesizer, make_metadata(), epsilon=1.0, known_min_max_values={
        'age': (18, 90), 'income': (0, 200_000), 'when': ('2020-01-01', '2021-12-31')},
        known_categories={'city': ['Lima', 'Oslo', 'Rome'], 'label': ['no', 'yes']},
        random_state=0, **{**FAST, 'steps': 2})
    synth.fit({'t': make_table()})
    inputs = synth.get_privacy_report().public_inputs
    assert any("'income'" in line and 'log scale' in line and 'default rule' in line
               for line in inputs)
    assert not any("'age'" in line and 'default rule' in line for line in inputs)  # linear
    out = synth.sample(50)['t']
    assert out['income'].dropna().between(0, 200_000).all()


def test_domains_pickled_before_the_rule_read_as_declared():
    dom = ColumnDomain('x', 'numerical', low=0, high=99_999)
    state = dict(vars(dom))
    state.pop('scale_by_rule')  # as saved by the code before the rule
    old = ColumnDomain.__new__(ColumnDomain)
    old.__dict__.update(state)
    old = pickle.loads(pickle.dumps(old))
    assert old.scale is None and old.scale_by_rule is False
