"""The empirical privacy audit: its statistics against known values, the real synthesizers pass,
and deliberately broken fits (noise 10x too small, a sensitivity understated 4x, the projection
skipped) are caught, their measured lower bound above the claimed epsilon.

The broken variants monkeypatch the real code, so the audit sees the real fit path. Stand-in
table: rows of the bundled PUBLIC Adult sample (the audit never runs on private rows).
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdv_dpkme import (
    DPHPSynthesizer,
    DPKIPSynthesizer,
    DPMERFSynthesizer,
    DPReweightingSynthesizer,
)
from sdv_dpkme.datasets import load_adult_sample
from sdv_dpkme.engines import kme, kme_pairs, kme_plan, reweighting
from sdv_dpkme.features import blocks, pairwise
from sdv_dpkme.privacy import audit_stats as st
from sdv_dpkme.privacy import mechanisms
from sdv_dpkme.privacy._autodp import gaussian_epsilon as autodp_epsilon
from sdv_dpkme.privacy.audit import default_canary, run_audit
from sdv_dpkme.privacy.recorder import active_recorder, recording
from tests.conftest import make

EPSILON = 1.0
# plan='fixed': the 120-row stand-in would lose its noise-dominated terms (issue 42), and the
# audit covers every release kind
SMALL = {
    DPHPSynthesizer: dict(steps=3, sum_order=10, product_order=3, product_redraws=2,
                          batch_size=64, generator_dims=(16,), latent_dim=8, plan='fixed'),
    DPMERFSynthesizer: dict(steps=3, n_features=64, batch_size=64, generator_dims=(16,),
                            latent_dim=8, plan='fixed'),
    DPKIPSynthesizer: dict(support_per_class=2, steps=3, sampling_rate=0.1),
    DPReweightingSynthesizer: dict(n_features=64, n_points=20, steps=3),
}


@pytest.fixture(scope='module')
def adult():
    data, metadata, domain = load_adult_sample()
    return data.head(120).reset_index(drop=True), metadata, domain


def factory(cls, adult, **extra):
    _, metadata, domain = adult

    def build():
        return make(cls, metadata, epsilon=EPSILON, domain=domain, target_column='income',
                   verbose=False, random_state=0, **{**SMALL[cls], **extra})
    return build


def audit(cls, adult, trials=4, **kwargs):
    return run_audit(factory(cls, adult), adult[0], table_name='adult',
                     stand_in='first 120 rows of the public Adult sample', trials=trials,
                     confidence=0.99, **kwargs)


# ------------------------------------------------------------------- statistics, known values
@pytest.mark.parametrize('mu', [0.1, 0.5, 1.0, 3.0])
@pytest.mark.parametrize('delta', [1e-5, 1e-3])
def test_gaussian_epsilon_matches_autodp(mu, delta):
    assert st.gaussian_epsilon(mu, delta) == pytest.approx(autodp_epsilon(1 / mu, delta), rel=1e-4)
    assert st.gaussian_delta(mu, st.gaussian_epsilon(mu, delta)) <= delta * (1 + 1e-9)


def test_clopper_pearson_known_values():
    # k = 0 of n: the upper bound solves (1 - p)^n = alpha; k = n: the lower solves p^n = alpha
    assert st.cp_upper(0, 20, 0.05) == pytest.approx(1 - 0.05 ** (1 / 20))
    assert st.cp_lower(20, 20, 0.05) == pytest.approx(0.05 ** (1 / 20))
    assert st.cp_upper(3, 10, 0.05) == pytest.approx(stats.beta.ppf(0.95, 4, 7))
    # perfect separation, 20 trials a side: log(lower/upper) at alpha/4 for each rate
    a = 0.05 / 4
    expected = math.log((a ** (1 / 20) - 1e-5) / (1 - a ** (1 / 20)))
    bound = st.clopper_pearson_epsilon_lower_bound(np.zeros(20), np.ones(20), 0.5, 1e-5, 0.05)
    assert bound == pytest.approx(expected)
    # no separation: no bound
    assert st.clopper_pearson_epsilon_lower_bound(np.zeros(20), np.zeros(20), 0.5, 1e-5, .05) == 0


def test_guessing_bound_known_values():
    # all n guesses right, delta = 0: the bound solves p^n = alpha with p = e^eps / (1 + e^eps)
    p = 0.05 ** (1 / 30)
    assert st.guessing_epsilon_lower_bound(30, 30, 0.0, 0.05) == pytest.approx(
        math.log(p / (1 - p)), abs=1e-6)
    assert st.guessing_epsilon_lower_bound(15, 30, 1e-5, 0.05) == 0.0
    assert st.guess_success_bound(0.0, 0.0) == 0.5


def test_guessing_bound_is_valid_for_a_gaussian_mechanism():
    """Simulated games on an exact Gaussian mechanism: the bound stays below its true epsilon."""
    rng = np.random.default_rng(0)
    mu, delta, n = 1.0, 1e-5, 200
    true_eps = st.gaussian_epsilon(mu, delta)
    for _ in range(50):
        bits = rng.integers(0, 2, n)
        right = int(((rng.normal(mu * bits, 1) > mu / 2) == bits).sum())
        assert st.guessing_epsilon_lower_bound(right, n, delta, 0.05) <= true_eps


def test_noise_scale_upper_covers_and_detects():
    rng = np.random.default_rng(1)
    assert st.noise_scale_upper(rng.normal(0, 2.0, 5000), 2.0, 0.01) >= 1.0
    assert st.noise_scale_upper(rng.normal(0, 0.2, 5000), 2.0, 0.01) < 0.11


def test_recorder_is_off_by_default_and_context_local():
    from sdv_dpkme.privacy import Ledger

    ledger = Ledger.open(10.0, 1e-5)
    assert active_recorder() is None
    with recording() as rec:
        ledger.mechanism.release(np.ones(3), name='x', description='', sensitivity=1.0,
                                 noise_multiplier=2.0)
    assert active_recorder() is None
    assert [r.name for r in rec.releases] == ['x'] and rec.releases[0].std == 2.0
    with pytest.raises(TypeError):
        import pickle
        pickle.dumps(rec)


def test_default_canary_uses_only_stand_in_values(adult):
    table = adult[0]
    canary = default_canary(table)
    for column in table.columns:
        assert canary[column] in set(table[column])
    assert canary['income'] != table.loc[0, 'income']


# ------------------------------------------------------------------ the real classes pass
@pytest.mark.parametrize('cls', list(SMALL), ids=lambda c: c.__name__)
def test_real_synthesizers_stay_below_their_claim(cls, adult):
    # DP-KIP: each fit calibrates its DP-SGD noise first (seconds); fewer trials keep CI fast
    result = audit(cls, adult, trials=2 if cls is DPKIPSynthesizer else 4)
    assert result.claimed_epsilon == EPSILON
    assert 0 <= result.epsilon_lower_bound <= EPSILON
    assert result.releases_audited  # every class makes at least one recorded release
    # the recorded noise is as claimed: its scale bound is not below 1 by more than chance
    assert all(k > 0.9 for k in result.noise_scale_upper.values())


# --------------------------------------------------------------- broken variants are caught
def test_noise_ten_times_too_small_is_caught(adult, monkeypatch):
    real = mechanisms.NoiseSource.normal
    monkeypatch.setattr(mechanisms.NoiseSource, 'normal',
                        lambda self, shape, std: real(self, shape, std) * 0.1)
    result = audit(DPMERFSynthesizer, adult)
    assert result.exceeds_claim, result.bounds
    assert result.bounds['gaussian'] > EPSILON


@pytest.mark.parametrize('cls', [DPHPSynthesizer, DPMERFSynthesizer], ids=lambda c: c.__name__)
def test_sensitivity_understated_four_times_is_caught(cls, adult, monkeypatch):
    real = kme.replace_sensitivity
    for module in (kme, kme_plan, kme_pairs):  # every KME release site
        monkeypatch.setattr(module, 'replace_sensitivity', lambda fmap: real(fmap) / 4)
    result = audit(cls, adult, trials=0)
    assert result.exceeds_claim, result.bounds


def _skip_projection(monkeypatch):
    monkeypatch.setattr(blocks, 'project_unit_ball', lambda f: f)
    monkeypatch.setattr(blocks, 'project_block', lambda f, b: f)
    monkeypatch.setattr(pairwise, 'project_block', lambda f, b: f)
    monkeypatch.setattr(reweighting, 'project_unit_ball', lambda f: f)


def garbage_fit(canary):
    """Fit through SDV's processed-data entry path; the canary's row gets every one-hot cell of
    every categorical column set to 1: inside the unit box, so only the per-block projection
    bounds its features."""
    def fit(synthesizer, frame):
        processed = synthesizer.preprocess({'adult': frame})['adult']
        if frame.loc[0, 'income'] == canary['income']:  # D': the canary sits in row 0
            cells = [c for c in processed.columns if '.value' in c]
            processed.loc[processed.index[0], cells] = 1.0
        synthesizer.fit_processed_data({'adult': processed})
    return fit


@pytest.mark.parametrize('project', [False, True], ids=['projection_skipped', 'real'])
def test_skipped_projection_is_caught(project, adult, monkeypatch):
    if not project:
        _skip_projection(monkeypatch)
    canary = default_canary(adult[0])
    result = audit(DPMERFSynthesizer, adult, trials=0, canary=canary, fit=garbage_fit(canary))
    if project:  # the projection bounds the garbage row: the claim holds
        assert result.epsilon_lower_bound <= EPSILON
    else:
        assert result.exceeds_claim, result.bounds


def test_cli_audit_writes_bound_next_to_claim(tmp_path):
    import json

    from sdv_dpkme.cli import main

    out, page = tmp_path / 'audit.json', tmp_path / 'audit.html'
    main(['audit', '-s', 'dpmerf', '--rows', '120', '--trials', '2', '-p', 'steps=3',
          '-p', 'n_features=64', '--epsilon', '2', '--out', str(out), '--html', str(page), '-q'])
    result = json.loads(out.read_text())
    for key in ('synthesizer', 'settings', 'claimed_epsilon', 'delta', 'method', 'trials',
                'confidence', 'epsilon_lower_bound', 'statistic', 'stand_in', 'bounds'):
        assert key in result
    assert result['claimed_epsilon'] == 2.0 and result['trials'] == 2
    assert 0 <= result['epsilon_lower_bound'] <= 2.0
    assert 'Adult sample' in result['stand_in']
    text = page.read_text()
    assert 'Measured lower bound on epsilon' in text and 'Claimed epsilon' in text


def test_synthesizer_report_shows_the_audit_next_to_the_ledger(adult):
    from sdv_dpkme.evaluation.html_report import build_report

    result = audit(DPMERFSynthesizer, adult, trials=0).to_dict()
    synthesizer = factory(DPMERFSynthesizer, adult)()
    synthesizer.fit({'adult': adult[0]})
    page = build_report(synthesizer, num_rows=50, audit=result)
    assert 'id="privacy-audit"' in page and 'Measured lower bound on epsilon' in page
    assert page.index('id="privacy-ledger"') < page.index('id="privacy-audit"')


@pytest.mark.slow
def test_cli_audit_on_a_declared_public_table_with_black_box_fits(tmp_path):
    import json

    from sdv_dpkme.cli import main
    from tests.cli_helpers import write_adult_files

    files = write_adult_files(tmp_path, train_rows=120, holdout_rows=10)
    out = tmp_path / 'audit.json'
    main(['audit', '-s', 'reweighting', '--data', str(files['train']), '--metadata',
          str(files['metadata']), '--domain', str(files['domain']), '--target', 'income',
          '--trials', '2', '--black-box-fits', '2', '-p', 'steps=3', '-p', 'n_features=64',
          '--out', str(out), '-q'])
    result = json.loads(out.read_text())
    assert 'declared PUBLIC' in result['stand_in']
    assert result['black_box']['fits'] == 2 and 'black_box' in result['bounds']
    assert result['epsilon_lower_bound'] <= result['claimed_epsilon']


def test_cli_audit_exits_1_when_the_claim_is_broken(tmp_path, monkeypatch):
    from sdv_dpkme.cli import main

    real = mechanisms.NoiseSource.normal
    monkeypatch.setattr(mechanisms.NoiseSource, 'normal',
                        lambda self, shape, std: real(self, shape, std) * 0.1)
    out = tmp_path / 'audit.json'
    with pytest.raises(SystemExit) as exit_info:
        main(['audit', '-s', 'dpmerf', '--rows', '120', '--trials', '0', '-p', 'steps=3',
              '-p', 'n_features=64', '--out', str(out), '-q'])
    assert exit_info.value.code == 1 and out.exists()


def test_white_box_fits_stop_after_their_releases(adult):
    """The engine's releases_done() ends a fit inside an audit (no training), and is a no-op
    outside one."""
    build = factory(DPMERFSynthesizer, adult)
    synthesizer = build()
    with recording(stop_when_done=True) as rec:
        synthesizer.fit({'adult': adult[0]})
    assert [r.name for r in rec.releases] == ['class_proportions', 'embedding', 'marginals',
                                              'pairs', 'selected_pairs']
    assert not synthesizer._fitted
    synthesizer = build()
    synthesizer.fit({'adult': adult[0]})
    assert synthesizer._fitted
