import math
import pickle

import numpy as np
import pytest
import torch

from sdv_dpkme.privacy import (
    BudgetExceededError,
    GaussianMechanism,
    NoiseSource,
    PrivacyAccountant,
    PrivacyReport,
    Release,
    validate_budget,
)
from sdv_dpkme.privacy.report import FIXED_SEED_NOTE
from sdv_dpkme.privacy._autodp import analytic_gaussian_multiplier, mechanism_zoo


def _release(name, sigma, sensitivity=0.01):
    return Release(name, name, 'gaussian', sensitivity, sigma, sigma * sensitivity)


@pytest.mark.parametrize('epsilon', [0.3, 1.0, 10.0])
def test_calibrated_plan_spends_exactly_the_budget_per_autodp(epsilon):
    acct = PrivacyAccountant(epsilon, 1e-5)
    sigmas = acct.calibrate({'w': (0.01, 1), 'sum': (0.6, 1), 'prod': (0.39, 20)})
    for name, count in [('w', 1), ('sum', 1)] + [('prod', 1)] * 20:
        acct.record(_release(name, sigmas[name]))
    all_sigmas = np.array([r.noise_multiplier for r in acct.releases])
    # independent recomputation with autodp: the composition of Gaussians is one Gaussian
    sigma_eff = 1 / math.sqrt(np.sum(all_sigmas**-2.0))
    expected = mechanism_zoo.ExactGaussianMechanism(sigma=sigma_eff).get_approxDP(1e-5)
    report = acct.report('test')
    assert report.epsilon_spent == pytest.approx(expected, rel=1e-9)
    assert epsilon * (1 - 1e-6) <= report.epsilon_spent <= epsilon
    assert len(report.to_frame()) == 22


def test_known_single_release_multiplier():
    # research notes: analytic Gaussian multiplier for (1, 1e-5) is 3.731
    assert analytic_gaussian_multiplier(1.0, 1e-5) == pytest.approx(3.7306, abs=1e-3)


def test_overspending_release_is_refused():
    acct = PrivacyAccountant(1.0, 1e-5)
    sigma = acct.calibrate({'only': (1.0, 1)})['only']
    acct.record(_release('a', sigma))
    with pytest.raises(BudgetExceededError):
        acct.record(_release('b', sigma))
    assert len(acct.releases) == 1


def test_noiseless_release_refused_when_private():
    acct = PrivacyAccountant(1.0, 1e-5)
    with pytest.raises(BudgetExceededError):
        acct.record(_release('a', 0.0))


def test_non_private_mode_adds_no_noise_and_says_so():
    acct = PrivacyAccountant(math.inf, 1e-5)
    assert acct.calibrate({'a': (1.0, 1)}) == {'a': 0.0}
    mech = GaussianMechanism(acct, NoiseSource())
    value = torch.arange(5.0)
    assert torch.equal(mech.release(value, name='a', description='', sensitivity=1.0,
                                    noise_multiplier=0.0), value.double())
    report = acct.report('x')
    assert report.epsilon_spent == math.inf
    assert any('NON-PRIVATE' in n for n in report.notes)


@pytest.mark.parametrize('eps,delta', [(0, 1e-5), (-1, 1e-5), (1, 1), (1, 0), (1, 1.5),
                                       ('1', 1e-5), (1, None), (float('nan'), 1e-5), (True, 1e-5)])
def test_invalid_budgets_raise(eps, delta):
    with pytest.raises(ValueError):
        validate_budget(eps, delta)


def test_gaussian_mechanism_noise_scale():
    acct = PrivacyAccountant(1.0, 1e-5)
    mech = GaussianMechanism(acct, NoiseSource(seed=1))
    out = mech.release(torch.zeros(50_000), name='z', description='', sensitivity=0.5,
                       noise_multiplier=4.0)
    assert out.std().item() == pytest.approx(2.0, rel=0.02)
    assert acct.releases[0].noise_std == pytest.approx(2.0)
    assert acct.releases[0].dimension == 50_000


def test_noise_source_is_independent_of_global_seeds_and_not_picklable():
    torch.manual_seed(0)
    np.random.seed(0)
    a = NoiseSource().normal((10,), 1.0)
    torch.manual_seed(0)
    np.random.seed(0)
    b = NoiseSource().normal((10,), 1.0)
    assert not torch.equal(a, b)
    fixed = [NoiseSource(seed=3).normal((10,), 1.0) for _ in range(2)]
    assert torch.equal(*fixed)
    assert 'TEST ONLY' in NoiseSource(seed=3).describe()
    with pytest.raises(TypeError):
        pickle.dumps(NoiseSource())


def test_report_is_machine_readable():
    acct = PrivacyAccountant(1.0, 1e-5)
    sigma = acct.calibrate({'a': (1.0, 1)})['a']
    acct.record(_release('a', sigma))
    report = acct.report(NoiseSource(seed=1).describe())
    assert not report.guarantee_holds
    data = report.to_dict()
    assert data['releases'][0]['name'] == 'a'
    assert '"epsilon_spent"' in report.to_json()


