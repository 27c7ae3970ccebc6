"""Issue 21: friction found on real tables (constraints, wide categorical columns, conditions)."""

import numpy as np
import pytest
from sdv.cag import FixedIncrements
from sdv.errors import SynthesizerInputError

from tests.conftest import BOUNDS, SYNTHESIZERS, make_table
from tests.synthesizers.test_contract import build


@pytest.fixture(params=list(SYNTHESIZERS), ids=lambda c: c.__name__)
def cls(request):
    return request.param


def test_fixed_increments_on_a_column_not_declared_integer_issue21_item2(cls):
    table = make_table()
    table['age'] = (table['age'] // 5 * 5).clip(lower=20)
    synth = build(cls, target_column='label')  # 'age' is declared (18, 90), not integer
    synth.add_constraints([FixedIncrements(column_name='age', increment_value=5)])
    synth.fit({'t': table})
    rows = synth.sample(300)['t']
    assert len(rows) == 300  # was 0 rows (or all NaN): no float ever passed the check
    ages = rows['age'].to_numpy(float)
    assert np.all(ages % 5 == 0) and ages.min() >= 20 and ages.max() <= 90


def test_fixed_increments_without_a_multiple_in_bounds_is_refused_issue21_item2(cls):
    synth = build(cls, known_min_max_values={**BOUNDS, 'age': (21, 24)})
    with pytest.raises(SynthesizerInputError, match=r'no multiple of 5 lies inside .*\[21, 24\]'):
        synth.add_constraints([FixedIncrements(column_name='age', increment_value=5)])
