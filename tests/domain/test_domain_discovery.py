"""Private domain discovery: sensitivity, partition selection, bounds, nullability, accounting.

Noise seeds here are TEST ONLY (they make runs reproducible; a known seed voids the guarantee).
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, norm

from sdv_dpkme.domain import (
    ColumnDomain,
    DomainDiscoveryWarning,
    DomainError,
    DPDiscreteTransformer,
    discover,
    transformer_for,
)
from sdv_dpkme.domain.discovery import (
    DATETIME_EDGES,
    NAME,
    NUMERIC_EDGES,
    category_threshold,
    count_vector,
    numeric_threshold,
    sensitivity,
    warn_discovered,
    warn_single_category,
)
from sdv_dpkme.privacy import GaussianMechanism, NoiseSource, PrivacyAccountant
from sdv_dpkme.privacy._autodp import mechanism_zoo
from sdv_dpkme.privacy import Ledger


def ledger(epsilon=1.0, delta=1e-5, seed=0):
    accountant = PrivacyAccountant(epsilon, delta)
    noise = NoiseSource(seed)
    return Ledger(accountant, noise, GaussianMechanism(accountant, noise))


def num(name, **kw):
    return ColumnDomain(name=name, sdtype='numerical', **kw)


def cat(name, **kw):
    return ColumnDomain(name=name, sdtype='categorical', **kw)


def test_grids_are_public_wide_and_ordered():
    assert np.all(np.diff(NUMERIC_EDGES) > 0) and np.all(np.diff(DATETIME_EDGES) > 0)
    assert 0.0 in NUMERIC_EDGES and np.allclose(NUMERIC_EDGES, -NUMERIC_EDGES[::-1])
    assert NUMERIC_EDGES[-1] == 7e15 and 1e-6 in NUMERIC_EDGES and 0.3 in NUMERIC_EDGES
    positive = NUMERIC_EDGES[NUMERIC_EDGES > 0]
    assert (positive[1:] / positive[:-1]).max() <= 5 / 3 + 1e-12  # a tail spans few bins
    assert pd.Timestamp(int(DATETIME_EDGES[0])).year == 1700
    assert pd.Timestamp(int(DATETIME_EDGES[-1])).year == 2250


def _random_row(rng):
    return {
        'x': rng.choice([np.nan, np.inf, -3e20, 0.0, 1e-9, 42.0, -17.5, 2.0]),
        't': rng.choice([None, '1690-01-01', '2020-03-04', '2261-12-31']),
        'c': rng.choice([None, 'a', 'b', 'brand-new', 7]),
        'd': rng.choice(['p', 'q', None]),
    }


@pytest.mark.slow
def test_neighbouring_tables_differ_by_at_most_sqrt_2k():
    rng = np.random.default_rng(0)
    domains = {'x': num('x'), 't': ColumnDomain(name='t', sdtype='datetime'), 'c': cat('c'),
               'd': cat('d')}
    k = len(domains)
    base = pd.DataFrame([_random_row(rng) for _ in range(60)])
    reached = 0.0
    for trial in range(300):
        other = base.copy()
        i = int(rng.integers(len(base)))
        other.loc[i] = pd.Series(_random_row(rng))
        a, b = count_vector(base, domains), count_vector(other, domains)
        # every row adds exactly one to exactly one entry per column
        for column in domains:
            assert sum(v for (c, _), v in a.items() if c == column) == len(base)
        keys = set(a) | set(b)
        diff = np.array([a.get(key, 0) - b.get(key, 0) for key in keys], dtype=float)
        l2 = np.linalg.norm(diff)
        assert l2 <= sensitivity(k) + 1e-12
        reached = max(reached, l2)
    assert reached == pytest.approx(math.sqrt(2 * k))  # the bound is attained, hence tight


def test_category_threshold_solves_the_union_bound():
    s, delta_t, k = 37.5, 1e-6, 3
    t = category_threshold(s, delta_t, k)
    assert k * (norm.sf((t - 1) / s) + norm.sf(t / s)) == pytest.approx(delta_t, rel=1e-6)
    assert category_threshold(s, delta_t, 2 * k) > t  # more columns, higher bar
    assert category_threshold(0.0, delta_t, k) == 0.5  # non-private: any present value
    z = norm.isf(1e-3 / 266)
    assert numeric_threshold(s, 266) == pytest.approx(z * s)


def _singleton_table(n=400):
    values = ['common'] * (n - 1) + ['RARE-7731']
    return pd.DataFrame({'c': values, 'x': np.linspace(1, 50, n)})


@pytest.mark.slow
def test_single_row_category_is_never_released_at_default_delta():
    table = _singleton_table()
    undeclared = {'c': cat('c'), 'x': num('x')}
    runs, released, p_single = 250, 0, None
    for seed in range(runs):
        led = ledger(epsilon=1.0, seed=seed)
        result = discover(table, undeclared, led, 0.5)
        assert 'common' in result.domains['c'].categories
        released += 'RARE-7731' in result.domains['c'].categories
        p_single = result.release.details['single_row_release_probability']
        assert p_single <= led.accountant.reserved[0].delta  # <= delta_T / k_cat, k_cat = 1
    # P[X >= 1] <= runs * p_single ~ 1e-5: a single release fails the test
    assert released <= binom.ppf(1 - 1e-6, runs, p_single)


@pytest.mark.slow
def test_single_row_release_rate_matches_the_threshold_where_measurable():
    """At a (deliberately huge) delta the rate is measurable: it must match P[1 + N >= T]."""
    table = _singleton_table(200)
    undeclared = {'c': cat('c')}
    runs, released = 400, 0
    for seed in range(runs):
        led = ledger(epsilon=1.0, delta=0.2, seed=seed)
        result = discover(table, undeclared, led, 0.5, delta_share=0.5)
        released += 'RARE-7731' in result.domains['c'].categories
        assert 'common' in result.domains['c'].categories
    details = result.release.details
    p = details['single_row_release_probability']
    delta_t = 0.1
    assert p <= delta_t  # the count-1 key alone stays within the reserved delta
    assert p == pytest.approx(norm.sf((details['category_threshold_rows'] - 1)
                                      / details['noise_std_rows']))
    assert binom.ppf(1e-6, runs, p) <= released <= binom.ppf(1 - 1e-6, runs, p)


@pytest.mark.parametrize('seed', range(4))
def test_bounds_cover_the_bulk_of_known_distributions(seed):
    rng = np.random.default_rng(seed)
    n = 20_000
    table = pd.DataFrame({
        'normal': rng.normal(50, 10, n),
        'lognormal': rng.lognormal(0, 1, n),
        'negative': rng.normal(-300, 40, n),
    })
    undeclared = {c: num(c) for c in table}
    result = discover(table, undeclared, ledger(epsilon=1.0, seed=seed), 0.5)
    for column in table:
        dom = result.domains[column]
        inside = table[column].between(dom.low, dom.high).mean()
        assert inside >= 0.98, (column, dom.low, dom.high, inside)
        q01, q99 = table[column].quantile([0.01, 0.99])
        assert dom.high - dom.low <= 10 * (q99 - q01), (column, dom.low, dom.high)


def test_nullability_comes_from_the_null_bin_unless_declared():
    rng = np.random.default_rng(1)
    n = 5_000
    x = rng.uniform(0, 10, n)
    x[: n // 3] = np.nan
    c = rng.choice(['u', 'v'], n).astype(object)
    c[: n // 3] = None
    table = pd.DataFrame({'x': x, 'y': rng.uniform(0, 10, n), 'c': c, 'z': x.copy()})
    undeclared = {'x': num('x'), 'y': num('y'), 'c': cat('c'),
                  'z': num('z', nullable=False, nullable_declared=True)}
    domains = discover(table, undeclared, ledger(seed=3), 0.5).domains
    assert domains['x'].nullable and domains['c'].nullable and not domains['y'].nullable
    assert not domains['z'].nullable  # declared, never re-estimated
    assert all(d.discovered for d in domains.values())
    assert domains['c'].categories == ['u', 'v']


def test_integer_bounds_only_from_declared_representation():
    table = pd.DataFrame({'i': np.arange(2000) % 7 + 1.0, 'f': np.arange(2000) % 7 + 1.0})
    undeclared = {'i': num('i', integer=True), 'f': num('f')}
    domains = discover(table, undeclared, ledger(epsilon=5.0, seed=0), 0.5).domains
    assert domains['i'].integer and float(domains['i'].high).is_integer()
    assert not domains['f'].integer


def test_nothing_released_is_a_clear_error():
    table = pd.DataFrame({'x': np.arange(30.0), 'c': ['a', 'b', 'c'] * 10})
    with pytest.raises(DomainError) as err:
        discover(table, {'x': num('x'), 'c': cat('c')}, ledger(seed=0), 0.1)
    message = str(err.value)
    assert "'x'" in message and "'c'" in message and 'domain_budget_share' in message
    assert "'a'" not in message


def test_reported_dimension_does_not_reveal_distinct_values():
    few = pd.DataFrame({'c': ['a'] * 500})
    many = pd.DataFrame({'c': ['a'] * 400 + [f'v{i}' for i in range(100)]})
    dims = []
    for table in (few, many):
        led = ledger(epsilon=5.0, seed=0)
        discover(table, {'c': cat('c')}, led, 0.5)
        dims.append(led.accountant.releases[0].dimension)
    assert dims[0] == dims[1] == 1  # only the public null key


def test_accounting_matches_autodp_and_reserves_delta():
    table = _singleton_table(3000)
    led = ledger(epsilon=1.0, delta=1e-5, seed=0)
    result = discover(table, {'c': cat('c'), 'x': num('x')}, led, 0.1)
    acct = led.accountant
    release = acct.releases[0]
    assert release.name == NAME and release.sensitivity == pytest.approx(2.0)
    assert release.details['columns'] == ['c', 'x']
    assert acct.reserved[0].delta == pytest.approx(1e-6)
    assert acct.gaussian_delta == pytest.approx(9e-6)
    alone = mechanism_zoo.ExactGaussianMechanism(sigma=release.noise_multiplier)
    assert release.details['epsilon_alone'] == pytest.approx(alone.get_approxDP(9e-6), rel=1e-9)
    # 10% of the precision (mu^2) of the whole budget
    assert release.noise_multiplier ** -2 == pytest.approx(0.1 * acct.total_precision())
    rest = acct.calibrate({'model': (1.0, 1)})['model']
    from sdv_dpkme.privacy import Release

    acct.record(Release('model', '', 'gaussian', 1.0, rest, rest))
    sigma_eff = (release.noise_multiplier ** -2 + rest ** -2) ** -0.5
    expected = mechanism_zoo.ExactGaussianMechanism(sigma=sigma_eff).get_approxDP(9e-6)
    assert acct.epsilon_spent() == pytest.approx(expected, rel=1e-12)
    assert 1.0 * (1 - 1e-6) <= acct.epsilon_spent() <= 1.0
    assert result.reservation is acct.reserved[0]


def test_non_private_discovery_is_exact_and_reserves_nothing():
    table = pd.DataFrame({'c': ['a', 'b', 'b'] * 10 + ['z'], 'x': [3.0] * 30 + [120.0]})
    led = ledger(epsilon=math.inf)
    domains = discover(table, {'c': cat('c'), 'x': num('x')}, led, 0.1).domains
    assert domains['c'].categories == ['a', 'b', 'z']
    assert (domains['x'].low, domains['x'].high) == (0.0, 150.0)
    assert not led.accountant.reserved


def test_datetime_bounds_on_the_public_time_grid():
    rng = np.random.default_rng(0)
    days = rng.integers(0, 700, 5000)
    table = pd.DataFrame({'t': (pd.Timestamp('2020-01-01') + pd.to_timedelta(days, 'D'))
                          .strftime('%d/%m/%Y')})
    dom = ColumnDomain(name='t', sdtype='datetime', datetime_format='%d/%m/%Y')
    out = discover(table, {'t': dom}, ledger(epsilon=1.0, seed=2), 0.5).domains['t']
    low, high = pd.Timestamp(int(out.low)), pd.Timestamp(int(out.high))
    assert low == pd.Timestamp('2020-01-01') and high == pd.Timestamp('2022-01-01')


def test_budget_share_is_validated():
    with pytest.raises(ValueError):
        discover(_singleton_table(), {'x': num('x')}, ledger(), 1.0)


def test_declared_log_scale_is_kept_on_discovered_bounds():
    rng = np.random.default_rng(0)
    table = pd.DataFrame({'gain': np.concatenate([np.zeros(3000), rng.lognormal(8, 1, 3000)]),
                          'shifted': rng.normal(5, 20, 6000)})
    undeclared = {'gain': num('gain', scale='log'), 'shifted': num('shifted', scale='log')}
    domains = discover(table, undeclared, ledger(epsilon=2.0, seed=0), 0.5).domains
    assert domains['gain'].scale == 'log' and domains['gain'].low == 0
    assert domains['shifted'].low == 0 and domains['shifted'].high > 0
    with pytest.raises(DomainError, match='log scale'):
        discover(table, {'t': ColumnDomain(name='t', sdtype='datetime', scale='log')}, ledger(),
                 0.5)


def test_declared_discrete_scale_on_discovered_bounds():
    rng = np.random.default_rng(0)
    table = pd.DataFrame({'stars': rng.integers(1, 6, 4000).astype(float),
                          'wide': rng.integers(0, 5000, 4000).astype(float)})
    undeclared = {'stars': num('stars', integer=True, scale='discrete'),
                  'wide': num('wide', integer=True, scale='discrete')}
    with pytest.warns(UserWarning, match="'wide'.*linear scale instead"):
        domains = discover(table, undeclared, ledger(epsilon=5.0, seed=0), 0.5).domains
    assert domains['stars'].scale == 'discrete' and domains['wide'].scale == 'linear'
    assert isinstance(transformer_for(domains['stars']), DPDiscreteTransformer)
    with pytest.raises(DomainError, match='integer numerical column'):
        discover(table, {'f': num('f', scale='discrete')}, ledger(), 0.5)


# ------------------------------------------------------------------ issue 21 (items 3, 6, 9)
def _skewed_table(n=3000, seed=0):
    """A lab value that is 0 for 70% of rows and spread over ten decades otherwise (no grid bin
    but 0's clears), a flag whose rare value is held by 3% of rows, and a plain numeric column."""
    rng = np.random.default_rng(seed)
    lab = np.where(rng.random(n) < 0.7, 0.0, 10 ** rng.uniform(-5, 5, n))
    flag = np.where(rng.random(n) < 0.02, 't', 'f')
    return pd.DataFrame({'lab': lab, 'flag': flag, 'x': rng.normal(50, 10, n)})


def test_issue21_item3_discovery_estimates_the_share_each_domain_cuts():
    """Item 3: the warning says how much of each column the discovered domain is likely to cut,
    estimated from the noisy release (and n, public) alone."""
    table = _skewed_table()
    undeclared = {'lab': num('lab'), 'flag': cat('flag'), 'x': num('x')}
    result = discover(table, undeclared, ledger(epsilon=1.0, seed=0), 0.1)
    lab, flag = result.domains['lab'], result.domains['flag']
    assert lab.high <= 1e-6 and flag.categories == ['f']  # the issue's failure, reproduced
    truths = {
        'lab': 1 - table['lab'].between(lab.low, lab.high).mean(),
        'flag': (table['flag'] == 't').mean(),
        'x': 1 - table['x'].between(result.domains['x'].low, result.domains['x'].high).mean(),
    }
    assert truths['lab'] > 0.25
    for column, truth in truths.items():
        share, std = result.cut[column]
        assert 0 < std < 0.05
        assert abs(share - truth) <= 5 * std + 1e-9, (column, share, truth, std)
    with pytest.warns(DomainDiscoveryWarning) as record:
        warn_discovered(result)
    message = str(record[0].message)
    assert "'lab': [0, 1e-06]; about" in message and 'outside, clipped' in message
    assert 'out-of-domain bucket' in message
    assert "are estimated to cut more than 5% of their rows" in message and "'lab'" in message


def test_issue21_item3_cut_share_is_exact_without_noise():
    table = _skewed_table(2000)
    led = ledger(epsilon=math.inf)
    result = discover(table, {'lab': num('lab'), 'flag': cat('flag')}, led, 0.5)
    assert result.cut['flag'] == (0.0, 0.0)  # no noise: 't' is released too
    lab = result.domains['lab']
    expected = 1 - table['lab'].between(lab.low, lab.high).mean()
    assert result.cut['lab'][0] == pytest.approx(expected, abs=1e-12)


def test_issue42_single_category_and_one_class_target_warn_what_to_declare():
    """Issue 42 item 3 (was an error after the release, issue 21 item 3): a target left with
    fewer than 2 classes, or a flag with 1 value, warns and says what to declare."""
    rng = np.random.default_rng(1)
    n = 3000
    table = pd.DataFrame({
        'label': np.where(rng.random(n) < 0.04, 'sick', 'healthy'),
        'flag': np.where(rng.random(n) < 0.03, 't', 'f'),
        'married': rng.random(n) < 0.02,  # True/False typed categorical by detection
        'kids': np.where(rng.random(n) < 0.02, 2.0, 0.0),
        'city': rng.choice(['Lima', 'Oslo'], n),
    })
    undeclared = {c: cat(c) for c in table}
    result = discover(table, undeclared, ledger(epsilon=1.0, seed=0), 0.1)
    with pytest.warns(DomainDiscoveryWarning) as record:
        warn_single_category(result, target='label')
    (message,) = [str(w.message) for w in record]
    assert "'label' (the target_column: every synthetic row gets this class" in message
    assert "domain={'known_categories': {'label': ['healthy', ...]}}" in message
    assert "domain={'known_categories': {'flag': ['f', ...]}}" in message
    assert "sdtype 'boolean'" in message and "sdtype 'numerical'" in message
    assert "'city'" not in message and 'domain_template' in message
    assert "'sick'" not in message and "'t'" not in message  # only released values are named
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        warn_single_category(discover(table[['city']], {'city': cat('city')}, ledger(seed=0),
                                      0.5), 'city')


def test_issue21_item3_too_few_rows_fail_before_spending_and_point_at_the_fix():
    """Item 3: on a tiny table discovery fails before spending anything; the error names
    domain_template and the PII sdtype of columns detection typed categorical."""
    rng = np.random.default_rng(0)
    n = 215
    table = pd.DataFrame({
        'name': [f'Person {i}' for i in rng.integers(0, 100, n)],
        'phone': [f'+1 555 {i:04d}' for i in rng.integers(0, 10_000, n)],
        'gender': rng.choice(['F', 'M'], n),
        'salary': rng.uniform(2e4, 9e4, n),
    })
    led = ledger(epsilon=0.3, seed=0)
    undeclared = {c: (num(c) if c == 'salary' else cat(c)) for c in table}
    with pytest.raises(DomainError) as err:
        discover(table, undeclared, led, 0.1)
    assert not led.accountant.releases and not led.accountant.reserved
    message = str(err.value)
    assert 'The table has 215 rows' in message and 'Nothing was spent' in message
    assert "'gender' (categorical): a value needs" in message
    assert 'give it sdtype' not in message.split("'gender'")[1].split('\n')[0]
    # with more budget the release happens, and the names and phones clear nothing: spent, so
    # (issue 42) they keep only their missing bucket and a warning says what to declare
    with pytest.warns(DomainDiscoveryWarning) as record:
        result = discover(table, undeclared, ledger(epsilon=1.0, seed=0), 0.1)
    spent = [str(w.message) for w in record if 'released nothing usable' in str(w.message)]
    assert len(spent) == 1 and 'all their synthetic values are missing' in spent[0]
    empty = [c for c, d in result.domains.items() if d.empty]
    assert {'name', 'phone'} <= set(empty) and set(result.domains) == set(undeclared)
    for column in empty:
        dom = result.domains[column]
        assert dom.nullable and dom.categories == [] and not dom.is_numeric
        assert transformer_for(dom).buckets == ['__missing__', '__other__']
        assert 'nothing released' in result.summary[column]
    for message in (str(err.value), spent[0]):
        assert 'sdv_dpkme.domain.domain_template(metadata)' in message
        assert "give it sdtype 'name'" in message and "give it sdtype 'phone_number'" in message
        assert "'boolean'" in message  # the sdtypes detection gets wrong
        assert 'Person' not in message and '555' not in message
