import numpy as np
import pytest
import torch

from sdv_dpkme.features import Block, FourierMarginalMap, PairwiseKernelMap, pair_blocks_within
from sdv_dpkme.features.pairwise import pair_layout
from tests.features.neighbours import assert_replace_one_moves_at_most_two_over_n

# a: nullable numeric, b: numeric, c: 3 categories, d: 2 categories
BLOCKS = [Block('a', 'numeric', (0, 1)), Block('b', 'numeric', (2,)),
          Block('c', 'categorical', (3, 4, 5)), Block('d', 'categorical', (6, 7))]
WIDTH = 8


def _rows(n=300, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.zeros(n, WIDTH, dtype=torch.float64)
    x[:, 0] = torch.rand(n, generator=gen, dtype=torch.float64)
    x[:, 1] = (torch.rand(n, generator=gen, dtype=torch.float64) < 0.3).double()
    x[:, 2] = torch.rand(n, generator=gen, dtype=torch.float64)
    x[torch.arange(n), 3 + torch.arange(n) % 3] = 1
    x[torch.arange(n), 6 + torch.randint(2, (n,), generator=gen)] = 1
    x[:4, [0, 2]] = torch.tensor([[0, 0], [1, 1], [0, 1], [1, 0]], dtype=torch.float64)
    return x


def test_norm_bound_on_extreme_and_relaxed_rows():
    fmap = PairwiseKernelMap(BLOCKS, 0.1)
    x = _rows()
    assert fmap.norm_bound == 1.0
    assert fmap.n_pairs == 6
    assert fmap(x).shape == (len(x), fmap.dim)
    assert fmap(x).norm(dim=1).max().item() <= 1 + 1e-12
    # rows with no nulls have norm exactly 1 (all per-column features have norm 1)
    full = x[x[:, 1] == 0]
    assert (fmap(full).norm(dim=1) - 1).abs().max().item() < 1e-12
    # a generator's relaxed output: fractional null flags and soft categories
    soft = x.clone()
    soft[:, 1] = torch.linspace(0, 1, len(x), dtype=torch.float64)
    soft[:, 3:6] = torch.softmax(torch.randn(len(x), 3, dtype=torch.float64), 1)
    soft[:, 6:8] = torch.softmax(torch.randn(len(x), 2, dtype=torch.float64), 1)
    assert fmap(soft).norm(dim=1).max().item() <= 1 + 1e-12


def test_kernel_is_the_mean_of_pairwise_products():
    fmap = PairwiseKernelMap(BLOCKS, 0.1)
    x = _rows(40)
    gram = fmap(x) @ fmap(x).T
    # per-column kernels: the Fourier-series kernel for numerics, delta for categories
    per_column = []
    for b in BLOCKS:
        if b.kind == 'numeric':
            psi = FourierMarginalMap([b], 0.1)(x)
        else:
            psi = x[:, list(b.columns)]
        per_column.append(psi @ psi.T)
    expected = sum(per_column[i] * per_column[j]
                   for i in range(4) for j in range(i + 1, 4)) / 6
    assert (gram - expected).abs().max().item() < 1e-12
    # two rows that differ only in one category keep the pairs that avoid that column
    y = x[:2].clone()
    y[0, 1] = 0  # not null: every per-column feature has norm 1
    y[1] = y[0]
    y[1, 6:8] = 1 - y[0, 6:8]
    f = fmap(y)
    assert (f[0] @ f[1]).item() == pytest.approx(3 / 6 * (f[0] @ f[0]).item(), abs=1e-12)


def test_class_sums_and_moments_match_the_dense_map():
    fmap = PairwiseKernelMap(BLOCKS, 0.05)
    x = _rows(90)
    y = torch.nn.functional.one_hot(torch.arange(90) % 3, 3).double()
    dense = fmap(x)
    assert torch.allclose(fmap.class_sums(x, y, project=False), y.T @ dense, atol=1e-12)
    sums, sq = fmap.class_moments(x, y)
    assert torch.allclose(sums, y.T @ dense, atol=1e-12)
    assert torch.allclose(sq, y.T @ (dense * dense).sum(1), atol=1e-12)
    assert fmap.class_sums(x.float(), y.float()).dtype == torch.float32
    # a class absent from the batch (the out-of-domain bucket in training) has zero sums
    y[:, 1] = 0
    assert torch.allclose(fmap.class_moments(x, y)[0], y.T @ dense, atol=1e-12)


def test_class_sums_of_any_weights_and_their_gradients_match_the_dense_map():
    # the sums are computed per class over that class's rows only: soft, overlapping, signed
    # and all-zero weights, every map, and the gradients training takes through them must
    # still equal the dense y^T phi(x)
    gen = torch.Generator().manual_seed(3)
    y = torch.rand(70, 4, generator=gen, dtype=torch.float64) - 0.3
    y[::3, 0] = 0
    y[:, 2] = 0
    fmap = PairwiseKernelMap(BLOCKS, 0.05)
    for m in (fmap, fmap.restricted([('d', 'a'), ('b', 'c')]), fmap.restricted([('c', 'd')])):
        x = _rows(70).requires_grad_(True)
        sums = m.class_moments(x, y)[0]
        probe = torch.randn(sums.shape, generator=gen, dtype=torch.float64)
        (grad,) = torch.autograd.grad((sums * probe).sum(), x)
        dense = y.T @ m(x)
        (expected,) = torch.autograd.grad((dense * probe).sum(), x)
        assert torch.allclose(sums, dense, atol=1e-12)
        assert torch.allclose(grad, expected, atol=1e-10)


def test_garbage_rows_are_projected_and_move_embedding_by_at_most_two_over_n():
    fmap = PairwiseKernelMap(BLOCKS, 0.1)
    garbage = torch.full((1, WIDTH), 1e6, dtype=torch.float64)
    assert fmap(garbage).norm().item() > 1  # unprojected, a garbage row leaves the ball
    assert_replace_one_moves_at_most_two_over_n(
        fmap, _rows(50).numpy(), 2,
        [(np.full(WIDTH, 1e6), 1), (np.full(WIDTH, -1e6), 0), (np.zeros(WIDTH), 1),
         (np.full(WIDTH, -1e308), 0)],  # cos(-1e308 * pi) is nan: such features count as 0
    )


def test_pair_sensitivity_is_proven_over_garbage_rows_and_tight():
    # one-hot psi projected into the non-negative part of the ball: a categorical pair moves by
    # ||a b^T - a' b'^T||^2 <= 2, a pair with a numeric column by <= 4
    fmap = PairwiseKernelMap(BLOCKS, 0.1)
    assert fmap.replace_bound == pytest.approx(np.sqrt((2 * 1 + 4 * 5) / 6))
    categorical = fmap.restricted([('c', 'd')])
    assert categorical.replace_bound == pytest.approx(np.sqrt(2))
    assert fmap.restricted([('a', 'd'), ('c', 'd')]).replace_bound == pytest.approx(np.sqrt(3))
    x = _rows(50).numpy()
    garbage = [np.full(WIDTH, 1e6), np.full(WIDTH, -1e308), np.full(WIDTH, np.inf)]
    for row in (x[0], x[-1]):  # the replaced rows with c's one-hot negated: c x d flips sign
        negative = row.copy()
        negative[3:6] = -row[3:6]
        garbage += [negative, np.where(np.arange(WIDTH) == 6, np.nan, negative)]
    for m in (fmap, categorical):
        assert_replace_one_moves_at_most_two_over_n(
            m, x, 2, [(row, label) for row in garbage for label in (0, 1)],
            bound=m.replace_bound)
    # tight: change both categories of one row, same class
    x = _rows(6)
    moved = x.clone()
    moved[0, 3:6] = torch.roll(x[0, 3:6], 1)
    moved[0, 6:8] = 1 - x[0, 6:8]
    y = torch.ones(6, 1, dtype=torch.float64)
    gap = categorical.class_sums(moved, y) - categorical.class_sums(x, y)
    assert gap.norm().item() == pytest.approx(np.sqrt(2), rel=1e-12)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match='two column blocks'):
        PairwiseKernelMap(BLOCKS[:1], 0.1)
    with pytest.raises(ValueError, match='length_scale'):
        PairwiseKernelMap(BLOCKS, 0.0)
    with pytest.raises(ValueError, match='block kind'):
        PairwiseKernelMap([*BLOCKS, Block('e', 'text', (8,))], 0.1)


