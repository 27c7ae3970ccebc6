import numpy as np
import pytest
import torch

from sdv_dpkme.engines import class_mean_embeddings, class_proportions
from sdv_dpkme.features import Block, ProductKernelMap, SumKernelMap

BLOCKS = [Block('a', 'numeric', (0, 1)), Block('c', 'categorical', (2, 3, 4))]


def _table(n, seed, n_classes=2):
    """Encoded rows of BLOCKS (a nullable numeric column, a 3-bucket one-hot) and labels."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, 5))
    x[:, 0] = rng.random(n)
    x[:, 1] = rng.random(n) < 0.1
    x[np.arange(n), 2 + rng.integers(0, 3, n)] = 1
    return x, rng.integers(0, n_classes, n)


def test_chunking_does_not_change_the_embedding():
    x, y = _table(500, 0)
    maps = [SumKernelMap(BLOCKS, 50, 0.05), ProductKernelMap(BLOCKS, 5, 0.05)]
    whole = class_mean_embeddings(x, y, 2, maps, max_chunk_floats=10**9)
    chunked = class_mean_embeddings(x, y, 2, maps, max_chunk_floats=64 * 30)
    for a, b in zip(whole, chunked):
        assert torch.allclose(a, b, atol=1e-12)


def test_replacing_one_row_moves_the_embedding_by_at_most_two_over_n():
    n = 300
    x, y = _table(n, 1)
    maps = [SumKernelMap(BLOCKS, 50, 0.05), ProductKernelMap(BLOCKS, 5, 0.05)]
    base = class_mean_embeddings(x, y, 2, maps)
    worst = 0.0
    # extreme replacements, including label changes and rows outside the valid box
    candidates = [([1, 0, 1, 0, 0], 1), ([0, 1, 0, 0, 1], 0), ([0.5, 0, 0, 1, 0], 1),
                  ([50.0, 3.0, 5.0, 5.0, 5.0], 0)]
    for row, label in candidates:
        for i in (0, n - 1):
            x2, y2 = x.copy(), y.copy()
            x2[i], y2[i] = row, label
            other = class_mean_embeddings(x2, y2, 2, maps)
            for a, b in zip(base, other):
                worst = max(worst, torch.linalg.norm(a - b).item())
    assert 0 < worst <= 2 / n + 1e-12


def test_class_proportions_sensitivity_is_sqrt2_over_n():
    n = 50
    _, y = _table(n, 2)
    base = class_proportions(y, 3)
    worst = 0.0
    for i in range(n):
        for label in range(3):
            other = y.copy()
            other[i] = label
            worst = max(worst, np.linalg.norm(class_proportions(other, 3) - base))
    assert base.sum() == pytest.approx(1)
    assert worst == pytest.approx(np.sqrt(2) / n, rel=1e-12)


def test_numeric_noise_keeps_values_in_the_unit_box_and_only_moves_numeric_heads():
    from sdv_dpkme.engines import TabularGenerator
    from sdv_dpkme.features import Block

    blocks = [Block('a', 'numeric', (0,)), Block('c', 'categorical', (1, 2, 3))]
    torch.manual_seed(0)
    plain = TabularGenerator(blocks, 4, 1, latent_dim=4, hidden=(8,))
    noisy = TabularGenerator(blocks, 4, 1, latent_dim=4, hidden=(8,), numeric_noise=0.5)
    noisy.load_state_dict(plain.state_dict())
    z, y = torch.randn(500, 4), torch.ones(500, 1)
    g = torch.Generator().manual_seed(1)
    a = plain(z, y, plain._numeric_noise(500, g, 'cpu'))
    b = noisy(z, y, noisy._numeric_noise(500, g, 'cpu'))
    assert plain._numeric_noise(3, g, 'cpu') is None
    assert b[:, 0].min() >= 0 and b[:, 0].max() <= 1  # reflected into the box
    assert (a[:, 0] - b[:, 0]).abs().mean() > 0.1
    assert torch.equal(a[:, 1:], b[:, 1:])
