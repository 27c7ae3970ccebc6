"""Private domain discovery through a synthesizer: warning, report, accounting, NaN, refits."""

import json
import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sdv.errors import SynthesizerInputError
from sdv.metadata import Metadata
from sdv.sampling import Condition

from sdv_dpkme import DPHPSynthesizer, DPKIPSynthesizer
from sdv_dpkme.domain import DomainDiscoveryWarning, DomainError
from sdv_dpkme.privacy._autodp import mechanism_zoo
from sdv_dpkme.privacy.testing import fixed_noise
from tests.conftest import (
    make,
    BOUNDS,
    CATEGORIES,
    FAST,
    FAST_BY_CLASS,
    SYNTHESIZERS,
    make_metadata,
    make_table,
)

Synth = DPHPSynthesizer

UNDECLARED = ['age', 'income', 'city', 'when', 'label']


def build(**kwargs):
    args = dict(epsilon=1.0, random_state=0, **FAST)
    args.update(kwargs)
    return make(Synth, make_metadata(), **args)


@pytest.fixture(scope='module')
def big_table():
    return make_table(3000, seed=1)


def _fit(synth, table):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter('always')
        synth.fit({'t': table})
    return [w for w in record if issubclass(w.category, DomainDiscoveryWarning)]


def _recomputed_epsilon(report):
    sigmas = report.to_frame()['noise_multiplier'].to_numpy()
    sigma_eff = np.sum(sigmas ** -2.0) ** -0.5
    return mechanism_zoo.ExactGaussianMechanism(sigma=sigma_eff).get_approxDP(report.gaussian_delta)


def test_nothing_declared_discovers_everything_in_one_release(big_table):
    synth = build()
    with fixed_noise(3):
        discovered = _fit(synth, big_table)
    assert len(discovered) == 1
    message = str(discovered[0].message)
    assert all(f"'{c}'" in message for c in UNDECLARED)
    assert 'domain_budget_share=0.1' in message and "'flag'" not in message

    report = synth.get_privacy_report()
    frame = report.to_frame()
    assert list(frame['name']).count('domain_discovery') == 1
    row = frame.set_index('name').loc['domain_discovery']
    assert row['sensitivity'] == pytest.approx(math.sqrt(2 * len(UNDECLARED)))
    assert sorted(row['details']['columns']) == sorted(UNDECLARED)
    # one accounting for every release, discovery included, recomputed with autodp
    # (a test-only noise seed: the spend holds only for secret noise, so it is epsilon_calibrated)
    assert report.epsilon_spent == math.inf
    assert report.epsilon_calibrated == pytest.approx(_recomputed_epsilon(report), rel=1e-12)
    assert 0.999 < report.epsilon_calibrated <= 1.0
    assert report.reserved_delta[0].delta == pytest.approx(0.1 * report.delta)
    assert report.gaussian_delta + report.reserved_delta[0].delta == pytest.approx(report.delta)
    assert json.loads(report.to_json())['reserved_delta'][0]['name'] == 'category_threshold'
    assert any('discovered under DP' in p for p in report.public_inputs)
    assert synth.get_info()['discovered_columns'] == [c for c in synth._domains if c in UNDECLARED]

    out = synth.sample(300)['t']
    age = synth._domains['age']
    assert out['age'].between(age.low, age.high).all()
    assert set(out['city'].dropna()) <= set(synth._domains['city'].categories)
    assert synth._domains['flag'].categories == [False, True]  # boolean: public, not discovered


def test_everything_declared_spends_nothing_on_discovery(big_table):
    synth = build(known_min_max_values=BOUNDS, known_categories=CATEGORIES)
    assert not _fit(synth, big_table)
    report = synth.get_privacy_report()
    assert 'domain_discovery' not in set(report.to_frame()['name'])
    assert not report.reserved_delta and report.gaussian_delta == report.delta
    assert 'discovered_columns' not in synth.get_info()


def test_declared_facts_are_never_reestimated(big_table):
    synth = build(known_min_max_values={'age': (18, 90)}, known_categories={'label': ['no', 'yes']})
    (warning,) = _fit(synth, big_table)
    assert "'age'" not in str(warning.message) and "'label'" not in str(warning.message)
    assert (synth._domains['age'].low, synth._domains['age'].high) == (18, 90)
    assert not synth._domains['age'].discovered and synth._domains['city'].discovered
    release = synth.get_privacy_report().to_frame().set_index('name').loc['domain_discovery']
    assert sorted(release['details']['columns']) == ['city', 'income', 'when']
    assert release['sensitivity'] == pytest.approx(math.sqrt(6))
    assert synth._domains['income'].nullable  # declared through FAST's nullable_columns