def test_widest_columns_are_left_out_until_the_map_fits():
    wide = Block('zip', 'categorical', tuple(range(8, 8 + 500)))
    blocks = [*BLOCKS, wide]
    full = PairwiseKernelMap(blocks, 0.1).dim
    kept, left_out = pair_blocks_within(blocks, 0.1, full)
    assert kept == blocks and left_out == []  # at the limit nothing is left out
    kept, left_out = pair_blocks_within(blocks, 0.1, full - 1)
    assert [b.name for b in left_out] == ['zip']
    assert kept == BLOCKS
    assert PairwiseKernelMap(kept, 0.1).dim <= full - 1
    # numeric columns (28 features at length 0.1, 30 if nullable) go before 3 and 2 categories
    kept, left_out = pair_blocks_within(BLOCKS, 0.1, 3 * 2)
    assert [b.name for b in left_out] == ['a', 'b']
    assert PairwiseKernelMap(kept, 0.1).dim == 6


def test_a_subset_of_pairs_is_its_own_map_with_the_same_bound():
    sub = PairwiseKernelMap(BLOCKS, 0.1).restricted([('d', 'a'), ('c', 'd')])
    assert [b.name for b in sub.blocks] == ['a', 'c', 'd']  # only the columns it uses
    assert sub.pair_names() == [('a', 'd'), ('c', 'd')] and sub.n_pairs == 2
    x = _rows(60)
    dense = sub(x)
    psi = {b.name: (FourierMarginalMap([b], 0.1)(x) if b.kind == 'numeric'
                    else x[:, list(b.columns)]) for b in BLOCKS}
    k = {name: p @ p.T for name, p in psi.items()}
    assert torch.allclose(dense @ dense.T, (k['a'] * k['d'] + k['c'] * k['d']) / 2, atol=1e-12)
    assert torch.allclose(sub.gram(x, x), dense @ dense.T, atol=1e-12)
    y = torch.nn.functional.one_hot(torch.arange(60) % 2, 2).double()
    sums, sq = sub.class_moments(x, y)
    assert torch.allclose(sums, y.T @ dense, atol=1e-12)
    assert torch.allclose(sq, y.T @ (dense * dense).sum(1), atol=1e-12)
    assert_replace_one_moves_at_most_two_over_n(
        sub, _rows(50).numpy(), 2,
        [(np.full(WIDTH, 1e6), 1), (np.full(WIDTH, -1e308), 0), (np.zeros(WIDTH), 1)],
    )
    with pytest.raises(ValueError, match='distinct columns'):
        PairwiseKernelMap(BLOCKS, 0.1, pairs=[('c', 'c')])
    with pytest.raises(ValueError, match='not columns'):
        PairwiseKernelMap(BLOCKS, 0.1).restricted([('c', 'zip')])