def test_subsampled_releases_are_refused_until_accounted_for():
    # leak L16: a subsampled release needs an accountant that matches its sampling scheme
    acct = PrivacyAccountant(1.0, 1e-5)
    release = _release('batch', 5.0)
    release.sampling = 'poisson(0.01)'
    with pytest.raises(NotImplementedError):
        acct.record(release)


def test_later_plan_spends_exactly_what_earlier_releases_left():
    acct = PrivacyAccountant(1.0, 1e-5)
    first = acct.calibrate({'discovery': (1.0, 1)}, fraction=0.1)['discovery']
    acct.record(_release('discovery', first))
    assert acct.epsilon_spent() < 0.5
    rest = acct.calibrate({'a': (0.5, 1), 'b': (0.5, 3)})
    acct.record(_release('a', rest['a']))
    for _ in range(3):
        acct.record(_release('b', rest['b']))
    assert 1.0 * (1 - 1e-6) <= acct.epsilon_spent() <= 1.0
    with pytest.raises(BudgetExceededError):
        acct.calibrate({'more': (1.0, 1)})
    with pytest.raises(ValueError):
        acct.calibrate({'a': (1.0, 1)}, fraction=0)


def test_reserved_delta_is_taken_off_the_gaussian_part():
    acct = PrivacyAccountant(1.0, 1e-5)
    acct.reserve_delta(1e-6, 'threshold', 'a rare value passes a threshold')
    assert acct.gaussian_delta == pytest.approx(9e-6)
    sigma = acct.calibrate({'a': (1.0, 1)})['a']
    assert sigma == pytest.approx(analytic_gaussian_multiplier(1.0, 9e-6))
    acct.record(_release('a', sigma))
    expected = mechanism_zoo.ExactGaussianMechanism(sigma=sigma).get_approxDP(9e-6)
    report = acct.report('test')
    assert report.epsilon_spent == pytest.approx(expected, rel=1e-12) and expected <= 1.0
    assert report.delta == 1e-5 and report.gaussian_delta == pytest.approx(9e-6)
    assert report.reserved_delta[0].name == 'threshold'
    assert report.to_dict()['reserved_delta'][0]['delta'] == 1e-6
    assert 'reserved delta=1e-06' in str(report)
    with pytest.raises(RuntimeError):
        acct.reserve_delta(1e-7, 'late')  # calibrations already depend on the Gaussian delta


@pytest.mark.parametrize('amount', [0, -1e-6, 1e-5, 2e-5])
def test_invalid_reservations_are_refused(amount):
    with pytest.raises(ValueError):
        PrivacyAccountant(1.0, 1e-5).reserve_delta(amount, 'x')


def test_public_dimension_override_and_details():
    acct = PrivacyAccountant(1.0, 1e-5)
    mech = GaussianMechanism(acct, NoiseSource(seed=0))
    mech.release(torch.zeros(7), name='h', description='', sensitivity=1.0,
                 noise_multiplier=10.0, dimension=3, details={'columns': ['a']})
    assert acct.releases[0].dimension == 3 and acct.releases[0].details == {'columns': ['a']}


def _spent_plan():
    acct = PrivacyAccountant(1.0, 1e-5)
    sigma = acct.calibrate({'a': (1.0, 1)})['a']
    acct.record(_release('a', sigma))
    return acct


@pytest.mark.parametrize('source', [NoiseSource(seed=1), NoiseSource(seed=1).describe()])
def test_fixed_noise_seed_reports_no_guarantee(source):
    # finding 7: a fixed seed makes the noise known, so no finite epsilon holds
    acct = _spent_plan()
    report = acct.report(source, notes=['other'])
    assert report.epsilon_spent == math.inf and not report.guarantee_holds
    assert 1.0 * (1 - 1e-6) <= report.epsilon_calibrated <= 1.0
    assert report.epsilon_calibrated == acct.epsilon_spent()
    assert report.notes == ['other', FIXED_SEED_NOTE]
    text = str(report)
    assert 'NOT differentially private' in text and 'spent epsilon=inf' in text
    assert f'calibrated epsilon={report.epsilon_calibrated:.6g}' in text
    data = report.to_dict()
    assert data['epsilon_spent'] == math.inf and data['epsilon_calibrated'] <= 1.0
    assert not data['guarantee_holds'] and '"epsilon_calibrated"' in report.to_json()
    assert report.noise_source.startswith('fixed noise seed (TEST ONLY')


def test_secret_noise_reports_the_calibrated_spend():
    source = NoiseSource()
    report = _spent_plan().report(source)
    assert report.guarantee_holds and report.noise_source == source.describe()
    assert report.epsilon_spent == report.epsilon_calibrated <= 1.0
    assert FIXED_SEED_NOTE not in report.notes
    assert f'calibrated epsilon={report.epsilon_calibrated:.6g}' in str(report)


def test_report_built_directly_defaults_epsilon_calibrated():
    report = PrivacyReport(1.0, 1e-5, 0.5, 'replace-one', 'test', 'secret')
    assert report.epsilon_calibrated == 0.5 and report.epsilon_spent == 0.5