def test_discovery_off_restores_the_clear_error(big_table):
    with pytest.raises(SynthesizerInputError) as err:
        build(domain_budget_share=0)
    assert isinstance(err.value, DomainError)
    message = str(err.value)
    assert all(f"'{c}'" in message for c in UNDECLARED) and 'domain_budget_share' in message
    assert 'known_min_max_values' in message and 'never' in message
    # an attribute set after construction takes effect at fit
    synth = build()
    synth.domain_budget_share = 0.0
    with pytest.raises(SynthesizerInputError, match='domain_budget_share=0'):
        synth.fit({'t': big_table})


@pytest.mark.parametrize('share', [-0.1, 1.0, 'a lot', True])
def test_bad_budget_share(share):
    with pytest.raises(SynthesizerInputError, match='domain_budget_share'):
        build(domain_budget_share=share)


def test_missing_values_in_discovered_columns_never_crash():
    table = make_table(3000, seed=2)
    table.loc[:4, 'age'] = np.nan  # too few to clear the null threshold: absorbed
    table.loc[:1199, 'city'] = None  # 40%: discovered as nullable
    synth = build(epsilon=5.0, nullable_columns=None)
    with fixed_noise(0):
        _fit(synth, table)
    assert not synth._domains['age'].nullable and synth._domains['city'].nullable
    assert synth._domains['income'].nullable  # 10% missing in make_table, discovered
    out = synth.sample(400)['t']
    assert out['age'].notna().all() and out['city'].isna().any()


def test_refit_through_fit_processed_data_accounts_the_discovery_again(big_table):
    synth = build()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        processed = synth.preprocess({'t': big_table})
        synth.fit_processed_data(processed)
        first = synth.get_privacy_report()
        synth.fit_processed_data(processed)  # same discovered encoding, a new ledger
    second = synth.get_privacy_report()
    for report in (first, second):
        assert 'domain_discovery' in set(report.to_frame()['name'])
        assert report.epsilon_spent == pytest.approx(_recomputed_epsilon(report), rel=1e-12)
        assert report.epsilon_spent <= 1.0 and report.reserved_delta


def test_singleton_values_do_not_leave_through_discovery(tmp_path):
    table = make_table(3000, seed=3)
    table.loc[7, 'city'] = 'Atlantis9931'
    table.loc[8, 'label'] = 'CANARY-LABEL-5521'
    synth = build(target_column='label')
    _fit(synth, table)
    blob = pickle.dumps(synth)
    synth.save(tmp_path / 's.pkl')
    blob += (tmp_path / 's.pkl').read_bytes()
    blob += synth.get_privacy_report().to_json().encode()
    for token in (b'Atlantis9931', b'CANARY-LABEL-5521'):
        assert token not in blob
    out = synth.sample(300)['t']
    assert not {'Atlantis9931', 'CANARY-LABEL-5521'} & set(out.astype(str).to_numpy().ravel())


def test_domain_spec_through_the_synthesizer(big_table, tmp_path):
    spec = {'columns': {
        'age': {'min_value': 18, 'max_value': 90},
        'income': {'min_value': 0, 'max_value': 200_000, 'nullable': True},
        'when': {'start_timestamp': '2020-01-01', 'end_timestamp': '2021-12-31'},
        'city': {'category_values': CATEGORIES['city']},
        'label': {'category_values': CATEGORIES['label']},
    }}
    path = tmp_path / 'domain.json'
    path.write_text(json.dumps(spec))
    synth = build(domain=str(path), nullable_columns=None)
    assert not _fit(synth, big_table)
    assert 'domain_discovery' not in set(synth.get_privacy_report().to_frame()['name'])
    assert synth.get_parameters()['domain'] == str(path)
    assert synth._domains['income'].nullable


def test_non_private_reference_discovers_without_noise(big_table):
    synth = build(epsilon=math.inf)
    _fit(synth, big_table)
    assert synth._domains['city'].categories == ['Lima', 'Oslo', 'Rome']
    report = synth.get_privacy_report()
    assert report.epsilon_spent == math.inf and not report.reserved_delta


# ------------------------------------------------------------- issue 21 (items 3, 6, 7, 9)
def _flags_metadata():
    return Metadata.load_from_dict({'tables': {'t': {'columns': {
        'target': {'sdtype': 'categorical'},
        'sick': {'sdtype': 'categorical'},
        'TSH': {'sdtype': 'numerical'},
        'age': {'sdtype': 'numerical'},
    }}}})


