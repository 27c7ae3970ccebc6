"""One public domain spec per table: our format, SDV DayZ's parameter format, JSON files."""

import json

import pandas as pd
import pytest

from sdv_dpkme.datasets import load_adult_domain
from sdv_dpkme.domain import DomainError, build_domains, parse_domain_spec, resolve_domains
from sdv_dpkme.domain.spec import merge_declarations

META = {
    'age': {'sdtype': 'numerical', 'computer_representation': 'Int64'},
    'fee': {'sdtype': 'numerical'},
    'when': {'sdtype': 'datetime', 'datetime_format': '%Y-%m-%d'},
    'room': {'sdtype': 'categorical'},
    'vip': {'sdtype': 'boolean'},
    'email': {'sdtype': 'email', 'pii': True},
}

OURS = {'columns': {
    'age': {'min_value': 17, 'max_value': 90},
    'fee': {'min_value': 0, 'max_value': 50.5, 'num_decimal_digits': 2, 'nullable': True},
    'when': {'start_timestamp': '2020-01-01', 'end_timestamp': '2021-12-31'},
    'room': {'category_values': ['BASIC', 'DELUXE', 'SUITE']},
}}

DAYZ = {
    'DAYZ_SPEC_VERSION': 'V1',
    'tables': {'guests': {
        'num_rows': 658,
        'columns': {
            'email': {'missing_values_proportion': 0.0},
            'room': {'category_values': ['BASIC', 'DELUXE', 'SUITE'],
                     'missing_values_proportion': 0.0},
            'fee': {'num_decimal_digits': 2, 'min_value': 0.0, 'max_value': 46.64,
                    'missing_values_proportion': 0.076},
            'when': {'start_timestamp': '03 Jan 2020', 'end_timestamp': '05 Jan 2021',
                     'missing_values_proportion': 0.0},
            'age': {'min_value': 0, 'max_value': 120},
        },
    }},
    'relationships': [],
}


def test_our_format_declares_everything():
    domains = build_domains(META, None, None, False, domain=OURS)
    assert (domains['age'].low, domains['age'].high) == (17, 90) and domains['age'].integer
    assert domains['fee'].decimal_places == 2 and domains['fee'].nullable
    assert domains['room'].categories == ['BASIC', 'DELUXE', 'SUITE']
    assert pd.Timestamp(int(domains['when'].high)) == pd.Timestamp('2021-12-31')
    assert not any(d.discovered for d in domains.values())


def test_dayz_parameters_are_accepted_and_proportions_ignored(tmp_path):
    path = tmp_path / 'dayz_parameters.json'
    path.write_text(json.dumps(DAYZ))
    with pytest.warns(UserWarning, match='missing_values_proportion') as record:
        domains = build_domains(META, None, None, False, domain=str(path), table_name='guests')
    assert 'NOT public' in str(record[0].message) and 'num_rows' in str(record[0].message)
    assert (domains['fee'].low, domains['fee'].high) == (0.0, 46.64)
    assert not domains['fee'].nullable  # a proportion is a data statistic, not a declaration
    # DayZ writes timestamps in its own format; they still parse
    assert pd.Timestamp(int(domains['when'].low)) == pd.Timestamp('2020-01-03')


def test_bundled_domain_file_format_is_accepted():
    spec = load_adult_domain()
    declarations = parse_domain_spec(spec)
    assert tuple(declarations['age']['bounds']) == (17, 90)
    assert declarations['age']['integer'] is True
    assert declarations['income']['categories'] == ['<=50K', '>50K']
    assert declarations['capital-gain']['scale'] == 'log'
    # age pins the linear scale the default rule would turn one-hot; fnlwgt is left to the rule
    assert declarations['age']['scale'] == 'linear'
    assert 'scale' not in declarations['fnlwgt']
    # a round public bound, not the data's maximum (4356)
    assert tuple(declarations['capital-loss']['bounds']) == (0, 5000)


def test_missing_value_among_dayz_categories_declares_nullability():
    spec = {'columns': {'room': {'category_values': ['A', None]}}}
    assert parse_domain_spec(spec)['room'] == {'nullable': True, 'categories': ['A']}


def test_partial_spec_leaves_the_rest_to_discovery():
    spec = {'columns': {'age': {'min_value': 0, 'max_value': 120}}}
    declared, undeclared, hints = resolve_domains(META, merge_declarations(domain=spec), False)
    assert set(declared) == {'age', 'vip'}
    assert set(undeclared) == {'fee', 'when', 'room'}
    # finding 5: a format in (possibly detected) metadata is not public; a declared one is
    assert undeclared['when'].datetime_format is None
    _, public, _ = resolve_domains(META, merge_declarations(domain=spec), True)
    assert public['when'].datetime_format == '%Y-%m-%d'
    declared_format = {'columns': {'when': {'datetime_format': '%d/%m/%Y'}}}
    _, undeclared, _ = resolve_domains(META, merge_declarations(domain=declared_format), False)
    assert undeclared['when'].datetime_format == '%d/%m/%Y'
    assert len(hints) == 3


