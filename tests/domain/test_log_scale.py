"""The public log scale of wide numerical columns."""

import numpy as np
import pandas as pd
import pytest

from sdv_dpkme.domain import transformer_for
from sdv_dpkme.domain.spec import ColumnDomain
from sdv_dpkme.domain.transformers import DPNumericalTransformer


def test_default_scale_is_linear_and_a_declared_scale_is_kept():
    dom = ColumnDomain('x', 'numerical', low=0, high=99_999)
    assert transformer_for(dom).scale == 'linear'
    dom.scale = 'log'
    assert transformer_for(dom).scale == 'log'


def test_log_scale_round_trip_stays_in_unit_interval_and_separates_small_values():
    t = DPNumericalTransformer(0, 99_999, integer=True, scale='log')
    data = pd.DataFrame({'gain': [0, 1, 50, 5_000, 99_999, 250_000]})
    t.fit(data, 'gain')
    with pytest.warns(UserWarning, match='clipped'):
        encoded = t.transform(data)
    u = encoded['gain'].to_numpy()
    assert u.min() == 0.0 and u.max() == pytest.approx(1.0)
    assert np.all(np.diff(u) >= 0)
    assert u[3] > 0.7  # 5,000 is far from 0 on this scale (0.05 on the linear one)
    back = t.reverse_transform(encoded)['gain'].to_numpy()
    np.testing.assert_array_equal(back, [0, 1, 50, 5_000, 99_999, 99_999])


def test_log_scale_needs_nonnegative_low():
    with pytest.raises(ValueError, match='low >= 0'):
        DPNumericalTransformer(-1, 10, scale='log')
    with pytest.raises(ValueError, match='scale'):
        DPNumericalTransformer(0, 10, scale='sqrt')


def test_domain_spec_declares_the_scale():
    from sdv_dpkme.domain.spec import DomainError, merge_declarations, resolve_domains

    meta = {'gain': {'sdtype': 'numerical'}, 'age': {'sdtype': 'numerical'}}
    spec = {'columns': {'gain': {'min_value': 0, 'max_value': 99_999, 'scale': 'log'},
                        'age': {'min_value': 17, 'max_value': 90}}}
    declared, undeclared, _ = resolve_domains(meta, merge_declarations(domain=spec), False)
    assert transformer_for(declared['gain']).scale == 'log'
    assert transformer_for(declared['age']).scale == 'linear'
    bad = {'columns': {'gain': {'min_value': -1, 'max_value': 9, 'scale': 'log'}}}
    with pytest.raises(DomainError, match='log scale'):
        resolve_domains(meta, merge_declarations(domain=bad), False)
    with pytest.raises(DomainError, match="'linear', 'log'"):
        merge_declarations(domain={'columns': {'gain': {'scale': 'sqrt'}}})