def test_restricted_sums_are_a_block_of_the_private_pass_and_stay_bounded():
    # a row garbage in two columns only: projecting the all-pairs phi (norm <= 1) left the
    # block of that one pair, rescaled to a one-pair map, at norm sqrt(6); each psi_i is now
    # projected, so every block of the pass is bounded as its own map
    fmap = PairwiseKernelMap(BLOCKS, 0.1)
    sub = fmap.restricted([('c', 'd')])
    x = _rows(30)
    x[0, 3:8] = 1e6
    x[1, 3:8] = -1e308
    y = torch.nn.functional.one_hot(torch.arange(30) % 3, 3).double()
    restricted = fmap.restrict_sums(fmap.class_sums(x, y), sub)
    assert torch.allclose(restricted, sub.class_sums(x, y), atol=1e-9)
    for row in (0, 1):
        one = fmap.restrict_sums(fmap.class_sums(x[row:row + 1], y[row:row + 1]), sub)
        assert one.norm().item() <= 1 + 1e-12
    with pytest.raises(ValueError, match='subset'):
        sub.restrict_sums(sub.class_sums(x, y), fmap)


def test_replacing_a_subset_of_pairs_changes_only_their_blocks():
    fmap = PairwiseKernelMap(BLOCKS, 0.1)
    sub = fmap.restricted([('a', 'c'), ('b', 'd')])
    target = torch.randn(3, fmap.dim, dtype=torch.float64)
    assert torch.allclose(fmap.replace_pairs(target, sub, fmap.restrict_sums(target, sub)), target)
    values = torch.randn(3, sub.dim, dtype=torch.float64)
    out = fmap.replace_pairs(target, sub, values)
    assert torch.allclose(fmap.restrict_sums(out, sub), values)
    rest = fmap.restricted([('a', 'b'), ('a', 'd'), ('b', 'c'), ('c', 'd')])
    assert torch.equal(fmap.restrict_sums(out, rest), fmap.restrict_sums(target, rest))