@pytest.mark.parametrize('spec,match', [
    ({'columns': {'age': {'min_value': 0}}}, 'both'),
    ({'columns': {'age': {'low': 0, 'high': 1}}}, 'Unknown keys'),
    ({'colums': {}}, 'Unknown keys'),
    ({'columns': {'nope': {'min_value': 0, 'max_value': 1}}}, 'unknown columns'),
    ({'columns': {'room': {'category_values': ['A'], 'nullable': 'yes'}}}, 'true/false'),
    ({'tables': {'a': {'columns': {}}, 'b': {'columns': {}}}}, "'x'"),
    (42, 'dict or a path'),
])
def test_bad_specs_get_clear_errors(spec, match):
    with pytest.raises(DomainError, match=match):
        merged = merge_declarations(domain=spec, table_name='x')
        resolve_domains(META, merged, False)


def test_a_fact_declared_twice_differently_fails():
    with pytest.raises(DomainError, match='declare each fact once'):
        merge_declarations(known_min_max_values={'age': (0, 100)}, domain=OURS)
    same = merge_declarations(known_min_max_values={'age': (17, 90)}, domain=OURS)
    assert list(same['age']['bounds']) == [17, 90]


def test_unreadable_spec_file(tmp_path):
    bad = tmp_path / 'bad.json'
    bad.write_text('{not json')
    with pytest.raises(DomainError, match='not JSON'):
        parse_domain_spec(str(bad))
    with pytest.raises(DomainError, match='Cannot read'):
        parse_domain_spec(str(tmp_path / 'missing.json'))


def test_missing_domain_message_offers_discovery():
    with pytest.raises(DomainError, match='domain_budget_share'):
        build_domains(META, None, None, False)


# ---------------------------------------------------------------------- issue 21 (items 6, 7)
def test_issue21_item6_public_metadata_range_is_nullable_declares_nullability():
    meta = {'fee': {'sdtype': 'numerical', 'range_min': 0, 'range_max': 50,
                    'range_is_nullable': True},
            'room': {'sdtype': 'categorical', 'range_values': ['A', 'B'],
                     'range_is_nullable': False},
            'vip': {'sdtype': 'boolean', 'range_is_nullable': True}}
    declared, undeclared, _ = resolve_domains(meta, {}, metadata_is_public=True)
    assert not undeclared
    assert declared['fee'].nullable and declared['vip'].nullable and not declared['room'].nullable
    assert all(d.nullable_declared for d in declared.values())
    # a declaration wins over the metadata; detected metadata (not public) declares nothing
    declared, _, _ = resolve_domains(meta, {'fee': {'nullable': False}}, True)
    assert not declared['fee'].nullable
    _, undeclared, _ = resolve_domains(meta, {}, metadata_is_public=False)
    assert not undeclared['fee'].nullable_declared


@pytest.mark.parametrize('sdtype', ['categorical', 'ordinal', 'boolean'])
def test_issue21_item6_bounds_for_a_non_numeric_column_are_an_error(sdtype):
    """Detection types small integer columns as ordinal/categorical: the user's bounds must not be
    ignored (the column would be discovered); the error points at the sdtype."""
    meta = {'kids': {'sdtype': sdtype}}
    with pytest.raises(DomainError, match="set its sdtype to 'numerical'"):
        resolve_domains(meta, {'kids': {'bounds': (0, 10)}}, False)


def test_issue21_item6_boolean_categories_must_be_false_true():
    meta = {'vip': {'sdtype': 'boolean'}}
    declared, _, _ = resolve_domains(meta, {'vip': {'categories': [True, False]}}, False)
    assert declared['vip'].categories == [False, True]
    for wrong in (['f', 't'], [0, 1], [True]):
        with pytest.raises(DomainError, match="sdtype to 'categorical'"):
            resolve_domains(meta, {'vip': {'categories': wrong}}, False)


@pytest.mark.parametrize('sdtype', ['numerical', 'datetime'])
def test_issue21_item7_categories_for_a_numeric_column_are_an_error(sdtype):
    """Item 7: known_categories for a numeric column was silently ignored and its domain
    discovered (spending budget)."""
    meta = {'age': {'sdtype': sdtype}}
    with pytest.raises(DomainError, match=r"domain=\{'known_min_max_values': \{'age': \(low, high\)\}\}"):
        resolve_domains(meta, merge_declarations(known_categories={'age': [1, 2, 3]}), False)
    spec = {'columns': {'age': {'category_values': [1, 2, 3]}}}
    with pytest.raises(DomainError, match="sdtype to 'categorical'"):
        resolve_domains(meta, merge_declarations(domain=spec), False)
