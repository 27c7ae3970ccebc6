"""ScatterNet features: the batched transform equals kymatio's frontend; the paper's group norm."""

import pytest
import torch
from kymatio.scattering2d.frontend.torch_frontend import ScatteringTorch2D

from sdv_dpkme.images.scattering import ScatterNet, group_normalise


@pytest.mark.parametrize('shape,batch', [((28, 28), (3,)), ((16, 12), (2, 3))])
def test_batched_scattering_equals_kymatio_frontend(shape, batch):
    torch.manual_seed(0)
    x = torch.rand(*batch, *shape)
    ours = ScatterNet(shape, normalise=False).scatter(x)
    ref = ScatteringTorch2D(J=2, shape=shape, L=8)(x)
    assert ours.shape == ref.shape == (*batch, 81, shape[0] // 4, shape[1] // 4)
    assert torch.allclose(ours, ref, atol=1e-6)


def test_features_have_81_channels_at_quarter_size_and_are_differentiable():
    net = ScatterNet((28, 28))
    x = torch.rand(4, 1, 28, 28, requires_grad=True)
    f = net(x)
    assert f.shape == (4, 81 * 7 * 7) == (4, net.dim())
    f.sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0


def test_group_norm_is_per_location_over_three_channels_not_torch_groupnorm():
    torch.manual_seed(1)
    s = torch.randn(2, 81, 5, 5) * 3 + 1
    out = group_normalise(s)
    g = out.reshape(2, 27, 3, 5, 5)
    assert torch.allclose(g.mean(2), torch.zeros(2, 27, 5, 5), atol=1e-5)
    var = s.reshape(2, 27, 3, 5, 5).var(2, unbiased=False)
    assert torch.allclose((g ** 2).mean(2), var / (var + 1e-5), atol=5e-3)
    torch_gn = torch.nn.GroupNorm(27, 81, eps=1e-5, affine=False)(s)
    assert (torch_gn - out).abs().max() > 0.1  # a different normalisation
    # bounded: every location's triple has squared norm <= 3
    assert float((out ** 2).sum(1).max()) <= 27 * 3 + 1e-4


def test_group_norm_needs_a_multiple_of_the_group_size():
    with pytest.raises(ValueError, match='groups of 3'):
        group_normalise(torch.zeros(1, 80, 2, 2))


def test_aliased_product_backward_matches_plain_autograd(monkeypatch):
    import sdv_dpkme.images.scattering as scattering

    net = ScatterNet((16, 16))
    torch.manual_seed(2)
    x = torch.rand(3, 16, 16, dtype=torch.float32)
    w = torch.randn(3, net.dim())
    grads = []
    for broadcast in (False, True):
        monkeypatch.setattr(scattering, '_BROADCAST', broadcast)
        xs = x.clone().requires_grad_(True)
        (net(xs) * w).sum().backward()
        grads.append(xs.grad)
    assert torch.allclose(grads[0], grads[1], rtol=1e-3, atol=1e-4 * float(grads[1].abs().max()))


def test_variance_floor_reaches_the_group_normalisation(digits):
    x, _ = digits
    images = torch.from_numpy(x[:20] / 16.0).float()
    coeffs = ScatterNet((8, 8), normalise=False).scatter(images)
    for floor in (1e-5, 1e-7, 1e-2):
        net = ScatterNet((8, 8), norm_eps=floor)
        expected = group_normalise(coeffs, eps=floor).reshape(20, -1)
        torch.testing.assert_close(net(images), expected)
    # a smaller floor keeps weak groups' contrast: the same numerators over smaller divisors
    damped = ScatterNet((8, 8), norm_eps=1e-2)(images)
    kept = ScatterNet((8, 8), norm_eps=1e-7)(images)
    assert bool((kept.abs() >= damped.abs() - 1e-6).all())
    assert float(kept.norm()) > 1.5 * float(damped.norm())
