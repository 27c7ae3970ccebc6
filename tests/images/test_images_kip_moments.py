"""KIP from released moments (``mechanism='moments'``): sensitivities over extreme and
neighbouring inputs, the packing, the loss identity, accounting, saved models and input errors."""

import math
import pickle

import numpy as np
import pytest
import torch

from sdv_dpkme.engines import kip_moments as km
from sdv_dpkme.engines.kip import centred_one_hot
from sdv_dpkme.images import DPKIPScatterNet, ImageInputError
from sdv_dpkme.images.scattering import ScatterNet
from sdv_dpkme.privacy import Ledger
from sdv_dpkme.privacy.testing import fixed_noise
from tests.privacy.test_poisson import _gdp_epsilon

# the default mechanism; pixel_prior=None: these tests read the moments release alone
# (test_images_pixel_prior: the prior's release beside it)
MOM = dict(images_per_class=2, moment_steps=20, learning_rate=0.05,
           pixel_range=(0, 16), random_state=0, pixel_prior=None)


def _extreme_rows(p=12, seed=0):
    """Unit rows and the inputs that stress the bounds: opposite, orthogonal, equal, zero, huge,
    tiny, inf-overflowing."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(p, generator=g, dtype=torch.float64)
    b = torch.randn(p, generator=g, dtype=torch.float64)
    b = b - (b @ a) / (a @ a) * a  # orthogonal to a
    raw = torch.stack([a, -a, b, a, torch.zeros(p), a * 1e300, a * 1e-300,
                       torch.full((p,), 1e308, dtype=torch.float64), torch.randn(p, generator=g, dtype=torch.float64)])
    return km.unit_rows(raw)


def test_unit_rows_bound_every_norm_even_for_extreme_inputs():
    rows = _extreme_rows()
    norms = rows.norm(dim=1)
    assert torch.isfinite(rows).all()
    assert float(norms.max()) <= 1 + 1e-12
    assert float(norms[4]) == 0.0  # a zero row stays zero
    assert torch.allclose(norms[[0, 1, 2, 3, 8]], torch.full((5,), km.UNIT, dtype=torch.float64))


def test_packing_keeps_the_frobenius_norm_and_round_trips():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(7, 7, generator=g, dtype=torch.float64)
    sym = a + a.T
    packed = km.pack_symmetric(sym)
    assert packed.shape == (7 * 8 // 2,)
    assert float(packed.norm()) == pytest.approx(float(sym.norm()), rel=1e-12)
    assert torch.allclose(km.unpack_symmetric(packed, 7), sym)


def _joint(row, label, c):
    return km.joint_vector(row.T @ row, row.T @ label, c)


@pytest.mark.parametrize('k', [2, 10])
@pytest.mark.parametrize('c', [0.5, km.GRAM_WEIGHT, 0.99])
def test_joint_release_sensitivity_holds_and_is_tight(k, c):
    rows = _extreme_rows()
    # the worst pair: one label, a . b = -(1 - c) / c (from the bound's proof)
    a, b = rows[0], rows[2]
    u = -(1 - c) / c
    worst_row = km.unit_rows(u * a + math.sqrt(1 - u * u) * b)
    rows = torch.cat([rows, worst_row[None]])
    ys = centred_one_hot(torch.arange(k), k)
    worst = 0.0
    for i in range(len(rows)):
        for j in range(len(rows)):
            for yi in range(k):
                for yj in range(k):
                    moved = _joint(rows[i:i + 1], ys[yi:yi + 1], c) \
                        - _joint(rows[j:j + 1], ys[yj:yj + 1], c)
                    worst = max(worst, float(moved.norm()))
    assert worst <= km.moments_sensitivity() * (1 + 1e-12)
    assert worst == pytest.approx(km.moments_sensitivity(), rel=1e-5)


def test_joint_vector_round_trips_and_scales_as_documented():
    g = torch.Generator().manual_seed(5)
    phi = km.unit_rows(torch.randn(40, 6, generator=g, dtype=torch.float64))
    y = centred_one_hot(torch.randint(0, 4, (40,), generator=g), 4)
    gram, cross = km.feature_moments(phi, y)
    v = km.joint_vector(gram, cross, 0.7)
    assert v.shape == (6 * 7 // 2 + 6 * 4,)
    back = km.split_joint(v, 6, 4, 0.7)
    assert torch.allclose(back[0], gram) and torch.allclose(back[1], cross)
    # v is the phi-phi and phi-y blocks of sum psi psi^T, psi = [sqrt(c) phi, sqrt(1-c) y/|y|]
    psi = torch.cat([math.sqrt(0.7) * phi, math.sqrt(0.3) * y / math.sqrt(0.75)], dim=1)
    full = psi.T @ psi
    blocks = full[:6, :6].norm() ** 2 + 2 * full[:6, 6:].norm() ** 2
    assert float(v.norm() ** 2) == pytest.approx(float(blocks), rel=1e-12)


def test_float32_unit_rows_never_exceed_norm_one():
    # the bounds need ||phi|| <= 1 exactly; plain x / ||x|| in float32 overshoots by rounding
    g = torch.Generator().manual_seed(4)
    raw = torch.randn(20_000, 300, generator=g) * torch.logspace(-3, 3, 20_000)[:, None]
    norms = km.unit_rows(raw.float()).double().norm(dim=1)
    assert float(norms.max()) <= 1.0
    assert float(norms.min()) > 1 - 1e-5


def test_neighbouring_image_sets_move_the_released_vector_within_the_sensitivity(digits):
    x, y = digits
    x, y = x[:200].astype(np.float32) / 16, y[:200]
    net = ScatterNet((8, 8))
    labels = centred_one_hot(torch.as_tensor(y), 10)
    base = km.feature_moments(km.unit_rows(net.batched(torch.from_numpy(x)[:, None])), labels)
    for image, label in ((np.ones((8, 8)), (y[0] + 5) % 10), (np.zeros((8, 8)), y[0]),
                         (1 - x[0], y[0]), (np.eye(8), (y[0] + 1) % 10)):
        other_x, other_y = x.copy(), np.array(y)
        other_x[0], other_y[0] = image, label
        other = km.feature_moments(km.unit_rows(net.batched(torch.from_numpy(other_x)[:, None])),
                                   centred_one_hot(torch.as_tensor(other_y), 10))
        moved = km.joint_vector(*other, km.GRAM_WEIGHT) - km.joint_vector(*base, km.GRAM_WEIGHT)
        assert float(moved.norm()) <= km.moments_sensitivity() * (1 + 1e-9)


def test_release_refuses_rows_above_unit_norm_and_labels_not_centred():
    ledger = Ledger.open(1.0, 1e-5)
    labels = centred_one_hot(torch.arange(5) % 2, 2)
    for phi in (torch.ones(5, 4, dtype=torch.float64),  # norm 2
                km.unit_rows(torch.ones(5, 4)).index_put_((torch.tensor([2]),), torch.full(
                    (4,), float('nan')))):  # a NaN row would turn the noisy sums into NaN
        with pytest.raises(ValueError, match='norm <= 1'):
            km.release_moments(phi, labels, ledger)
    # plain one-hot labels have norm 1 > sqrt(1 - 1/K): the cross block's scale assumes the latter
    with pytest.raises(ValueError, match='centred one-hot'):
        km.release_moments(km.unit_rows(torch.ones(5, 4)), torch.eye(2)[torch.arange(5) % 2],
                           ledger)
    assert not ledger.accountant.releases


def test_the_loss_is_the_whole_data_kip_loss_without_noise():
    g = torch.Generator().manual_seed(2)
    phi = km.unit_rows(torch.randn(300, 16, generator=g, dtype=torch.float64))
    y = centred_one_hot(torch.randint(0, 3, (300,), generator=g), 3)
    support = km.unit_rows(torch.randn(6, 16, generator=g, dtype=torch.float64))
    ys = centred_one_hot(torch.arange(6) % 3, 3)
    gram, cross = km.loss_matrices(*km.feature_moments(phi, y), 300, ridge=0.0)
    w = km.support_weights(support, ys, 1e-3)
    direct = ((y - phi @ w) ** 2).sum(1).mean() - (y ** 2).sum(1).mean()
    assert float(km.moment_loss(support, ys, gram, cross, 1e-3)) == pytest.approx(
        float(direct), rel=1e-9, abs=1e-12)


def test_psd_projection_keeps_the_loss_bounded_below():
    g = torch.Generator().manual_seed(3)
    noise = torch.randn(10, 10, generator=g, dtype=torch.float64)
    gram, _ = km.loss_matrices(noise + noise.T, torch.zeros(10, 2, dtype=torch.float64), 1, 1e-3)
    assert float(torch.linalg.eigvalsh(gram).min()) >= 1e-3 * (1 - 1e-9)


@pytest.fixture(scope='module')
def fitted(digits):
    x, y = digits
    return DPKIPScatterNet(1.0, 1e-5, **MOM).fit(x[:1500], y[:1500])


def test_one_joint_release_accounted_as_one_exact_gaussian(fitted):
    report = fitted.privacy_report_
    (release,) = report.releases
    assert release.name == km.MOMENTS
    assert release.sensitivity == pytest.approx(math.sqrt(2))
    p = 81 * 2 * 2
    assert release.dimension == p * (p + 1) // 2 + p * 10
    assert release.noise_std == pytest.approx(release.noise_multiplier * math.sqrt(2))
    assert release.details['gram_weight'] == km.GRAM_WEIGHT
    # recomputed independently as one Gaussian (GDP, mu = 1 / noise multiplier)
    eps = _gdp_epsilon(1 / release.noise_multiplier, 1e-5)
    assert 0.999 <= eps <= 1.0 * (1 + 1e-9)
    assert report.epsilon_spent == pytest.approx(eps, rel=1e-6)
    assert fitted.n_steps_ == 20 and fitted.sampling_rate_ is None
    # projected after every step: the distilled images are in the declared range
    assert fitted.distilled_images_.min() >= 0 and fitted.distilled_images_.max() <= 16
    assert any('One joint release of the two sums' in note for note in report.notes)


def test_joint_release_adds_less_noise_to_both_sums_than_two_releases():
    # all-zero features: the released sums are pure noise (a fixed noise seed: the estimates of
    # the noise std below must not fail by chance)
    n, p, k = 2000, 60, 3
    with fixed_noise(123):
        ledger = Ledger.open(1.0, 1e-5)
    gram, cross, gram_noise = km.release_moments(torch.zeros(n, p), centred_one_hot(
        torch.zeros(n, dtype=torch.long), k), ledger)
    sigma = ledger.accountant.releases[0].noise_multiplier
    off = gram[torch.triu_indices(p, p, offset=1).unbind()]
    assert float(off.std()) == pytest.approx(gram_noise, rel=0.05)
    assert gram_noise == pytest.approx(sigma / km.GRAM_WEIGHT)
    cross_noise = sigma * math.sqrt(2) / km.cross_scale(km.GRAM_WEIGHT, k)
    assert float(cross.std()) == pytest.approx(cross_noise, rel=0.15)
    # two separate releases at the same budget (half each): Gram sensitivity sqrt(2) (off-diagonal
    # std sigma_2), cross sensitivity 2 |y|
    sigma_2 = Ledger.open(1.0, 1e-5).accountant.calibrate(
        {'gram': (0.5, 1), 'cross': (0.5, 1)})['gram']
    assert gram_noise < 0.85 * sigma_2  # 17% less
    assert cross_noise < 0.995 * sigma_2 * 2 * math.sqrt(1 - 1 / k)  # 1% less


def test_noise_edge_is_the_edge_of_the_released_noise_spectrum():
    # all-zero features: the released Gram sum is pure noise, whose top eigenvalue / n is the
    # edge the default ridge is scaled by
    n, p = 1000, 300
    for epsilon in (1.0, 10.0):
        ledger = Ledger.open(epsilon, 1e-5)
        gram, _, gram_noise = km.release_moments(torch.zeros(n, p), centred_one_hot(
            torch.arange(n) % 3, 3), ledger)
        top = float(torch.linalg.eigvalsh(gram / n).max())
        assert top == pytest.approx(km.noise_edge(gram_noise, p, n), rel=0.08)
        assert km.auto_ridge(gram_noise, p, n) == pytest.approx(km.RIDGE_PER_EDGE * top,
                                                                rel=0.08)


@pytest.mark.slow
def test_default_ridge_follows_the_noise_and_is_reported(digits):
    x, y = digits
    fits = {eps: DPKIPScatterNet(eps, 1e-5, **MOM).fit(x[:600], y[:600]) for eps in (1.0, 10.0)}
    p = 81 * 2 * 2
    for eps, m in fits.items():
        sigma = m.privacy_report_.releases[0].noise_multiplier / km.GRAM_WEIGHT
        assert m.moment_ridge_ == pytest.approx(
            km.RIDGE_PER_EDGE * 2 * sigma * math.sqrt(p) / 600, rel=1e-12)
        assert any(f'{m.moment_ridge_:.3g} I ({km.RIDGE_PER_EDGE:g} x the edge' in note
                   for note in m.privacy_report_.notes)
    assert fits[10.0].moment_ridge_ < fits[1.0].moment_ridge_ / 5
    fixed = DPKIPScatterNet(1.0, 1e-5, **{**MOM, 'moment_ridge': 3e-3}).fit(x[:600], y[:600])
    assert fixed.moment_ridge_ == 3e-3
    # refit the same object with DP-SGD: no ridge of the old fit stays
    fixed.mechanism, fixed.epochs, fixed.batch_size = 'dp-sgd', 1, 300
    assert not hasattr(fixed.fit(x[:600], y[:600]), 'moment_ridge_')


@pytest.mark.slow
def test_moments_learn_and_predict_with_the_unit_norm_kernel(fitted, digits):
    x, y = digits
    assert fitted.unit_features_ is True
    init = DPKIPScatterNet(math.inf, 1e-5, **{**MOM, 'learning_rate': 1e-12}).fit(x[:1500],
                                                                                  y[:1500])
    trained = DPKIPScatterNet(math.inf, 1e-5, **{**MOM, 'moment_steps': 60}).fit(x[:1500],
                                                                              y[:1500])
    assert trained.score(x[1500:], y[1500:]) > init.score(x[1500:], y[1500:]) + 0.2
    # predictions use the kernel the support was fit for: unit-norm features on both sides
    net = ScatterNet((8, 8), norm_eps=fitted.group_norm_eps_)
    f_s = km.unit_rows(net(torch.from_numpy(fitted.distilled_images_ / 16.0)[:, None]).double())
    f_t = km.unit_rows(net(torch.from_numpy(x[1500:1550] / 16.0)[:, None]).double())
    alpha = torch.linalg.solve(
        f_s @ f_s.T + 1e-3 * torch.trace(f_s @ f_s.T) / 20 * torch.eye(20, dtype=torch.float64),
        centred_one_hot(torch.as_tensor(fitted.distilled_labels_), 10))
    expected = (f_t @ f_s.T @ alpha).numpy()
    assert np.allclose(fitted.decision_function(x[1500:1550]), expected, atol=1e-5)
    raw = DPKIPScatterNet(1.0, 1e-5, **{**MOM, 'mechanism': 'dp-sgd'})
    raw.__dict__.update({**fitted.__dict__, 'unit_features_': False})
    raw._alpha = None  # the same support read with the raw-feature kernel predicts differently
    assert not np.allclose(raw.decision_function(x[1500:1550]), expected, atol=1e-5)


def test_saved_moments_model_holds_no_private_statistic(digits):
    x, y = digits
    x, y = x[:1500].copy(), y[:1500].copy()
    canary = np.random.default_rng(7).integers(0, 17, size=(8, 8)).astype(np.float64)
    x[0] = canary
    m = DPKIPScatterNet(1.0, 1e-5, **MOM).fit(x, y)
    blob = pickle.dumps(m)
    for arr in (canary, canary / 16.0):
        for dtype in (np.float64, np.float32):
            assert arr.astype(dtype).tobytes() not in blob
    p = 81 * 2 * 2
    for value in m.__dict__.values():  # neither the private features nor the (noisy) sums
        assert np.shape(value)[:1] not in ((1500,), (p,))
    assert np.array_equal(pickle.loads(blob).predict(x[:50]), m.predict(x[:50]))


@pytest.mark.parametrize('change, match', [
    (dict(mechanism='sgd'), 'mechanism must be one of'),
    (dict(moment_share=1.0), 'moment_share must be below 1'),
    (dict(moment_share=0), 'moment_share must be a finite number > 0'),
    (dict(moment_share=True), 'moment_share must be a finite number > 0'),
    (dict(moment_ridge=-1.0), "moment_ridge must be 'auto' or a finite number >= 0"),
    (dict(moment_ridge='Auto'), "moment_ridge must be 'auto' or a finite number >= 0"),
    (dict(moment_ridge=float('nan')), "moment_ridge must be 'auto' or a finite number >= 0"),
    (dict(moment_steps=0), 'moment_steps'),
    (dict(group_norm_eps=0), 'group_norm_eps must be a finite number > 0'),
    (dict(group_norm_eps=-1e-7), 'group_norm_eps must be a finite number > 0'),
    (dict(group_norm_eps=float('nan')), 'group_norm_eps must be a finite number > 0'),
    (dict(group_norm_eps='1e-7'), 'group_norm_eps must be a finite number > 0'),
])
def test_bad_moment_settings_get_clear_errors(change, match, digits):
    x, y = digits
    with pytest.raises(ImageInputError, match=match):
        DPKIPScatterNet(1.0, 1e-5, **{**MOM, **change}).fit(x[:300], y[:300])


def test_group_norm_floor_defaults_by_mechanism_and_is_used_for_prediction(fitted, digits):
    x, y = digits
    assert fitted.group_norm_eps_ == 1e-6  # 'moments' default
    assert any('variance floor 1e-06' in note for note in fitted.privacy_report_.notes)
    sgd = DPKIPScatterNet(1.0, 1e-5, **{**MOM, 'mechanism': 'dp-sgd', 'epochs': 1,
                                        'batch_size': 300}).fit(x[:600], y[:600])
    assert sgd.group_norm_eps_ == 1e-5  # the paper's, for the paper's mechanism
    given = DPKIPScatterNet(1.0, 1e-5, **{**MOM, 'group_norm_eps': 1e-3}).fit(x[:600], y[:600])
    assert given.group_norm_eps_ == 1e-3
    # prediction reads the support with the floor it was fit with (after a save and load too)
    loaded = pickle.loads(pickle.dumps(given))
    net = ScatterNet((8, 8), norm_eps=1e-3)
    f_s = km.unit_rows(net(torch.from_numpy(given.distilled_images_ / 16.0)[:, None]).double())
    f_t = km.unit_rows(net(torch.from_numpy(x[1500:1530] / 16.0)[:, None]).double())
    alpha = torch.linalg.solve(
        f_s @ f_s.T + 1e-3 * torch.trace(f_s @ f_s.T) / 20 * torch.eye(20, dtype=torch.float64),
        centred_one_hot(torch.as_tensor(given.distilled_labels_), 10))
    assert np.allclose(loaded.decision_function(x[1500:1530]), (f_t @ f_s.T @ alpha).numpy(),
                       atol=1e-5)
    assert not np.allclose(given.decision_function(x[1500:1530]),
                           sgd.decision_function(x[1500:1530]), atol=1e-5)
    # a model pickled in another format is refused: no shims, refit
    state = given.__getstate__()
    for stale in (0, None):
        state['_sdv_dpkme_format'] = stale
        with pytest.raises(ImageInputError, match='older sdv_dpkme.*Fit it again'):
            DPKIPScatterNet.__new__(DPKIPScatterNet).__setstate__(state)
