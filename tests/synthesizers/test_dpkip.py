"""DPKIPSynthesizer: distilled data, sampling semantics, its release plan and its errors."""

import dataclasses
import math
import warnings

import numpy as np
import pytest
from sdv.errors import SynthesizerInputError

from sdv_dpkme import DPHPTraining, DPKIPSynthesizer
from sdv_dpkme.synthesizers.dpkip import DistilledDataWarning
from tests.conftest import make, BOUNDS, CATEGORIES, FAST_BY_CLASS, make_metadata, make_table
from tests.privacy.test_pld import _dp_accounting_epsilon
from tests.privacy.test_poisson import _bbghs_conversion, _schedule_rdp

FAST = FAST_BY_CLASS['DPKIPSynthesizer'][0]


def build(**kwargs):
    args = dict(FAST, epsilon=1.0, known_min_max_values=BOUNDS, known_categories=CATEGORIES,
                random_state=0)
    args.update(kwargs)
    return make(DPKIPSynthesizer, make_metadata(), **args)


@pytest.fixture(scope='module')
def fitted():
    synth = build()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    return synth


def test_a_target_column_is_required():
    with pytest.raises(SynthesizerInputError, match='target_column'):
        make(DPKIPSynthesizer, make_metadata(), epsilon=1.0, known_min_max_values=BOUNDS,
             known_categories=CATEGORIES)


@pytest.mark.parametrize('kwargs,match', [
    (dict(sampling_rate=0), 'sampling_rate'),
    (dict(sampling_rate=1.5), 'sampling_rate'),
    (dict(steps=0), 'steps'),
    (dict(steps=True), 'steps'),
    (dict(clip_norm=-1), 'clip_norm'),
    (dict(clip_norm=float('inf')), 'clip_norm'),
    (dict(clip_norm=float('nan')), 'clip_norm'),
    (dict(learning_rate='0.1'), 'learning_rate'),
    (dict(regularization=-1e-6), 'regularization'),
    (dict(ntk_depth=0), 'ntk_depth'),
    (dict(class_balance=-0.5), 'class_balance'),
    (dict(class_balance=2), 'class_balance'),
    (dict(class_balance='balanced'), 'class_balance'),
    (dict(support_per_class=0), 'support_per_class'),
    (dict(support_per_class=True), 'support_per_class'),
    (dict(support_per_class={'yes': 2, 'maybe': 1}), 'maybe'),
    (dict(steps='Auto'), 'steps'),
    (dict(steps=2.5), 'steps'),
    (dict(sampling_rate='fast'), "sampling_rate.*'auto'"),
    (dict(support_init='zeros'), 'support_init'),
    (dict(support_init=None), 'support_init'),
])
def test_bad_arguments_get_clear_errors(kwargs, match):
    with pytest.raises(SynthesizerInputError, match=match):
        build(**kwargs)


def test_distilled_data_is_the_labelled_support_in_the_table_columns(fitted):
    data = fitted.get_distilled_data()
    assert list(data.columns) == list(make_table().columns)
    assert list(data['label']) == ['no'] * 3 + ['yes'] * 3  # balanced, in class order
    assert data['age'].between(*BOUNDS['age']).all()
    assert data['city'].dropna().isin(CATEGORIES['city']).all()
    with pytest.raises(SynthesizerInputError, match='Fit'):
        build().get_distilled_data()


def test_support_per_class_as_a_dict():
    synth = build(support_per_class={'yes': 4})
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    assert list(synth.get_distilled_data()['label']) == ['yes'] * 4


def test_sampling_up_to_the_support_gives_distinct_rows_without_warning(fitted):
    fitted.reset_sampling()
    with warnings.catch_warnings():
        warnings.simplefilter('error', DistilledDataWarning)
        out = fitted.sample(6)['t']
    columns = ['age', 'income', 'city', 'flag', 'when', 'label']
    distilled = fitted.get_distilled_data()[columns]
    assert sorted(map(tuple, out[columns].astype(str).to_numpy())) == sorted(
        map(tuple, distilled.astype(str).to_numpy()))


def test_sampling_more_rows_repeats_the_support_and_says_so(fitted):
    with pytest.warns(DistilledDataWarning, match='6 rows; sampling 14 repeats'):
        out = fitted.sample(14)['t']
    keys = out[['age', 'income', 'city', 'flag', 'when', 'label']].astype(str).agg('|'.join, axis=1)
    distinct = fitted.get_distilled_data()[['age', 'income', 'city', 'flag', 'when', 'label']]
    per_row = distinct.astype(str).agg('|'.join, axis=1).value_counts()  # duplicates count twice
    counts = keys.value_counts()[per_row.index] / per_row
    assert counts.max() - counts.min() <= 1  # every row once before any row a third time