def test_moments_within_the_parent_equal_the_sub_maps_own_and_carry_gradients():
    fmap = PairwiseKernelMap(BLOCKS, 0.1)
    sub = fmap.restricted([('a', 'd'), ('b', 'c')])
    assert sub.within is fmap
    x = _rows(40).requires_grad_(True)
    y = torch.nn.functional.one_hot(torch.arange(40) % 2, 2).double()
    sums, sq = sub.moments_within(fmap.class_moments(x, y)[0], x, y)
    own_sums, own_sq = sub.class_moments(x, y)
    assert torch.allclose(sums, own_sums, atol=1e-12) and torch.allclose(sq, own_sq, atol=1e-12)
    (grad,) = torch.autograd.grad(sums.sum() + sq.sum(), x)
    (own_grad,) = torch.autograd.grad(own_sums.sum() + own_sq.sum(), x)
    assert torch.allclose(grad, own_grad, atol=1e-10)


def _numeric(count):
    return [Block(f'n{i}', 'numeric', (i,)) for i in range(count)]


def test_layout_that_fits_is_the_full_map():
    layout = pair_layout(BLOCKS, 0.1, PairwiseKernelMap(BLOCKS, 0.1).dim, rng=None)
    assert layout.kept == tuple(BLOCKS) and layout.left_out == () and layout.pairs is None
    full = PairwiseKernelMap(BLOCKS, 0.1).n_frequencies
    assert layout.n_frequencies == layout.full_frequencies == full


def test_wide_numeric_table_keeps_every_pair_with_narrower_features():
    blocks = _numeric(74)  # the protein table's shape
    full = PairwiseKernelMap(blocks, 0.1)
    cap = full.dim // 2
    layout = pair_layout(blocks, 0.1, cap, rng=torch.Generator().manual_seed(0))
    fmap = PairwiseKernelMap(layout.kept, 0.1, layout.n_frequencies, layout.pairs)
    assert layout.left_out == () and layout.pairs is None and fmap.n_pairs == 74 * 73 // 2
    assert layout.n_frequencies < full.n_frequencies and fmap.dim <= cap
    # the most frequencies that fit: one more would not
    assert PairwiseKernelMap(blocks, 0.1, layout.n_frequencies + 1).dim > cap
    x = torch.rand(50, 74, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    assert fmap(x).norm(dim=1).max().item() <= 1 + 1e-12


def test_when_no_width_fits_every_column_keeps_pairs_in_a_cyclic_design():
    blocks = _numeric(40)
    floor = PairwiseKernelMap(blocks, 0.1, 2).dim
    cap = floor // 3
    layout = pair_layout(blocks, 0.1, cap, rng=torch.Generator().manual_seed(0))
    assert layout.left_out == () and layout.n_frequencies == 2 and layout.pairs
    fmap = PairwiseKernelMap(layout.kept, 0.1, layout.n_frequencies, layout.pairs)
    assert fmap.dim <= cap and fmap.n_pairs == layout.n_pairs < 40 * 39 // 2
    degree = {b.name: 0 for b in blocks}
    for a, b in layout.pairs:
        degree[a] += 1
        degree[b] += 1
    assert min(degree.values()) == max(degree.values()) >= 2  # a regular design
    # the design follows the model RNG, not the column order
    other = pair_layout(blocks, 0.1, cap, rng=torch.Generator().manual_seed(1))
    assert set(other.pairs) != set(layout.pairs)
    assert pair_layout(blocks, 0.1, cap, rng=torch.Generator().manual_seed(0)) == layout


def test_columns_leave_only_when_not_even_one_cycle_fits_and_say_why():
    blocks = _numeric(10)
    layout = pair_layout(blocks, 0.1, 16 * 3, rng=torch.Generator().manual_seed(0))
    assert layout.left_out and all('max_pair_features' in why for _, why in layout.left_out)
    fmap = PairwiseKernelMap(layout.kept, 0.1, layout.n_frequencies, layout.pairs)
    assert fmap.dim <= 16 * 3
    # equal widths: which columns leave is a public random draw, not the first ones
    left = {b.name for b, _ in layout.left_out}
    assert left != {f'n{i}' for i in range(len(left))}
