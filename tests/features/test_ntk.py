import math

import numpy as np
import pytest
import torch

from sdv_dpkme.features.ntk import FCNTK, fc_nngp, fc_ntk

SW2, SB2 = 2.0, 0.01


@pytest.fixture(autouse=True)
def _one_thread():
    # every op here is tiny: extra threads only fight over the shared cores (7x slower measured)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ---------------------------------------------------------------- independent references

def _reference(x, y, depth, sw2=SW2, sb2=SB2):
    """Scalar (NTK, NNGP) for one pair, written from the recursion with arccos (fine away from
    c = 1) and plain floats; shares no code with the module."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    d = len(x)
    kxy = sw2 * (x @ y) / d + sb2
    kxx = sw2 * (x @ x) / d + sb2
    kyy = sw2 * (y @ y) / d + sb2
    ntk = kxy
    for _ in range(depth):
        n = math.sqrt(kxx * kyy)
        c = max(-1.0, min(1.0, kxy / n))
        t = math.acos(c)
        relu_relu = n * (math.sin(t) + (math.pi - t) * c) / (2 * math.pi)
        drelu_drelu = (math.pi - t) / (2 * math.pi)
        kxy = sw2 * relu_relu + sb2
        ntk = kxy + sw2 * ntk * drelu_drelu
        kxx = sw2 * kxx / 2 + sb2
        kyy = sw2 * kyy / 2 + sb2
    return ntk, kxy


def test_orthogonal_pair_by_hand():
    # x = [1, 0], y = [0, 1], d = 2: the input kernel is 0 across, 1/2 on the diagonals
    s1 = SW2 * 0.0 + SB2                       # 0.01
    q1 = SW2 * 0.5 + SB2                       # 1.01 (both diagonals)
    cos_t = s1 / q1
    theta = math.acos(cos_t)
    e_relu = q1 * (math.sin(theta) + (math.pi - theta) * cos_t) / (2 * math.pi)
    e_drelu = (math.pi - theta) / (2 * math.pi)
    nngp = SW2 * e_relu + SB2
    ntk = nngp + SW2 * s1 * e_drelu
    x, y = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])
    assert fc_ntk(x, y).item() == pytest.approx(ntk, rel=1e-13)
    assert fc_nngp(x, y).item() == pytest.approx(nngp, rel=1e-13)
    assert fc_ntk(y, x).item() == pytest.approx(ntk, rel=1e-13)


def test_equal_pair_by_hand():
    # x = y = [1, 1]: S1 = 2 * 1 + 0.01 = 2.01, theta = 0, E[relu^2] = S1 / 2, E[relu'^2] = 1/2
    x = torch.tensor([[1.0, 1.0]])
    s2 = SW2 * 2.01 / 2 + SB2                  # 2.02
    t2 = s2 + SW2 * 2.01 / 2                   # 4.03
    s3 = SW2 * s2 / 2 + SB2                    # 2.03
    t3 = s3 + SW2 * t2 / 2                     # 6.06
    assert fc_ntk(x, x).item() == pytest.approx(4.03, rel=1e-13)
    assert fc_ntk(x, x).item() == pytest.approx(t2, rel=1e-13)
    assert fc_nngp(x, x).item() == pytest.approx(2.02, rel=1e-13)
    assert fc_ntk(x, x, depth=2).item() == pytest.approx(6.06, rel=1e-13)
    assert fc_ntk(x, x, depth=2).item() == pytest.approx(t3, rel=1e-13)
    assert fc_nngp(x, x, depth=2).item() == pytest.approx(2.03, rel=1e-13)


@pytest.mark.parametrize('depth', [1, 2, 3])
@pytest.mark.parametrize('sw2,sb2', [(2.0, 0.01), (1.3, 0.0), (0.7, 0.5)])
def test_matches_scalar_reference_on_random_pairs(depth, sw2, sb2):
    gen = torch.Generator().manual_seed(depth)
    x = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    y = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    ntk = fc_ntk(x, y, depth, sw2, sb2)
    nngp = fc_nngp(x, y, depth, sw2, sb2)
    assert ntk.shape == nngp.shape == (4, 5)
    for i in range(4):
        for j in range(5):
            ref_ntk, ref_nngp = _reference(x[i].numpy(), y[j].numpy(), depth, sw2, sb2)
            assert ntk[i, j].item() == pytest.approx(ref_ntk, rel=1e-10, abs=1e-13)
            assert nngp[i, j].item() == pytest.approx(ref_nngp, rel=1e-10, abs=1e-13)


def test_positively_homogeneous_without_bias():
    # with s_b = 0 a ReLU net is 1-homogeneous in its input, so the kernels scale linearly in |x|
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    y = torch.randn(2, 4, generator=gen, dtype=torch.float64)
    for depth in (1, 2):
        base = fc_ntk(x, y, depth, 2.0, 0.0)
        torch.testing.assert_close(fc_ntk(3.0 * x, y, depth, 2.0, 0.0), 3.0 * base)
        torch.testing.assert_close(fc_nngp(x, 0.5 * y, depth, 2.0, 0.0),
                                   0.5 * fc_nngp(x, y, depth, 2.0, 0.0))


# ---------------------------------------------------------------- Monte-Carlo finite-width nets

def _inputs():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(5, 5, generator=gen, dtype=torch.float64)
    # a rescaled copy (c = 1, different norm) and a near-antipodal row
    return torch.cat([x, 2.0 * x[:1], -x[1:2]])


def _draw(sizes, gen, nets=None, grad=False):
    """NTK-parameterized layers; every W, b ~ N(0, 1). With ``nets`` a leading ensemble axis."""
    lead = () if nets is None else (nets,)
    return [(torch.randn(*lead, o, i, generator=gen, dtype=torch.float64).requires_grad_(grad),
             torch.randn(*lead, 1, o, generator=gen, dtype=torch.float64).requires_grad_(grad))
            for i, o in zip(sizes, sizes[1:])]


def _mlp(params, x):
    """h -> (s_w / sqrt(fan_in)) W h + s_b b, ReLU between layers, none after the last."""
    h = x
    for k, (w, b) in enumerate(params):
        if k:
            h = torch.relu(h)
        h = math.sqrt(SW2 / w.shape[-1]) * h @ w.transpose(-1, -2) + math.sqrt(SB2) * b
    return h


def _empirical_ntk(params, x):
    """sum over all parameters of d out(x_i)/dtheta * d out(x_j)/dtheta, by autograd."""
    flat = [p for wb in params for p in wb]
    out = _mlp(params, x)[:, 0]
    rows = []
    for i in range(len(x)):
        grads = torch.autograd.grad(out[i], flat, retain_graph=True)
        rows.append(torch.cat([g.reshape(-1) for g in grads]))
    jac = torch.stack(rows)
    return jac @ jac.T


def _scaled_error(estimates, exact):
    """Max |mean - exact| and its standard error, both over sqrt(K(x,x) K(y,y)) (entries near 0
    make a plain relative error meaningless)."""
    scale = torch.outer(exact.diagonal().sqrt(), exact.diagonal().sqrt())
    err = ((estimates.mean(0) - exact).abs() / scale).max().item()
    se = (estimates.std(0) / math.sqrt(len(estimates)) / scale).max().item()
    return err, se


# (depth, width, nets, tolerance); errors and standard errors are over sqrt(K(x,x) K(y,y)). With
# these seeds: depth 1 error 0.0057 (standard error 0.0047), depth 2 error 0.031 (standard error
# 0.010; runs with up to 4000 nets of widths 50-500 agree to 1.3-2%). Depth 2 is kept at width 256:
# its width x width layer makes wider nets too slow for a unit test. The tolerances are 5-6
# standard errors, and each kernel near the NTK tried below is > 0.2 away.
@pytest.mark.parametrize('depth,width,nets,tol', [(1, 20000, 8, 0.03), (2, 256, 256, 0.05)])
def test_ntk_matches_monte_carlo_empirical_ntk(depth, width, nets, tol):
    x = _inputs()
    gen = torch.Generator().manual_seed(10 + depth)
    est = torch.stack([_empirical_ntk(_draw([5] + [width] * depth + [1], gen, grad=True), x)
                       for _ in range(nets)])
    exact = fc_ntk(x, x, depth=depth)
    err, se = _scaled_error(est, exact)
    assert err < tol, (err, se)
    # the estimate is precise enough to tell the NTK from kernels that are close to it
    for wrong in (fc_nngp(x, x, depth=depth), fc_ntk(x, x, depth=depth + 1),
                  fc_ntk(x, x, depth=depth, bias_variance=0.2)):
        assert _scaled_error(est, wrong)[0] > tol


# Output covariance over `outputs` independent output units of each net (iid given the hidden
# layers), averaged over `nets` nets. Measured: depth 1 error 0.013 (standard error 0.011), depth 2
# error 0.028 (standard error 0.014); NTK / 2, the nearest wrong guess tried, is > 0.16 away.
@pytest.mark.parametrize('depth', [1, 2])
def test_nngp_matches_monte_carlo_output_covariance(depth):
    width = outputs = 256
    nets = 256
    x = _inputs()
    gen = torch.Generator().manual_seed(20 + depth)
    with torch.no_grad():
        out = _mlp(_draw([5] + [width] * depth + [outputs], gen, nets=nets), x)  # (nets, n, K)
    est = out @ out.transpose(1, 2) / outputs
    exact = fc_nngp(x, x, depth=depth)
    err, se = _scaled_error(est, exact)
    assert err < 0.05, (err, se)
    assert _scaled_error(est, fc_ntk(x, x, depth=depth) / 2)[0] > 0.05


# ---------------------------------------------------------------- kernel properties

@pytest.mark.parametrize('kernel', [fc_ntk, fc_nngp])
@pytest.mark.parametrize('depth', [1, 2, 4])
def test_symmetric_and_positive_semidefinite(kernel, depth):
    gen = torch.Generator().manual_seed(depth)
    x = torch.randn(30, 4, generator=gen, dtype=torch.float64)
    x = torch.cat([x, x[:3], 3.0 * x[3:5], torch.zeros(1, 4)])  # duplicates, c = 1, a zero row
    k = kernel(x, x, depth=depth)
    torch.testing.assert_close(k, k.T, rtol=1e-12, atol=0)
    eig = torch.linalg.eigvalsh(k)
    assert eig.min() >= -1e-10 * eig.max()
    y = torch.randn(7, 4, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(kernel(x, y, depth=depth), kernel(y, x, depth=depth).T,
                               rtol=1e-12, atol=0)


def test_output_is_float64_whatever_the_input_dtype():
    gen = torch.Generator().manual_seed(3)
    x64 = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    y64 = torch.randn(2, 4, generator=gen, dtype=torch.float64)
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int64):
        x, y = x64.to(dtype), y64.to(dtype)
        for kernel in (fc_ntk, fc_nngp):
            k = kernel(x, y)
            assert k.dtype == torch.float64 and k.device == x.device
            # the computation itself is float64: same as casting first
            torch.testing.assert_close(
                k, kernel(x.to(torch.float64), y.to(torch.float64)), rtol=1e-15, atol=0)
    assert fc_ntk(x64.float(), y64).dtype == torch.float64
    assert fc_ntk(x64.numpy(), y64.numpy()).dtype == torch.float64


@pytest.mark.skipif(not torch.cuda.is_available(), reason='no CUDA device')
def test_keeps_the_device():
    x = torch.randn(3, 4, device='cuda')
    k = fc_ntk(x, x, depth=2)
    assert k.device == x.device and k.dtype == torch.float64
    torch.testing.assert_close(k.cpu(), fc_ntk(x.cpu(), x.cpu(), depth=2))


# ---------------------------------------------------------------- gradients

def _support():
    gen = torch.Generator().manual_seed(4)
    s = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    # duplicate rows, a rescaled row (c = 1 across rows) and a zero row
    return torch.cat([s, s[:2], 2.0 * s[2:3], torch.zeros(1, 3)])


@pytest.mark.parametrize('kernel', [fc_ntk, fc_nngp])
@pytest.mark.parametrize('depth', [1, 2])
@pytest.mark.parametrize('sb2', [0.01, 0.0])
def test_gradient_is_finite_at_c_equal_one(kernel, depth, sb2):
    s = _support().requires_grad_()
    (g,) = torch.autograd.grad(kernel(s, s, depth=depth, bias_variance=sb2).sum(), s)
    assert torch.isfinite(g).all()
    (g,) = torch.autograd.grad(kernel(s, s.detach(), depth=depth, bias_variance=sb2).sum(), s)
    assert torch.isfinite(g).all()


def test_diagonal_gradient_is_the_true_one():
    # the diagonal T(s, s) = s_w^2 (s_w^2 |s|^2 / d + s_b^2) + s_b^2 is smooth (theta stays 0):
    # d/ds = 2 s_w^4 s / d; the guard must give exactly this, not just something finite
    s = _support()[:-1].requires_grad_()
    diag = torch.cat([fc_ntk(s[i:i + 1], s[i:i + 1]) for i in range(len(s))])
    (g,) = torch.autograd.grad(diag.sum(), s)
    torch.testing.assert_close(g, 2 * SW2 ** 2 * s.detach() / 3, rtol=1e-7, atol=1e-12)
    (g,) = torch.autograd.grad(torch.diagonal(fc_ntk(s, s)).sum(), s)
    torch.testing.assert_close(g, 2 * SW2 ** 2 * s.detach() / 3, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize('depth', [1, 2])
def test_vmap_per_example_gradients_like_kip(depth):
    s = _support()
    gen = torch.Generator().manual_seed(5)
    w = torch.randn(len(s), generator=gen, dtype=torch.float64)
    # data rows equal to support rows, a zero row and generic rows
    x = torch.cat([s[:3], torch.zeros(1, 3), torch.randn(3, 3, generator=gen, dtype=torch.float64)])

    def loss(xi, support):
        return (fc_ntk(xi[None], support, depth=depth) @ w).sum()

    gx, gs = torch.func.vmap(torch.func.grad(loss, argnums=(0, 1)), in_dims=(0, None))(x, s)
    assert gx.shape == x.shape and gs.shape == (len(x),) + s.shape
    assert torch.isfinite(gx).all() and torch.isfinite(gs).all()
    # same per-example gradients as a plain autograd loop; at x_i == s_j (the kink) the batched
    # matmul's rounding moves S_xx S_yy - S_xy^2 by an ulp, which shows up at ~1e-8
    for i in range(len(x)):
        xi, si = x[i].clone().requires_grad_(), s.clone().requires_grad_()
        ref_x, ref_s = torch.autograd.grad(loss(xi, si), (xi, si))
        torch.testing.assert_close(gx[i], ref_x, rtol=1e-7, atol=1e-9)
        torch.testing.assert_close(gs[i], ref_s, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize('kernel', [fc_ntk, fc_nngp])
@pytest.mark.parametrize('depth', [1, 2])
def test_gradient_matches_finite_differences(kernel, depth):
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    y = torch.randn(2, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: kernel(a, b, depth=depth), (x, y))


# ---------------------------------------------------------------- validation and the class

@pytest.mark.parametrize('depth', [0, -1, 1.5, True, '1', None])
def test_bad_depth(depth):
    x = torch.ones(2, 3)
    with pytest.raises(ValueError, match='depth'):
        fc_ntk(x, x, depth=depth)
    with pytest.raises(ValueError, match='depth'):
        fc_nngp(x, x, depth=depth)
    with pytest.raises(ValueError, match='depth'):
        FCNTK(depth=depth)


@pytest.mark.parametrize('kwargs,name', [
    ({'weight_variance': 0.0}, 'weight_variance'), ({'weight_variance': -1.0}, 'weight_variance'),
    ({'weight_variance': math.nan}, 'weight_variance'),
    ({'weight_variance': math.inf}, 'weight_variance'),
    ({'weight_variance': 'x'}, 'weight_variance'), ({'weight_variance': None}, 'weight_variance'),
    ({'bias_variance': -0.1}, 'bias_variance'), ({'bias_variance': math.nan}, 'bias_variance'),
    ({'bias_variance': None}, 'bias_variance'),
])
def test_bad_variances(kwargs, name):
    x = torch.ones(2, 3)
    with pytest.raises(ValueError, match=name):
        fc_ntk(x, x, **kwargs)
    with pytest.raises(ValueError, match=name):
        FCNTK(**kwargs)


def test_zero_bias_variance_is_allowed():
    x = torch.eye(3)
    assert torch.isfinite(fc_ntk(x, x, bias_variance=0.0)).all()
    assert torch.isfinite(fc_ntk(torch.zeros(2, 3), x, bias_variance=0.0)).all()


@pytest.mark.parametrize('x,y', [
    (torch.ones(3), torch.ones(2, 3)),
    (torch.ones(2, 3), torch.ones(1, 2, 3)),
    (torch.ones(2, 3), torch.ones(2, 4)),
    (torch.ones(2, 0), torch.ones(2, 0)),
])
def test_bad_inputs(x, y):
    with pytest.raises(ValueError, match='x and y'):
        fc_ntk(x, y)
    with pytest.raises(ValueError, match='x and y'):
        fc_nngp(x, y)


def test_fcntk_object():
    kern = FCNTK()
    assert (kern.depth, kern.weight_variance, kern.bias_variance) == (1, 2.0, 0.01)
    assert kern.describe() == 'infinite-width FC-NTK, 1 hidden ReLU layer, s_w^2=2, s_b^2=0.01'
    kern2 = FCNTK(depth=3, weight_variance=1.5, bias_variance=0.0)
    assert kern2.describe() == 'infinite-width FC-NTK, 3 hidden ReLU layers, s_w^2=1.5, s_b^2=0'
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(4, 2, generator=gen)
    y = torch.randn(3, 2, generator=gen)
    torch.testing.assert_close(kern2(x, y), fc_ntk(x, y, 3, 1.5, 0.0), rtol=0, atol=0)
    torch.testing.assert_close(kern2.nngp(x, y), fc_nngp(x, y, 3, 1.5, 0.0), rtol=0, atol=0)
