"""Accounting of DP-MERF's minibatch releases (uniform sampling without replacement)."""

import math

import numpy as np
import pytest
import torch

from sdv_dpkme.privacy import (
    GaussianMechanism,
    NoiseSource,
    PrivacyAccountant,
    Release,
    SubsampledGaussianMechanism,
)
from dp_accounting import dp_event
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import rdp_privacy_accountant

from sdv_dpkme.privacy._autodp import approx_dp, mechanism_zoo, transformer_zoo
from sdv_dpkme.privacy.subsampled import RDP_ORDERS, SAMPLING_WOR, epsilon_bounds


def _autodp_epsilon(plain_sigmas, sigma, prob, steps, delta):
    """Independent recomputation: every release as its own autodp mechanism, RDP composition."""
    mechs, counts = [], []
    for s in plain_sigmas:
        g = mechanism_zoo.GaussianMechanism(sigma=s)
        g.neighboring = 'replace_one'
        mechs.append(g)
        counts.append(1)
    base = mechanism_zoo.GaussianMechanism(sigma=sigma)
    base.neighboring = 'replace_one'
    mechs.append(transformer_zoo.AmplificationBySampling(PoissonSampling=False)(base, prob))
    counts.append(steps)
    return approx_dp(transformer_zoo.Composition()(mechs, counts), delta)


def _dp_accounting_epsilon(plain_sigmas, sigma, population, sample_size, steps, delta):
    """Independent recomputation with dp-accounting's RDP accountant (REPLACE_ONE, multipliers
    relative to the replace-one sensitivity), the plain releases as one Gaussian."""
    events = [dp_event.SelfComposedDpEvent(dp_event.SampledWithoutReplacementDpEvent(
        population, sample_size, dp_event.GaussianDpEvent(sigma)), steps)]
    if plain_sigmas:
        sigma_eff = sum(s**-2 for s in plain_sigmas) ** -0.5
        events.insert(0, dp_event.GaussianDpEvent(sigma_eff))
    acct = rdp_privacy_accountant.RdpAccountant(
        orders=list(RDP_ORDERS), neighboring_relation=NeighboringRelation.REPLACE_ONE)
    acct.compose(dp_event.ComposedDpEvent(events))
    return acct.get_epsilon(delta)


def test_minibatch_schedule_spends_the_budget_and_matches_autodp():
    acct = PrivacyAccountant(1.0, 1e-5)
    noise = NoiseSource(seed=0)
    plain = GaussianMechanism(acct, noise)
    sigma_w = acct.calibrate({'w': (1.0, 1)}, fraction=0.01)['w']
    plain.release(np.array([0.3, 0.7]), name='w', description='', sensitivity=0.1,
                  noise_multiplier=sigma_w)
    mech = SubsampledGaussianMechanism(
        acct, noise, name='mb', description='', sensitivity=2 / 100, sample_size=100,
        population=5000, count=200,
    )
    spent = acct.epsilon_spent()
    assert 1 - 1e-3 <= spent <= 1.0
    # the min of both RDP bounds, each recomputed independently: here dp-accounting's (WBK Thm
    # 27) is the tighter one, autodp's (Thm 9) valid but looser
    autodp = _autodp_epsilon([sigma_w], mech.noise_multiplier, 100 / 5000, 200, 1e-5)
    dpa = _dp_accounting_epsilon([sigma_w], mech.noise_multiplier, 5000, 100, 200, 1e-5)
    assert spent == pytest.approx(dpa, rel=1e-9) and dpa < autodp
    report = acct.report(noise.describe())
    assert 'without replacement' in report.accountant
    assert report.bound_used == 'RDP (dp-accounting)'
    assert report.epsilon_bounds['RDP (autodp)'] == pytest.approx(autodp, rel=1e-9)
    row = report.to_frame().set_index('name').loc['mb']
    assert row['count'] == 200 and row['sampling_probability'] == pytest.approx(0.02)
    # more steps at the same noise would overspend
    assert _dp_accounting_epsilon([sigma_w], mech.noise_multiplier, 5000, 100, 400, 1e-5) > 1.0


def test_minibatch_releases_are_capped_and_batches_are_secret_and_exact():
    acct = PrivacyAccountant(2.0, 1e-5)
    mech = SubsampledGaussianMechanism(
        acct, NoiseSource(seed=3), name='mb', description='', sensitivity=0.1,
        sample_size=7, population=50, count=2,
    )
    batch = mech.sample_batch()
    assert len(batch) == 7 and len(set(batch.tolist())) == 7 and int(batch.max()) < 50
    out = mech.release(torch.zeros(1000))
    assert out.std() == pytest.approx(mech.std, rel=0.1)
    mech.release(torch.zeros(3))
    with pytest.raises(RuntimeError):
        mech.release(torch.zeros(3))


def test_unknown_sampling_scheme_refused():
    acct = PrivacyAccountant(1.0, 1e-5)
    with pytest.raises(NotImplementedError):
        acct.record(Release('x', '', 'gaussian', 1.0, 5.0, 5.0, sampling='poisson',
                            sampling_probability=0.1))


def test_non_private_minibatch_adds_no_noise():
    acct = PrivacyAccountant(math.inf, 1e-5)
    mech = SubsampledGaussianMechanism(
        acct, NoiseSource(), name='mb', description='', sensitivity=0.1, sample_size=5,
        population=50, count=3,
    )
    value = torch.arange(4.0)
    assert torch.equal(mech.release(value), value.double())


