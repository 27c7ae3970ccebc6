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
from sdv_dpkme.privacy._autodp import mechanism_zoo, transformer_zoo


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
    return transformer_zoo.Composition()(mechs, counts).get_approxDP(delta)


@pytest.mark.filterwarnings('ignore::RuntimeWarning')
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
    assert 0.98 < spent <= 1.0
    expected = _autodp_epsilon([sigma_w], mech.noise_multiplier, 100 / 5000, 200, 1e-5)
    assert spent == pytest.approx(expected, rel=1e-9)
    report = acct.report(noise.describe())
    assert 'without replacement' in report.accountant
    row = report.to_frame().set_index('name').loc['mb']
    assert row['count'] == 200 and row['sampling_probability'] == pytest.approx(0.02)
    # more steps at the same noise would overspend
    assert _autodp_epsilon([sigma_w], mech.noise_multiplier, 0.02, 400, 1e-5) > 1.0


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