def test_a_sampling_rate_of_one_means_every_row_every_step():
    synth = build(sampling_rate=1, steps=2)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    assert synth.get_privacy_report().releases[-1].sampling_probability == 1.0


def test_the_report_holds_the_counts_and_one_poisson_group_and_epsilon_recomputes(fitted):
    report = fitted.get_privacy_report()
    counts, row = report.releases
    assert counts.name == 'kip_class_counts' and counts.sampling == 'none'
    assert counts.sensitivity == pytest.approx(math.sqrt(2)) and counts.dimension == 3
    assert row.name == 'kip_gradients' and row.count == 15 and row.sampling_probability == 0.1
    assert row.sensitivity == pytest.approx(2 * fitted.training.clip_norm)
    assert 'Poisson' in row.sampling and 'replace-one' in report.neighbouring_relation
    # the counts take 2% of the precision: 1/sigma_c^2 = 0.02 / sigma_eff(epsilon)^2
    from sdv_dpkme.privacy.accountant import analytic_gaussian_multiplier
    assert counts.noise_multiplier ** -2 == pytest.approx(
        0.02 * analytic_gaussian_multiplier(1.0, report.delta) ** -2, rel=1e-9)
    # independent recomputation: dp-accounting's PLD (REPLACE_ONE) built from the release rows;
    # the old accountant (min of WBK Thm 9 and the triangle bound in numpy, + the plain
    # Gaussian's alpha / 2 sigma^2, Balle et al. 2020 conversion) spends more
    independent = _dp_accounting_epsilon(report.releases, report.gaussian_delta)
    assert report.epsilon_calibrated == pytest.approx(independent, rel=1e-9)
    alphas, rdp = _schedule_rdp(row.noise_multiplier, row.sampling_probability, row.count,
                                plain=counts.noise_multiplier)
    assert _bbghs_conversion(alphas, rdp, report.delta) > independent
    assert 1 - 1e-3 <= report.epsilon_calibrated <= 1.0 and report.bound_used == 'PLD'
    assert any('Class-balance weights' in note for note in report.notes)


def test_without_class_balance_the_report_is_one_poisson_group():
    synth = build(class_balance=0)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    report = synth.get_privacy_report()
    (row,) = report.releases
    independent = _dp_accounting_epsilon(report.releases, report.gaussian_delta)
    assert report.epsilon_calibrated == pytest.approx(independent, rel=1e-9)
    assert 1 - 1e-3 <= independent <= 1.0
    alphas, rdp = _schedule_rdp(row.noise_multiplier, row.sampling_probability, row.count)
    assert _bbghs_conversion(alphas, rdp, report.delta) > independent


def test_domain_discovery_and_dp_sgd_share_one_budget(table):
    synth = build(known_min_max_values={'age': BOUNDS['age'], 'when': BOUNDS['when']},
                  domain_budget_share=0.2)  # 'income' is discovered
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': table})
    report = synth.get_privacy_report()
    names = [r.name for r in report.releases]
    assert names[0] == 'domain_discovery' and names[-1] == 'kip_gradients'
    assert report.guarantee_holds and 0.99 < report.epsilon_spent <= 1.0
    assert synth.get_info()['discovered_columns'] == ['income']


def test_non_private_reference_adds_no_noise():
    synth = build(epsilon=math.inf)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table()})
    report = synth.get_privacy_report()
    assert report.releases[0].noise_std == 0 and report.epsilon_spent == math.inf
    assert np.isfinite(synth._model.rows).all()


def test_options_replaced_after_construction_are_checked(table):
    synth = build()
    with pytest.raises(SynthesizerInputError, match='steps'):
        dataclasses.replace(synth.training, steps=0)
    synth.training = DPHPTraining()  # another method's options
    with pytest.raises(SynthesizerInputError, match='training must be a sdv_dpkme.DPKIPTraining'):
        synth.fit({'t': table})


# ----------------------------------------------------------------- 'auto' settings (issue 40)
def _fit_quietly(synth, table):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': table})
    return synth


def _auto(**kwargs):
    args = dict(steps='auto', sampling_rate='auto')
    args.update(kwargs)
    return build(**args)