def _flags_table(n=2400, seed=0):
    """Hypothyroid in miniature: a rare class, a rare yes/no flag and a skewed lab value."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        'target': np.where(rng.random(n) < 0.05, 'hypothyroid', 'negative'),
        'sick': np.where(rng.random(n) < 0.04, 't', 'f'),
        'TSH': np.where(rng.random(n) < 0.7, 0.0, 10 ** rng.uniform(-5, 3, n)),
        'age': rng.uniform(1, 95, n).round(),
    })


def test_issue42_one_class_target_and_one_value_flag_warn_and_the_fit_finishes():
    """Issue 42 item 3: discovery cut the target to 1 class and a flag to 1 value after its
    release. The fit used to stop there (budget spent, no model); now it finishes, the columns
    are constant in the synthetic rows, and the warning says what to declare."""
    synth = make(Synth, _flags_metadata(), epsilon=1.0, target_column='target',
                 **{k: v for k, v in FAST.items() if k != 'nullable_columns'})
    with fixed_noise(0), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter('always')
        synth.fit({'t': _flags_table()})
    found = [str(w.message) for w in record if issubclass(w.category, DomainDiscoveryWarning)]
    (message,) = [m for m in found if 'single category' in m]
    assert "'target' (the target_column: every synthetic row gets this class" in message
    assert "domain={'known_categories': {'target': ['negative', ...]}}" in message
    assert "domain={'known_categories': {'sick': ['f', ...]}}" in message
    assert 'The fit goes on with these columns constant' in message
    assert 'hypothyroid' not in message  # never released, never named
    (warning,) = [m for m in found if 'were discovered under' in m]
    assert "'TSH': [0, 1e-06]; about" in warning  # how much it cuts, said
    assert "'TSH'" in warning.split('are estimated to cut')[0].split('\n')[-1]
    assert synth._fitted and synth._discovery is not None
    names = set(synth.get_privacy_report().to_frame()['name'])
    assert {'domain_discovery', 'class_proportions', 'marginals'} <= names  # the model's too
    rows = synth.sample(200)['t']
    assert len(rows) == 200 and set(rows['target']) == {'negative'}
    assert set(rows['sick']) == {'f'}
    assert rows['age'].notna().all() and rows['age'].nunique() > 1
    conditioned = synth.sample_from_conditions([Condition({'target': 'negative'}, num_rows=5)])
    assert list(conditioned['t']['target']) == ['negative'] * 5
    # declaring what the error says fits
    synth = make(Synth, _flags_metadata(), epsilon=1.0, target_column='target',
                 known_categories={'target': ['hypothyroid', 'negative'], 'sick': ['f', 't']},
                 known_min_max_values={'TSH': (0, 1000)},
                 **{k: v for k, v in FAST.items() if k != 'nullable_columns'})
    with fixed_noise(0):
        (warning,) = _fit(synth, _flags_table())
    assert "'age'" in str(warning.message)
    assert synth._domains['target'].categories == ['hypothyroid', 'negative']


def _unreleasable_table(n=3000, seed=0):
    """Columns whose values are too spread for any bin or value to clear discovery's
    threshold (names, a number over 18 orders of magnitude, dates over five centuries)."""
    rng = np.random.default_rng(seed)
    low, high = pd.Timestamp('1700-01-02').value, pd.Timestamp('2240-01-01').value
    return pd.DataFrame({
        'name': [f'Person {i}' for i in rng.integers(0, 10**6, n)],
        'spread': 10 ** rng.uniform(-6, 12, n) * rng.choice([-1, 1], n),
        'when': pd.to_datetime(rng.integers(low, high, n)),
        'label': rng.choice(['a', 'b'], n),
        'age': rng.uniform(1, 95, n).round(),
    })


def _unreleasable_metadata():
    return Metadata.load_from_dict({'tables': {'t': {'columns': {
        'name': {'sdtype': 'categorical'}, 'spread': {'sdtype': 'numerical'},
        'when': {'sdtype': 'datetime'}, 'label': {'sdtype': 'categorical'},
        'age': {'sdtype': 'numerical'},
    }}}})


@pytest.mark.parametrize('target', ['label', 'name'])
def test_issue42_columns_discovery_released_nothing_for_come_out_missing(target):
    """Issue 42 item 3: nothing cleared discovery's threshold for some columns, after the
    release. The fit used to stop (budget spent, no model); now those columns keep only their
    missing bucket, the fit finishes and samples, and the warning says what to declare. Also
    when that column is the target (DP-KIP needs support rows for some class: the missing one)."""
    for cls in (Synth, DPKIPSynthesizer):
        fast = {k: v for k, v in FAST_BY_CLASS[cls.__name__][0].items()
                if k not in ('nullable_columns', 'target_column')}
        synth = make(cls, _unreleasable_metadata(), epsilon=1.0, target_column=target,
                     random_state=0, **fast)
        with fixed_noise(0), warnings.catch_warnings(record=True) as record:
            warnings.simplefilter('always')
            synth.fit({'t': _unreleasable_table()})
        (message,) = [str(w.message) for w in record if 'released nothing usable' in
                      str(w.message)]
        for column in ('name', 'spread', 'when'):
            assert f"  - '{column}': no " in message
            assert synth._domains[column].empty
        assert "give it sdtype 'name'" in message and 'Person' not in message
        assert 'all their synthetic values are missing' in message
        rows = synth.sample(40)['t']
        assert len(rows) == 40
        assert rows[['name', 'spread', 'when']].isna().all().all()
        assert rows['spread'].dtype == np.float64 and rows['when'].dtype.kind == 'M'
        assert rows['age'].notna().all()
        if target == 'label':
            assert set(rows['label']) <= {'a', 'b'} and rows['label'].notna().all()
        inputs = synth.get_privacy_report().public_inputs
        assert "'spread': nothing released by domain_discovery, so only its missing bucket " \
            '(and the out-of-domain one) is modelled' in inputs


def _detected(table):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return Metadata.detect_from_dataframes({'t': table})


def test_issue21_item6_public_metadata_declares_nullability():
    """Item 6: metadata_is_public=True ignored range_is_nullable and asked for
    nullable_columns."""
    rng = np.random.default_rng(0)
    table = pd.DataFrame({'x': rng.uniform(0, 10, 400), 'c': rng.choice(['a', 'b'], 400)})
    table.loc[:30, 'x'] = np.nan
    metadata = _detected(table)
    assert metadata.tables['t'].columns['x']['range_is_nullable'] is True
    synth = make(Synth, metadata, epsilon=1.0, metadata_is_public=True, random_state=0,
                  **{k: v for k, v in FAST.items() if k != 'nullable_columns'})
    assert synth._domains['x'].nullable and not synth._undeclared
    synth.fit({'t': table})
    assert synth.sample(200)['t']['x'].isna().any()


def test_issue21_item6_bounds_for_a_column_detected_ordinal_point_at_the_sdtype():
    """Item 6: numbers detected as ordinal missed the user's declaration and were discovered."""
    rng = np.random.default_rng(0)
    table = pd.DataFrame({'kids': rng.integers(0, 4, 300), 'c': rng.choice(['a', 'b'], 300)})
    metadata = _detected(table)
    assert metadata.tables['t'].columns['kids']['sdtype'] == 'ordinal'
    with pytest.raises(SynthesizerInputError, match="set its sdtype to 'numerical'"):
        make(Synth, metadata, epsilon=1.0, known_min_max_values={'kids': (0, 10)})