def _exact_epsilon(plain_sigmas, sigma, steps, delta):
    """Independent recomputation of the bound that ignores amplification: one exact Gaussian."""
    precision = sum(s**-2 for s in plain_sigmas) + steps / sigma**2
    return mechanism_zoo.ExactGaussianMechanism(sigma=precision**-0.5).get_approxDP(delta)


def _minibatch_plan(plain_fraction, sample_size, population, count):
    acct = PrivacyAccountant(1.0, 1e-5)
    sigma_w = acct.calibrate({'w': (1.0, 1)}, fraction=plain_fraction)['w']
    acct.record(Release('w', '', 'gaussian', 0.1, sigma_w, 0.1 * sigma_w))
    mech = SubsampledGaussianMechanism(
        acct, NoiseSource(seed=0), name='mb', description='', sensitivity=2 / sample_size,
        sample_size=sample_size, population=population, count=count,
    )
    return acct, sigma_w, mech.noise_multiplier


def test_large_batches_use_the_exact_gaussian_bound_when_it_is_tighter():
    # finding 8: DP-MERF's default minibatch plan (plain releases take 31% of the precision,
    # batches of 2000 of 3000 rows). RDP with amplification was looser than ignoring amplification,
    # so the old calibration (RDP only) added more noise than needed.
    acct, sigma_w, sigma = _minibatch_plan(0.31, 2000, 3000, 50)
    rdp = _autodp_epsilon([sigma_w], sigma, 2000 / 3000, 50, 1e-5)
    exact = _exact_epsilon([sigma_w], sigma, 50, 1e-5)
    assert 1.0 * (1 - 1e-6) <= exact <= 1.0 < rdp  # calibrated on the exact bound
    # so the RDP-only calibration (which needs rdp <= 1, rdp decreasing in sigma) gave a larger
    # sigma; measured: 35.90 before, 31.76 now
    assert sigma < 33
    spent = acct.epsilon_spent()
    assert spent == pytest.approx(min(rdp, exact), rel=1e-9)
    report = acct.report(NoiseSource().describe())
    assert report.epsilon_spent == spent and report.epsilon_calibrated == spent
    assert 'without replacement' in report.accountant
    assert 'the tighter one here: exact Gaussian' in report.accountant


def test_small_sampling_rates_use_the_tighter_rdp_bound():
    acct = PrivacyAccountant(1.0, 1e-5)
    sigma = acct.calibrate_subsampled(0.05, 50)
    dpa = _dp_accounting_epsilon([], sigma, 100, 5, 50, 1e-5)
    autodp = _autodp_epsilon([], sigma, 0.05, 50, 1e-5)
    exact = _exact_epsilon([], sigma, 50, 1e-5)
    assert 1 - 1e-3 <= dpa <= 1.0 < min(autodp, exact)  # dp-accounting's RDP is the tighter
    # the smallest sigma within the calibration tolerance
    assert _dp_accounting_epsilon([], sigma / 1.003, 100, 5, 50, 1e-5) > 1.0
    acct.record(Release('mb', '', 'gaussian', 0.1, sigma, 0.1 * sigma, count=50,
                        sampling='uniform without replacement', sampling_probability=0.05))
    assert acct.epsilon_spent() == pytest.approx(dpa, rel=1e-9)
    report = acct.report(NoiseSource().describe())
    assert 'the tighter one here: RDP (dp-accounting)' in report.accountant


@pytest.mark.parametrize('sigma,prob', [(3.0, 0.02), (30.0, 0.6)])
def test_composed_epsilon_is_the_min_of_the_bounds(sigma, prob):
    bounds = epsilon_bounds(5.0, [(sigma, prob, 20)], 1e-5)
    assert bounds['RDP (autodp)'] == pytest.approx(_autodp_epsilon([5.0], sigma, prob, 20, 1e-5),
                                                   rel=1e-9)
    population, size = {0.02: (500, 10), 0.6: (5, 3)}[prob]
    assert bounds['RDP (dp-accounting)'] == pytest.approx(
        _dp_accounting_epsilon([5.0], sigma, population, size, 20, 1e-5), rel=1e-9)
    assert 'PLD' not in bounds  # dp-accounting's PLD does not model sampling without replacement
    assert bounds['exact Gaussian'] == pytest.approx(_exact_epsilon([5.0], sigma, 20, 1e-5),
                                                     rel=1e-9)
    acct = PrivacyAccountant(1000.0, 1e-5)  # the accountant spends the min of both
    acct.record(Release('plain', '', 'gaussian', 1.0, 5.0, 5.0))
    acct.record(Release('mb', '', 'gaussian', 1.0, sigma, sigma, count=20,
                        sampling=SAMPLING_WOR, sampling_probability=prob))
    assert acct.epsilon_spent() == min(bounds.values())


@pytest.mark.parametrize('prob, count, sampling', [
    (0.02, 100, 'poisson'),  # DP-KIP's default schedule: autodp's order search warned here
    (1.0, 10, 'poisson'),  # q = 1: autodp's curves take log(0)
    (2000 / 3000, 50, 'wor'),
])
def test_calibration_emits_no_float_warnings(prob, count, sampling):
    import warnings

    from sdv_dpkme.privacy.subsampled import SAMPLING_POISSON, calibrate_subsampled

    scheme = SAMPLING_POISSON if sampling == 'poisson' else SAMPLING_WOR
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        sigma = calibrate_subsampled(0.98, 1e-5, None, prob, count, sampling=scheme)
        spent = epsilon_bounds(None, [(sigma, prob, count, scheme)], 1e-5)
    assert 0 < min(spent.values()) <= 0.98
