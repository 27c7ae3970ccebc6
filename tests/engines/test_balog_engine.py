"""Balog et al.'s reweighting engine: feature norms, the 2/N sensitivity through the projection,
the weights' constraints, and consistency on a known mixture."""

import math

import numpy as np
import pytest
import torch

from sdv_dpkme.engines import reweighting as rw
from sdv_dpkme.engines import simplex_weights as sw
from sdv_dpkme.features import Block
from sdv_dpkme.privacy import Ledger
from sdv_dpkme.privacy.testing import fixed_noise

BLOCKS = [Block('a', 'numeric', (0,)), Block('b', 'numeric', (1, 2)),
          Block('c', 'categorical', (3, 4, 5, 6))]


def unit_rows(n, seed, buckets=4):
    """Valid encoded rows: numeric values in [0, 1], a null indicator, one-hot blocks (the
    fourth bucket is the out-of-domain one)."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((n, 7))
    rows[:, 0] = rng.random(n)
    rows[:, 1] = rng.random(n)
    rows[:, 2] = rng.random(n) < 0.2
    rows[np.arange(n), 3 + rng.integers(0, buckets, n)] = 1.0
    return rows


def extreme_rows():
    """Corners of the unit box, one-hot blocks in every bucket, and values far outside it."""
    rows = []
    for a in (0.0, 1.0):
        for b in (0.0, 1.0):
            for bucket in range(4):
                row = np.zeros(7)
                row[[0, 1, 2]] = [a, b, 1 - b]
                row[3 + bucket] = 1.0
                rows.append(row)
    rows.append(np.full(7, 1e308))
    rows.append(np.full(7, -1e308))
    rows.append(np.zeros(7))
    return np.array(rows)


def kernel():
    return rw.GaussianProductKernel.for_blocks(BLOCKS, 7, 0.3)


def test_kernel_is_one_on_the_diagonal_and_a_product_of_column_kernels():
    k = kernel()
    x = unit_rows(20, 0)
    assert torch.allclose(k(x, x).diagonal(), torch.ones(20, dtype=torch.float64))
    # a product over columns: k(x, y) = prod_j exp(-s_j^2 (x_j - y_j)^2 / 2)
    s = k.scales.numpy()
    by_hand = np.exp(-0.5 * (s**2 * (x[0] - x[1]) ** 2).sum())
    assert float(k(x[:1], x[1:2])) == pytest.approx(by_hand, rel=1e-12)
    # a category mismatch counts like a numeric value across its whole range
    assert s[3] ** 2 * 2 == pytest.approx(s[0] ** 2)


def test_basis_is_orthonormal_and_its_features_are_in_the_unit_ball():
    k = kernel()
    basis = rw.public_basis(k, unit_rows(60, 1))
    gram = basis.transform @ k(basis.landmarks, basis.landmarks) @ basis.transform.T
    assert torch.allclose(gram, torch.eye(basis.dim, dtype=torch.float64), atol=1e-6)
    for rows in (unit_rows(500, 2), extreme_rows()):
        norms = basis(rows).norm(dim=1)
        assert float(norms.max()) <= 1 + 1e-6


def test_random_features_have_norm_exactly_one_and_approximate_the_kernel():
    k = kernel()
    fmap = rw.RandomFeatureMap(k, 20_000, torch.Generator().manual_seed(0))
    x = unit_rows(30, 3)
    phi = fmap(np.vstack([x, extreme_rows()[:-2]]))
    assert torch.allclose(phi.norm(dim=1), torch.ones(len(phi), dtype=torch.float64))
    approx = fmap(x) @ fmap(x).T
    assert float((approx - k(x, x)).abs().max()) < 0.05


def test_replacing_one_row_moves_the_projected_embedding_by_at_most_2_over_n():
    """The sensitivity through the projection, over every pair of extreme rows."""
    basis = rw.public_basis(kernel(), unit_rows(80, 4))
    x = unit_rows(50, 5)
    n = len(x)
    candidates = np.vstack([extreme_rows(), unit_rows(20, 6)])
    means = []
    for row in candidates:
        neighbour = x.copy()
        neighbour[0] = row
        means.append(rw.mean_features(basis, neighbour))
    means = torch.stack(means)
    moved = torch.cdist(means, means).max()
    assert float(moved) <= 2 / n * (1 + 1e-9)
    assert float(moved) > 1 / n  # the bound is nearly reached: the test can fail


def _mixture(n, rng, d=2):
    means = np.random.default_rng(0).normal(100, 200, size=(5, d))
    weights = 1 / np.arange(1, 6)
    component = rng.choice(5, size=n, p=weights / weights.sum())
    return means[component] + rng.normal(0, 30, size=(n, d))


def _balog_kernel(d=2):
    return rw.GaussianProductKernel(np.full(d, math.sqrt(2e-4 / d)))  # gamma = 1e-4 / d


def test_release_goes_through_the_accountant_with_sensitivity_2_over_n():
    from autodp import mechanism_zoo

    x = _mixture(400, np.random.default_rng(1))
    z = _mixture(50, np.random.default_rng(2))
    ledger = Ledger.open(1.0, 1e-6)
    rw.fit_public(x, z, _balog_kernel(), ledger, rw.Algorithm1Settings(),
                  torch.Generator().manual_seed(0))
    (release,) = ledger.accountant.releases
    assert release.name == 'public_basis_embedding'
    assert release.sensitivity == pytest.approx(2 / 400)
    assert release.noise_std == pytest.approx(release.noise_multiplier * 2 / 400)
    spent = mechanism_zoo.ExactGaussianMechanism(release.noise_multiplier).get_approxDP(1e-6)
    assert spent == pytest.approx(1.0, rel=1e-3)
    assert ledger.accountant.epsilon_spent() == pytest.approx(1.0, rel=1e-6)


def test_projections_are_exact():
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = torch.as_tensor(rng.normal(0, 2, 12))
        p = sw.project_simplex(v)
        assert float(p.min()) >= 0 and float(p.sum()) == pytest.approx(1.0)
        q = sw.project_l1_ball(v, 1.5)
        assert float(q.abs().sum()) <= 1.5 + 1e-12
        # optimality of a projection onto a convex set: <v - p, u - p> <= 0 for all u in it
        for _ in range(50):
            u = torch.as_tensor(rng.dirichlet(np.ones(12)))
            assert float((v - p) @ (u - p)) <= 1e-9
            u = torch.as_tensor(rng.normal(0, 1, 12))
            u = u / u.abs().sum() * 1.5 * rng.random()
            assert float((v - q) @ (u - q)) <= 1e-9
    inside = torch.tensor([0.2, -0.3, 0.1])
    assert torch.equal(sw.project_l1_ball(inside, 1.0), inside)


def test_weights_respect_the_l1_bound_and_minimise_over_it():
    x = _mixture(3000, np.random.default_rng(3))
    z = _mixture(80, np.random.default_rng(4))
    basis = rw.public_basis(_balog_kernel(), z)
    beta = rw.mean_features(basis, x) + torch.as_tensor(np.random.default_rng(5).normal(0, 0.05,
                                                                                       basis.dim))
    phi_z = sw.features_of(basis, z)
    free, probabilities = sw.embedding_weights(phi_z, beta)
    bounded, _ = sw.embedding_weights(phi_z, beta, l1_bound=1.0)
    assert float(free.abs().sum()) > 1.0  # the noise pushes the free weights out of the ball
    assert float(bounded.abs().sum()) <= 1.0 + 1e-9
    assert float(probabilities.min()) >= 0 and float(probabilities.sum()) == pytest.approx(1.0)

    def objective(w):
        return float(((phi_z.T @ w - beta) ** 2).sum())

    rng = np.random.default_rng(6)
    for _ in range(200):  # no feasible point does better than FISTA's
        u = torch.as_tensor(rng.normal(0, 1, len(z)))
        u = u / u.abs().sum() * rng.random()
        assert objective(bounded) <= objective(u) + 1e-9
        assert objective(probabilities) <= objective(torch.as_tensor(
            rng.dirichlet(np.ones(len(z))))) + 1e-9
    assert objective(free) <= objective(bounded) + 1e-9


def test_min_norm_weights_are_a_transpose_beta_when_the_rows_are_the_landmarks():
    z = _mixture(40, np.random.default_rng(7))
    basis = rw.public_basis(_balog_kernel(), z, tolerance=1e-6)
    beta = torch.as_tensor(np.random.default_rng(8).normal(0, 0.1, basis.dim))
    w = sw.min_norm_weights(sw.features_of(basis, z), beta)
    assert torch.allclose(w, basis.transform.T @ beta, atol=1e-6)


@pytest.mark.slow
def test_rkhs_distance_shrinks_as_n_grows_at_fixed_epsilon():
    """Consistency (Balog Thm. 4.2): more private rows, closer to the private embedding, and
    better than uniform weights on the public rows."""
    k = _balog_kernel()
    z = _mixture(150, np.random.default_rng(10))
    distances, uniform = {}, {}
    for n in (300, 10_000):
        x = _mixture(n, np.random.default_rng(11))
        mean_kxx = rw.mean_kernel(k, x)
        runs = []
        for seed in range(3):
            with fixed_noise(seed):
                ledger = Ledger.open(1.0, 1e-6)
            signed, _, _, _ = rw.fit_public(x, z, k, ledger, rw.Algorithm1Settings(),
                                            torch.Generator().manual_seed(0))
            runs.append(rw.rkhs_distance(k, z, signed.numpy(), x, mean_kxx))
        distances[n] = np.mean(runs)
        uniform[n] = rw.rkhs_distance(k, z, np.full(len(z), 1 / len(z)), x, mean_kxx)
    assert distances[10_000] < 0.5 * distances[300]
    assert distances[10_000] < uniform[10_000]


def test_large_public_tables_use_a_public_subset_as_basis_and_weigh_every_row():
    x = _mixture(500, np.random.default_rng(12))
    z = _mixture(400, np.random.default_rng(13))
    ledger = Ledger.open(1.0, 1e-6)
    signed, probabilities, basis, notes = rw.fit_public(
        x, z, _balog_kernel(), ledger, rw.Algorithm1Settings(max_basis_rows=60),
        torch.Generator().manual_seed(0))
    assert len(basis.landmarks) == 60 and basis.dim <= 60
    assert len(signed) == len(probabilities) == 400
    assert 'random subset of the 400' in notes[0]


def test_reduced_set_fits_the_embedding_from_public_noise():
    k = kernel()
    x = unit_rows(1000, 14, buckets=3)
    fmap = rw.RandomFeatureMap(k, 256, torch.Generator().manual_seed(1))
    beta = rw.mean_features(fmap, x)  # epsilon = inf
    settings = rw.Algorithm2Settings(n_features=256, n_points=60, steps=150, learning_rate=0.1)
    z, probabilities, history = rw.reduced_set(fmap, beta, BLOCKS, 7, settings,
                                               torch.Generator().manual_seed(2))
    assert history[-1] < 0.5 * history[0]
    # valid rows: one in-domain bucket per one-hot block (never the last, out-of-domain, one)
    assert np.array_equal(z[:, 3:7].sum(1), np.ones(60)) and not z[:, 6].any()
    assert ((z[:, :3] >= 0) & (z[:, :3] <= 1)).all()
    fitted = rw.rkhs_distance(k, z, probabilities.numpy(), x)
    blind = rw.rkhs_distance(k, unit_rows(60, 15, buckets=3), np.full(60, 1 / 60), x)
    assert fitted < 0.5 * blind, (fitted, blind)


def test_row_sums_match_the_kernel_matrix_also_for_extreme_rows():
    k = kernel()
    a = np.vstack([unit_rows(30, 20), extreme_rows()])
    b = unit_rows(50, 21)
    assert torch.allclose(k.row_sums(a, b, chunk_rows=7), k(a, b).sum(1), atol=1e-12)
    assert rw.mean_kernel(k, b, 9) == pytest.approx(float(k(b, b).mean()), rel=1e-12)