def test_the_defaults_are_auto_and_get_parameters_keeps_them():
    synth = make(DPKIPSynthesizer, make_metadata(), epsilon=1.0, target_column='label')
    training = synth.get_parameters()['training']
    assert training.steps == training.sampling_rate == training.support_init == 'auto'


def test_auto_support_init_follows_the_public_expected_batch():
    from sdv_dpkme.engines import kip

    # small tables (a few dozen rows a step) start undecided; Census-sized batches uniform
    assert kip.auto_support_init(4_000, kip.auto_sampling_rate(4_000, 1.0)) == 'centre'
    assert kip.auto_support_init(199_523, kip.auto_sampling_rate(199_523, 1.0)) == 'uniform'
    assert kip.auto_support_init(10_000, 0.199) == 'centre'
    assert kip.auto_support_init(10_000, 0.2) == 'uniform'
    # and the fit resolves it: 200 rows at q = 0.32 is a 64-row batch
    assert _fit_quietly(_auto(steps=2), make_table(n=200)).resolved_parameters()[
        'support_init'] == 'centre'
    assert _fit_quietly(_auto(steps=2, sampling_rate=0.5),
                        make_table(n=4_000)).resolved_parameters()['support_init'] == 'uniform'


def test_auto_settings_are_the_same_on_neighbouring_tables_and_are_reported():
    table = make_table(n=200)
    neighbour = table.copy()
    row = int(np.flatnonzero(table['label'] == 'no')[0])  # flip a label: class counts move
    neighbour.loc[row, ['age', 'income', 'city', 'label']] = [89, 149_000.0, 'Rome', 'yes']
    assert (table['label'] == 'yes').sum() != (neighbour['label'] == 'yes').sum()
    a = _fit_quietly(_auto(), table)
    b = _fit_quietly(_auto(), neighbour)
    assert a.resolved_parameters() == b.resolved_parameters()
    ra, rb = (s.get_privacy_report().releases[-1] for s in (a, b))
    assert ra.details['settings'] == rb.details['settings'] == a.resolved_parameters()
    resolved = a.resolved_parameters()
    # n = 200 is below the smallest expected batch at 0.02 epsilon: q = 64 / n
    assert resolved['sampling_rate'] == pytest.approx(64 / 200)
    assert ra.sampling_probability == resolved['sampling_rate'] and ra.count == resolved['steps']
    assert any("'auto' resolved" in note and 'sampling_rate=0.32' in note
               for note in a.get_privacy_report().notes)
    # the argument, not the resolution
    assert a.get_parameters()['training'].sampling_rate == 'auto'


def test_n_and_epsilon_move_the_auto_rate_as_intended():
    from sdv_dpkme.engines import kip

    rate = kip.auto_sampling_rate
    # more budget: a larger batch at the same noise multiplier
    assert rate(40_000, 0.3) < rate(40_000, 1.0) < rate(40_000, 10.0)
    assert rate(40_000, 1.0) == pytest.approx(0.02)
    # small tables: at least 64 rows expected per step; large ones: at most 4,000
    assert rate(1_000, 1.0) * 1_000 == pytest.approx(64)
    assert rate(4_000, 0.3) > rate(40_000, 0.3)
    assert rate(1_000_000, 10.0) * 1_000_000 == pytest.approx(4_000)
    assert rate(10, 1.0) == 0.5 and rate(200_000, math.inf) * 200_000 == pytest.approx(4_000)
    for n in (1, 50, 4_000, 10**7):
        for eps in (0.01, 1.0, 50.0):
            assert 0 < rate(n, eps) <= 0.5
    with pytest.raises(ValueError):
        rate(0, 1.0)
    # and the fit follows: the same table at a larger epsilon gets the larger rate
    table = make_table(n=200)
    low = _fit_quietly(_auto(epsilon=1.0, steps=2), table).resolved_parameters()
    high = _fit_quietly(_auto(epsilon=50.0, steps=2), table).resolved_parameters()
    assert low['sampling_rate'] == pytest.approx(0.32) and high['sampling_rate'] == 0.5


def test_explicit_settings_override_the_auto_ones():
    synth = _fit_quietly(build(steps=4, sampling_rate=0.25, support_init='uniform'), make_table())
    resolved = synth.resolved_parameters()
    assert resolved['steps'] == 4 and resolved['sampling_rate'] == 0.25
    assert resolved['support_init'] == 'uniform'
    row = synth.get_privacy_report().releases[-1]
    assert row.count == 4 and row.sampling_probability == 0.25
    with pytest.raises(SynthesizerInputError, match='Fit'):
        build().resolved_parameters()
