"""The DP vote on undeclared integer-ness: sensitivity, merging, decisions, accounting, the fit.

Noise seeds here are TEST ONLY (they make runs reproducible; a known seed voids the guarantee).
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sdv.metadata import Metadata

from sdv_dpkme import DPHPSynthesizer
from sdv_dpkme.domain import ColumnDomain, domain_template
from sdv_dpkme.domain import integers
from sdv_dpkme.domain.integers import (
    FRACTION_ALLOWED,
    INTEGER_SHARE,
    MIN_ROWS_PER_STD,
    NAME,
    IntegerVoteCounter,
    needs_vote,
    sensitivity,
    vote,
)
from sdv_dpkme.domain.spec import DomainError, parse_domain_spec
from sdv_dpkme.privacy import GaussianMechanism, Ledger, NoiseSource, PrivacyAccountant
from sdv_dpkme.privacy._autodp import mechanism_zoo
from sdv_dpkme.privacy.testing import fixed_noise
from tests.conftest import make

EXTREMES = [np.nan, np.inf, -np.inf, 1e308, -1e308, 2.0**60, 0.0, -0.0, 3.5, -7.25, 1e-300,
            5e-324, 42.0, -1.0]


def ledger(epsilon=1.0, delta=1e-5, seed=0):
    accountant = PrivacyAccountant(epsilon, delta)
    noise = NoiseSource(seed)
    return Ledger(accountant, noise, GaussianMechanism(accountant, noise))


def _votes(frame, columns):
    return IntegerVoteCounter(columns)(frame).votes(columns)


def test_each_finite_value_counts_once_and_missing_or_infinite_values_abstain():
    frame = pd.DataFrame({'x': EXTREMES})
    # whole: 1e308, -1e308, 2**60, 0, -0, 42, -1 (7); not whole: 3.5, -7.25, 1e-300, 5e-324 (4)
    assert IntegerVoteCounter(['x'])(frame).counts == {'x': (4, 7)}
    assert _votes(frame, ['x'])[0] == pytest.approx(0.8 * 4 - 0.2 * 7)
    ints = pd.DataFrame({'x': pd.array([1, None, 3], dtype='Int64')})
    assert IntegerVoteCounter(['x'])(ints).counts == {'x': (0, 2)}


def test_replacing_one_row_moves_the_votes_by_at_most_the_sensitivity_and_it_is_reached():
    rng = np.random.default_rng(0)
    columns = ['a', 'b', 'c']
    base = pd.DataFrame({c: rng.choice(EXTREMES, 40) for c in columns})
    worst = 0.0
    for i in range(len(base)):
        for new in EXTREMES:
            other = base.copy()
            other.iloc[i] = new  # the replaced row takes one extreme value in every column
            diff = _votes(base, columns) - _votes(other, columns)
            assert np.all(np.abs(diff) <= 1 + 1e-12)
            worst = max(worst, float(np.linalg.norm(diff)))
    assert worst <= sensitivity(len(columns)) + 1e-12
    assert math.isclose(worst, sensitivity(len(columns)))  # whole -> not whole in every column


def test_chunk_votes_merge_to_the_whole_table_in_any_split():
    rng = np.random.default_rng(1)
    table = pd.DataFrame({'a': rng.choice(EXTREMES, 500), 'b': rng.integers(-5, 5, 500)})
    counter = IntegerVoteCounter(['a', 'b'])
    whole = counter(table)
    cuts = sorted(rng.choice(np.arange(1, 500), 6, replace=False))
    parts = [counter(chunk) for chunk in np.split(table, cuts)]
    total = parts[3]
    for part in parts[:3] + parts[4:]:
        total = total + part
    assert total.n == whole.n == 500 and total.counts == whole.counts


def test_needs_vote_only_where_no_public_fact_settles_integerness():
    spec = parse_domain_spec({'columns': {
        'a': {'min_value': 0, 'max_value': 9},
        'b': {'min_value': 0, 'max_value': 9, 'integer': False},
        'c': {'min_value': 0, 'max_value': 9, 'num_decimal_digits': 2},
    }, 'integer_columns': ['d'], 'known_min_max_values': {'d': (0, 9), 'e': (0, 9)}})
    from sdv_dpkme.domain.spec import resolve_domains
    meta = {c: {'sdtype': 'numerical'} for c in 'abcde'}
    meta['e']['computer_representation'] = 'Float'
    meta['f'] = {'sdtype': 'numerical'}  # undeclared: its bounds are discovered, integer voted
    meta['g'] = {'sdtype': 'datetime'}
    declared, undeclared, _ = resolve_domains(meta, spec, metadata_is_public=False)
    voted = sorted(c for c, d in {**declared, **undeclared}.items() if needs_vote(d))
    assert voted == ['a', 'f']
    assert not needs_vote(ColumnDomain(name='old', sdtype='numerical'))  # built before the vote


def test_the_vote_is_one_gaussian_release_at_its_share_and_decides_by_sign():
    n = 5000
    rng = np.random.default_rng(2)
    table = pd.DataFrame({
        'whole': rng.integers(0, 90, n).astype(float),
        'real': rng.normal(50, 10, n),
        'mostly_missing_whole': np.where(rng.random(n) < 0.8, np.nan, rng.integers(0, 5, n)),
        # mixed precision (lab values): half fractional is not integer; 5% fractional is
        'half': np.where(np.arange(n) < 2500, 1.5, 2.0),
        'few_fractional': np.where(np.arange(n) < 250, 0.5, 3.0),
    })
    led = ledger()
    result = vote(table, list(table.columns), led)
    assert result.integer == {'whole': True, 'real': False, 'mostly_missing_whole': True,
                              'half': False, 'few_fractional': True}
    [release] = led.accountant.releases
    assert release.name == NAME and release.sensitivity == sensitivity(5) == math.sqrt(5)
    assert release.dimension == 5 and release.count == 1
    # it spends INTEGER_SHARE of the precision: sigma = sigma_total / sqrt(share)
    total = PrivacyAccountant(1.0, 1e-5).total_precision()
    assert math.isclose(release.noise_multiplier ** -2, INTEGER_SHARE * total, rel_tol=1e-9)
    # epsilon of this release alone, recomputed with autodp
    eps = mechanism_zoo.ExactGaussianMechanism(release.noise_multiplier).get_approxDP(1e-5)
    assert eps < 1.0


def test_a_table_too_small_for_the_noise_is_not_voted_on_and_spends_nothing():
    led = ledger()
    sigma = led.accountant.calibrate({NAME: (1.0, 1)}, fraction=INTEGER_SHARE)[NAME]
    too_few = int(MIN_ROWS_PER_STD * sigma * sensitivity(1) / FRACTION_ALLOWED) - 1
    assert vote(pd.DataFrame({'x': np.arange(too_few, dtype=float)}), ['x'], led) is None
    assert led.accountant.releases == []


def test_rows_that_change_before_the_vote_release_nothing():
    class Shrinking:
        def __len__(self):
            return 2000

        def discovery_counts(self, counter):
            return counter(pd.DataFrame({'x': np.arange(1999.0)}))

    led = ledger()
    with pytest.raises(ValueError, match='read 1,999 rows, but 2,000'):
        vote(Shrinking(), ['x'], led)
    assert led.accountant.releases == []


# ----------------------------------------------------------------------------- in the fit
def _table(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        'age': rng.integers(18, 80, n),
        'score': rng.normal(0.5, 0.2, n).clip(0, 1),
        'hours': rng.choice([20, 40, 60], n),
        'label': rng.choice(['a', 'b'], n),
    })


def _metadata():
    return Metadata.load_from_dict({'tables': {'t': {'columns': {
        'age': {'sdtype': 'numerical'}, 'score': {'sdtype': 'numerical'},
        'hours': {'sdtype': 'numerical'}, 'label': {'sdtype': 'categorical'},
    }}}})


FAST = dict(steps=5, sum_order=10, product_order=3, product_redraws=2, batch_size=64,
            generator_dims=(32,), latent_dim=8)


def _fit(table, **extra):
    args = dict(epsilon=2.0, known_min_max_values={'age': (0, 120), 'score': (0, 1),
                                                    'hours': (0, 99)},
                known_categories={'label': ['a', 'b']}, random_state=0, verbose=False, **FAST)
    synth = make(DPHPSynthesizer, _metadata(), **{**args, **extra})
    with warnings.catch_warnings(), fixed_noise(3):
        warnings.simplefilter('ignore')
        synth.fit({'t': table})
    return synth


def test_a_plain_declaration_gets_whole_numbers_where_the_vote_says_so_and_reports_it():
    synth = _fit(_table())
    names = [r.name for r in synth._privacy_report.releases]
    assert names[0] == NAME and names.count(NAME) == 1
    out = synth.sample(300)['t']
    assert out['age'].dtype.kind == 'i' and out['hours'].dtype.kind == 'i'
    assert out['score'].dtype.kind == 'f' and not np.all(out['score'] == out['score'].round())
    # the default rule sees the vote: 0..99 hours now one-hot, age 0..120 (121 values) not
    assert synth._domains['hours'].scale == 'discrete'
    assert synth._domains['age'].scale == 'linear'
    inputs = synth._privacy_report.public_inputs
    assert any("'hours'" in line and 'integer by DP vote' in line for line in inputs)
    assert any("'score'" in line and 'not integer by DP vote' in line for line in inputs)
    # the vote is inside the budget (epsilon_spent is inf here: the noise seed is known)
    assert math.isclose(synth._privacy_report.epsilon_calibrated, 2.0, rel_tol=1e-3)


@pytest.mark.slow
def test_declared_integerness_or_discovery_off_means_no_vote():
    declared = _fit(_table(), domain={'integer_columns': ['age', 'hours'],
                                      'columns': {'score': {'integer': False}}})
    assert NAME not in [r.name for r in declared._privacy_report.releases]
    assert declared.sample(50)['t']['age'].dtype.kind == 'i'
    off = _fit(_table(), domain_budget_share=0)
    assert NAME not in [r.name for r in off._privacy_report.releases]
    assert off.sample(50)['t']['age'].dtype.kind == 'f'  # floats, as the warning says


def test_a_tiny_table_keeps_floats_and_tells_what_to_declare():
    synth = make(DPHPSynthesizer, _metadata(), epsilon=1.0, known_min_max_values={
        'age': (0, 120), 'score': (0, 1), 'hours': (0, 99)},
        known_categories={'label': ['a', 'b']}, verbose=False, **FAST)
    with pytest.warns(UserWarning, match='too small for a DP vote'):
        synth.fit({'t': _table(60)})
    assert NAME not in [r.name for r in synth._privacy_report.releases]


@pytest.mark.slow
def test_the_vote_moves_with_one_row_no_more_than_its_noise_allows():
    """Neighbouring tables under one (test-only) noise seed: the decisions match, the released
    vote differs by at most the sensitivity."""
    table = _table()
    other = table.copy()
    other = other.astype({'age': float, 'hours': float})
    other.loc[7, ['age', 'score', 'hours']] = [33.5, 0.25, 1e308]
    a, b = _fit(table), _fit(other)
    ra, rb = (next(r for r in s._privacy_report.releases if r.name == NAME) for s in (a, b))
    assert ra == rb  # the record holds no value of the votes
    assert a._integer_vote.integer == b._integer_vote.integer


def test_template_leaves_integerness_to_the_user_unless_the_metadata_states_it():
    meta = Metadata.load_from_dict({'tables': {'t': {'columns': {
        'a': {'sdtype': 'numerical'},
        'b': {'sdtype': 'numerical', 'computer_representation': 'Int64'},
        'c': {'sdtype': 'numerical', 'computer_representation': 'Float'},
    }}}})
    columns = domain_template(meta)['columns']
    assert [columns[c]['integer'] for c in 'abc'] == [None, True, False]
    with pytest.raises(DomainError, match='placeholder'):
        parse_domain_spec({'columns': {'a': {'min_value': 0, 'max_value': 1, 'integer': None}}})


@pytest.mark.slow
def test_a_refit_on_the_same_encoding_accounts_the_vote_again():
    synth = make(DPHPSynthesizer, _metadata(), epsilon=2.0, known_min_max_values={
        'age': (0, 120), 'score': (0, 1), 'hours': (0, 99)},
        known_categories={'label': ['a', 'b']}, verbose=False, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        processed = synth.preprocess({'t': _table()})
        synth.fit_processed_data(processed)
        first = [r.name for r in synth.get_privacy_report().releases]
        synth.fit_processed_data(processed)  # a new ledger: the vote shaped this encoding
    second = synth.get_privacy_report()
    assert first.count(NAME) == 1 and [r.name for r in second.releases] == first
    assert second.epsilon_spent <= 2.0 * (1 + 1e-6)


@pytest.mark.slow
def test_the_adversarial_suite_runs_the_vote():
    """Its neighbouring-table diff and sensitivity check then cover this release too."""
    from tests.privacy import attack
    from tests.privacy.test_adversarial import build, fit

    synth = build(DPHPSynthesizer, 'integer_vote')
    releases = fit(synth, attack.table())
    assert NAME in [r[0] for r in releases]
    assert not any(synth._domains[c].integer for c in ('income', 'lo', 'mid', 'hi'))