def test_issue21_item7_known_categories_for_a_numeric_column_is_an_error():
    """Item 7: known_categories for a numeric column was silently ignored and the column's
    domain discovered, spending budget; now the constructor refuses it."""
    with pytest.raises(SynthesizerInputError) as err:
        build(known_categories={'age': list(range(18, 91))})
    assert "domain={'known_min_max_values': {'age': (low, high)}}" in str(err.value)
    assert "'scale': 'discrete'" in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize('cls', list(SYNTHESIZERS), ids=lambda c: c.__name__)
def test_issue21_item9_out_of_domain_values_are_never_sampled(cls):
    """Item 9: the warning said '(sampled as missing)'; values outside the public categories go
    to a bucket that is modelled but never sampled, as docs/domains.md says."""
    table = make_table(600, seed=4)  # city: Lima/Oslo/Rome, a third each
    categories = {**CATEGORIES, 'city': ['Lima', 'Oslo']}
    synth = make(cls, make_metadata(), epsilon=5.0, known_min_max_values=BOUNDS,
                known_categories=categories, random_state=0, **SYNTHESIZERS[cls]['fast'])
    with pytest.warns(UserWarning, match='out-of-domain bucket') as record:
        synth.fit({'t': table})
    (message,) = {str(w.message) for w in record if 'out-of-domain' in str(w.message)}
    assert 'never sampled' in message and 'missing' not in message
    out = synth.sample(500)['t']['city']
    assert out.notna().all() and set(out) <= {'Lima', 'Oslo'}
