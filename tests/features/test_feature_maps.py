import itertools

import numpy as np
import pytest
import torch

from sdv_dpkme.features import (
    Block,
    ProductKernelMap,
    SumKernelMap,
    draw_product_subsets,
    hermite_features,
    hermite_rho,
    replace_sensitivity,
)
from tests.features.neighbours import assert_replace_one_moves_at_most_two_over_n

EXTREME = torch.tensor([-1e6, -30.0, -1.0, -0.5, 0.0, 1e-9, 0.5, 1.0, 30.0, 1e6],
                       dtype=torch.float64)


@pytest.mark.parametrize('sigma2', [1e-3, 0.05, 1.0, 1e10])
@pytest.mark.parametrize('order', [0, 1, 5, 100, 400])
def test_hermite_norm_bound_on_extreme_inputs(sigma2, order):
    feats = hermite_features(EXTREME, order, hermite_rho(sigma2))
    assert torch.isfinite(feats).all()
    assert (feats**2).sum(-1).max().item() <= 1 + 1e-12


def test_hermite_reproduces_gaussian_kernel():
    x = torch.linspace(-0.5, 0.5, 21, dtype=torch.float64)
    feats = hermite_features(x, 100, hermite_rho(1.0))
    exact = torch.exp(-((x[:, None] - x[None]) ** 2) / 2.0)
    assert (feats @ feats.T - exact).abs().max().item() < 1e-10


def test_hermite_closed_form_gradient_matches_autograd_of_the_recursion():
    # the generator trains through d phi_k / dx = sqrt(2 rho k) phi_{k-1} - 2 rho/(1+rho) x phi_k
    rho = hermite_rho(torch.tensor([0.05, 0.3, 2.0], dtype=torch.float64))
    x = (torch.rand(6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) - 0.5)
    assert torch.autograd.gradcheck(lambda v: hermite_features(v, 12, rho),
                                    (x.clone().requires_grad_(),))
    weights = torch.randn(6, 3, 41, dtype=torch.float64)

    def by_autograd(v):  # the plain recursion, differentiated by autograd
        feats = [(1 - rho**2) ** 0.25 * torch.exp(-rho * v**2 / (1 + rho))]
        feats.append(torch.sqrt(2 * rho) * v * feats[0])
        for k in range(1, 40):
            feats.append(torch.sqrt(2 * rho / (k + 1)) * v * feats[k]
                         - rho * np.sqrt(k / (k + 1)) * feats[k - 1])
        return torch.stack(feats, -1)

    v1, v2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    (hermite_features(v1, 40, rho) * weights).sum().backward()
    (by_autograd(v2) * weights).sum().backward()
    assert torch.allclose(v1.grad, v2.grad, atol=1e-12)
    assert torch.allclose(hermite_features(x, 40, rho), by_autograd(x), atol=1e-14)


def test_rho_is_stable_for_huge_lengths():
    # the research code's formula returns 0 at sigma2=1e10; the stable one must not
    assert 0 < hermite_rho(1e10).item() < 1e-9
    with pytest.raises(ValueError):
        hermite_rho(0.0)


def _layout():
    blocks = [Block('a', 'numeric', (0, 1)), Block('b', 'numeric', (2, 3)),
              Block('c', 'categorical', (4, 5, 6)), Block('d', 'categorical', (7, 8))]
    return blocks, 9


def _all_extreme_rows():
    """Every combination of extreme values, null flags and one-hot positions."""
    rows = []
    for va, vb, za, zb, c, d in itertools.product([0, 1, 0.5], [0, 1], [0, 1], [0, 1],
                                                  range(3), range(2)):
        row = np.zeros(9)
        row[[0, 1, 2, 3]] = [va, za, vb, zb]
        row[4 + c] = 1
        row[7 + d] = 1
        rows.append(row)
    return torch.tensor(np.array(rows))


@pytest.mark.parametrize('sigma2', [0.001, 0.05, 10.0])
def test_sum_and_product_maps_are_inside_unit_ball(sigma2):
    blocks, _ = _layout()
    x = _all_extreme_rows()
    for fmap in [SumKernelMap(blocks, 100, sigma2), ProductKernelMap(blocks, 5, sigma2),
                 ProductKernelMap(blocks[1:3], 30, sigma2)]:
        norms = fmap(x).norm(dim=1)
        assert fmap.norm_bound == 1.0
        assert norms.max().item() <= 1 + 1e-12
        assert fmap(x).shape[1] == fmap.dim


