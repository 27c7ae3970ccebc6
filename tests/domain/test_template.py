"""Issue 21, item 3: a domain spec skeleton from the metadata alone (``domain_template``)."""

import inspect
import json

import numpy as np
import pandas as pd
import pytest
from sdv.metadata import Metadata

from sdv_dpkme.domain import DomainError, domain_template, parse_domain_spec
from sdv_dpkme.domain.spec import merge_declarations, resolve_domains


def _detected():
    """Metadata detected from rows holding canary values (range_min/max, range_values)."""
    frame = pd.DataFrame({
        'id': np.arange(40),
        'age': np.arange(40) + 123.456,
        'town': ['Canarytown', 'Lima'] * 20,
        'paid': [True, False] * 20,
        'size': ['S', 'M', 'L', None] * 10,
        'when': pd.date_range('1987-06-05', periods=40, freq='D'),
    })
    metadata = Metadata.detect_from_dataframes({'t': frame})
    metadata.update_column('size', table_name='t', sdtype='ordinal')
    metadata.update_column('paid', table_name='t', sdtype='boolean')
    return metadata


def test_issue21_domain_template_reads_no_rows_and_copies_nothing_detected():
    assert list(inspect.signature(domain_template).parameters) == ['metadata', 'table_name']
    metadata = _detected()
    assert 'range_min' in json.dumps(metadata.to_dict())  # detection did copy private facts
    skeleton = domain_template(metadata)
    text = json.dumps(skeleton)
    for token in ('123.456', '162.456', 'Canarytown', '1987', 'range_'):
        assert token not in text
    columns = skeleton['columns']
    assert skeleton['table_name'] == 't' and 'id' not in columns
    # detected metadata states no integer-ness here: a placeholder too (or a DP vote if deleted)
    assert columns['age'] == {'min_value': None, 'max_value': None, 'integer': None,
                              'nullable': None}
    assert columns['town'] == {'category_values': None, 'nullable': None}
    assert columns['size'] == {'category_values': None, 'nullable': None}
    assert columns['paid'] == {'nullable': None}
    assert columns['when'] == {'start_timestamp': None, 'end_timestamp': None, 'nullable': None}


def test_issue21_unfilled_placeholders_are_errors_not_discoveries():
    skeleton = domain_template(_detected())
    with pytest.raises(DomainError, match="still hold the template's placeholder"):
        parse_domain_spec(skeleton)


def fill(skeleton):
    spec = json.loads(json.dumps(skeleton))
    c = spec['columns']
    c['age'].update(min_value=0, max_value=200, integer=True, nullable=False)
    c['town'].update(category_values=['Lima', 'Oslo'], nullable=False)
    c['size'].update(category_values=['S', 'M', 'L'], nullable=True)
    c['paid']['nullable'] = False
    c['when'].update(start_timestamp='1980-01-01', end_timestamp='1990-01-01', nullable=False)
    return spec


def test_issue21_filled_template_declares_every_modelled_column():
    metadata = _detected()
    columns = metadata.to_dict()['tables']['t']['columns']
    declared, undeclared, _ = resolve_domains(
        columns, merge_declarations(domain=fill(domain_template(metadata))), False)
    assert not undeclared and set(declared) == {'age', 'town', 'size', 'paid', 'when'}
    assert declared['size'].nullable and declared['size'].categories == ['S', 'M', 'L']


def test_issue21_template_needs_a_table_name_for_multi_table_metadata():
    metadata = Metadata.load_from_dict({'tables': {
        'a': {'columns': {'x': {'sdtype': 'numerical'}}},
        'b': {'columns': {'y': {'sdtype': 'categorical'}}},
    }})
    with pytest.raises(ValueError, match='table_name'):
        domain_template(metadata)
    assert domain_template(metadata, 'b')['columns'] == {
        'y': {'category_values': None, 'nullable': None}}
