"""Issue 42 item 7: the pairs map's training backward (one product for both factors of the
second moment) gives autograd's gradient of the dense map."""

import torch

from sdv_dpkme.features import Block
from sdv_dpkme.features.pairwise import PairwiseKernelMap


def test_pair_sums_gradient_equals_the_dense_maps_issue42():
    gen = torch.Generator().manual_seed(3)
    blocks = [Block('a', 'numeric', (0,)), Block('b', 'categorical', (1, 2, 3)),
              Block('c', 'numeric', (4, 5)), Block('d', 'categorical', (6, 7))]
    fmap = PairwiseKernelMap(blocks, length_scale=0.3)
    x = torch.rand(40, 8, generator=gen, dtype=torch.float64).requires_grad_()
    labels = torch.randint(0, 3, (40,), generator=gen)
    labels[:3] = 0
    y = torch.nn.functional.one_hot(labels, 4).double()  # class 3 absent: zero sums
    weights = torch.randn(4, fmap.dim, generator=gen, dtype=torch.float64)

    sums, _ = fmap.class_moments(x, y)
    (grad,) = torch.autograd.grad((sums * weights).sum(), x)
    dense = y.T @ fmap(x)
    (expected,) = torch.autograd.grad((dense * weights).sum(), x)
    torch.testing.assert_close(sums, dense)
    torch.testing.assert_close(grad, expected)
    assert sums[3].abs().max() == 0