def test_sum_kernel_sensitivity_is_proven_over_garbage_rows_and_tight():
    # one-hot blocks projected into the non-negative part of the ball: ||psi - psi'||^2 <= 2;
    # numeric blocks: <= 4. Replace-one over rows of every kind, same class or another, must
    # stay within sqrt((2 m_cat + 4 m_num) / m) / n
    blocks, width = _layout()
    fmap = SumKernelMap(blocks, 20, 0.05)
    assert fmap.replace_bound == pytest.approx(np.sqrt((2 * 2 + 4 * 2) / 4))
    assert replace_sensitivity(fmap) == fmap.replace_bound
    categorical = SumKernelMap(blocks[2:], 20, 0.05)
    assert categorical.replace_bound == pytest.approx(np.sqrt(2))
    assert replace_sensitivity(SumKernelMap(blocks[:2], 20, 0.05)) == 2.0
    assert replace_sensitivity(ProductKernelMap(blocks, 3, 0.05)) == 2.0  # ||phi|| <= 1 only
    x = _all_extreme_rows().numpy()
    garbage = [np.full(width, v) for v in (1e308, -1e308, -1.0, np.nan, np.inf, -np.inf, 0.0)]
    negative = x[0].copy()
    negative[4:7] = [-1.0, 0.0, 0.0]  # a one-hot block pointing away from every valid one
    negative[7:9] = [0.0, -1e308]
    garbage += [negative, x[-1]]
    for m in (fmap, categorical):
        assert_replace_one_moves_at_most_two_over_n(
            m, x, 2, [(row, label) for row in garbage for label in (0, 1)],
            bound=m.replace_bound)
    # tight: two valid rows that differ in every categorical column, in the same class
    n = 5
    rows = np.zeros((n, width))
    rows[:, [4, 7]] = 1
    moved = rows.copy()
    moved[0, [4, 7]], moved[0, [5, 8]] = 0, 1
    sums = [categorical.class_sums(torch.tensor(r), torch.ones(n, 1, dtype=torch.float64)) / n
            for r in (rows, moved)]
    assert (sums[1] - sums[0]).norm().item() == pytest.approx(np.sqrt(2) / n, rel=1e-12)


def test_sum_kernel_is_mean_of_column_kernels():
    blocks, _ = _layout()
    x = torch.tensor([[0.2, 0, 0.7, 0, 1, 0, 0, 0, 1],
                      [0.6, 0, 0.7, 1, 1, 0, 0, 1, 0]], dtype=torch.float64)
    f = SumKernelMap(blocks, 200, 0.5)(x)
    # a: Gaussian kernel; b: one row missing -> 0; c: same category -> 1; d: differ -> 0
    expected = (np.exp(-(0.2 - 0.6) ** 2 / (2 * 0.5)) + 0 + 1 + 0) / 4
    assert (f[0] @ f[1]).item() == pytest.approx(expected, abs=1e-9)
    g = ProductKernelMap(blocks[:1] + blocks[2:3], 200, 0.5)(x)
    assert (g[0] @ g[1]).item() == pytest.approx(np.exp(-(0.4**2) / 1.0), abs=1e-9)


def test_product_subsets_respect_caps_and_are_seeded():
    blocks, _ = _layout()
    gen = torch.Generator().manual_seed(0)
    subsets = draw_product_subsets(blocks, 10, 3, 60, 5, gen)
    for subset in subsets:
        assert 1 <= len(subset) <= 3
        assert ProductKernelMap(subset, 5, 0.1).dim <= 60
    again = draw_product_subsets(blocks, 10, 3, 60, 5, torch.Generator().manual_seed(0))
    assert [[b.name for b in s] for s in subsets] == [[b.name for b in s] for s in again]


def _backward_nodes(tensor):
    seen, stack, names = set(), [tensor.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.append(type(node).__name__)
        stack.extend(next_fn for next_fn, _ in node.next_functions)
    return names


def test_sum_map_over_many_columns_splits_the_hermite_block_once():
    # Each per-column slice's backward wrote a zero tensor of the whole (n, m, order + 1) block:
    # on 784 pixel columns that made DP-HP images 30x slower. One unbind keeps it one op.
    m, order = 50, 6
    blocks = [Block(f'c{j}', 'numeric', (j,)) for j in range(m - 1)] + [
        Block('z', 'numeric', (m - 1, m))]  # one nullable column too
    fmap = SumKernelMap(blocks, order, 0.2)
    x = torch.rand(8, m + 1, dtype=torch.float64)
    x[:, m] = torch.tensor([0.0, 1.0] * 4)
    x.requires_grad_(True)
    out = fmap(x)
    names = _backward_nodes(out)
    assert sum('Select' in n for n in names) == 0 and names.count('UnbindBackward0') == 1
    # values and gradients equal the per-column construction
    with torch.no_grad():
        hp = hermite_features(x[:, :m] - 0.5, order, hermite_rho(0.2))
    z = x[:, m:m + 1]
    expected = torch.cat([hp[:, j] for j in range(m - 1)]
                         + [z, (1 - z) * hp[:, m - 1]], dim=1) / np.sqrt(m)
    assert torch.allclose(out.detach(), expected, atol=1e-12)
    weights = torch.randn_like(out)
    (grad,) = torch.autograd.grad((out * weights).sum(), x)
    x2 = x.detach().clone().requires_grad_(True)
    hp2 = hermite_features(x2[:, :m] - 0.5, order, hermite_rho(0.2))
    z2 = x2[:, m:m + 1]
    ref = torch.cat([hp2[:, j] for j in range(m - 1)] + [z2, (1 - z2) * hp2[:, m - 1]],
                    dim=1) / np.sqrt(m)
    (grad_ref,) = torch.autograd.grad((ref * weights).sum(), x2)
    assert torch.allclose(grad, grad_ref, atol=1e-10)
