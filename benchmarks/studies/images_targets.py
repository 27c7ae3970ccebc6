"""Probe (issue 43): diverse distilled images from the released moments, on CPU.

The 'moments' release (sum phi phi^T and sum phi y^T of unit-norm ScatterNet features) and the
pixel-prior release (per-class pixel sums and counts) are made once, as ``DPKIPScatterNet`` makes
them; everything after is post-processing:
  1. C = released Gram / n (PSD part + ridge), B = released cross / n. The overall feature mean m
     is not in B (its columns are pi_c mu_c - m / K); it is estimated as sqrt(l1) v1, the top
     eigenpair of C, signed so that the features of the released class-mean images point along
     it (on exact MNIST sums: cos(m, v1) = 0.9997). Then mu_c = (B_c + m / K) / pi_c (pi_c = 1/K)
     and the pooled within-class covariance S_w = C - sum_c pi_c mu_c mu_c^T; its top ``rank``
     eigenpairs above the noise edge (less the edge) are kept.
  2. Each support image j of class c gets its own target t_j = mu_c + scale U diag(sqrt l) z_j.
  3. The support is fitted to its target (maximise phi(x_j) . t_j), starting at the released class
     mean: ``--warp 0``: pixels free (Adam, clamp, optional pixel anchor to the mean);
     ``--warp k``: a smooth deformation of the mean (a k x k flow field, bicubic upsampled).
  4. Optional: ``--kip-steps`` of the usual KIP loss on (C, B).
Scored: KRR of the support (linear kernel, unit-norm features) and the paper's ConvNet
(``train_convnet``, ``--conv-steps`` full-batch steps), on the first ``--test`` test images.
``--mode base --inv-steps 0``: the released class means alone (10 copies per class).

    python benchmarks/studies/images_targets.py --cache /tmp/hi --warp 7 --lr 0.01

``--cache`` holds ``mnist_phi.npy`` (unit-norm features of the 60k training images) and
``mnist_moments.pt`` (their exact sums), written on the first run (about 5 CPU minutes).
One JSON line per run is appended to ``CACHE/targets.jsonl``.
"""

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's package

from sdv_dpkme.engines import kip_moments  # noqa: E402
from sdv_dpkme.engines.kip import centred_one_hot  # noqa: E402
from sdv_dpkme.images import convnet_accuracy, train_convnet  # noqa: E402
from sdv_dpkme.images.distill import krr_fit, project_unit_box  # noqa: E402
from sdv_dpkme.images.pixel_prior import (  # noqa: E402
    PixelPrior,
    initial_support,
    release_class_means,
)
from sdv_dpkme.images.scattering import ScatterNet  # noqa: E402
from sdv_dpkme.privacy import Ledger  # noqa: E402

K = 10


def cached_sums(cache, name, x, y):
    """Unit-norm features of the private images and their exact sums (benchmark cache)."""
    phi_file, sums_file = cache / f'{name}_phi.npy', cache / f'{name}_moments.pt'
    if not sums_file.exists():
        images = torch.from_numpy(x.astype(np.float32) / 255.0)[:, None]
        phi = kip_moments.unit_rows(ScatterNet((28, 28), norm_eps=1e-6).batched(images))
        gram, cross = kip_moments.feature_moments(phi, centred_one_hot(torch.from_numpy(y), K))
        np.save(phi_file, phi.numpy())
        torch.save(dict(gram=gram, cross=cross), sums_file)
    return torch.load(sums_file), torch.from_numpy(np.load(phi_file, mmap_mode='r')[:2].copy())


def releases(a, x, y, sums, phi_head):
    """The two releases as the class makes them (the Gram release reads the cached sums)."""
    exact = kip_moments.feature_moments
    kip_moments.feature_moments = lambda *_, **__: (sums['gram'].clone(), sums['cross'].clone())
    try:
        torch.manual_seed(1000 + a.seed)  # the releases' noise draw (benchmark only)
        ledger = Ledger.open(a.eps, 1e-5)
        images01 = torch.from_numpy(x.astype(np.float32) / 255.0)[:, None]
        means, _ = release_class_means(images01, y, K, ledger, PixelPrior())
        gram, cross, gram_noise = kip_moments.release_moments(
            phi_head, centred_one_hot(torch.from_numpy(y[:2]), K), ledger, gram_weight=0.85)
    finally:
        kip_moments.feature_moments = exact
    n = len(x)
    ridge = kip_moments.auto_ridge(gram_noise, len(gram), n) if np.isfinite(a.eps) else 1e-6
    c, b = kip_moments.loss_matrices(gram, cross, n, ridge)
    edge = kip_moments.noise_edge(gram_noise, len(gram), n) if np.isfinite(a.eps) else 0.0
    return means, c - ridge * torch.eye(len(c), dtype=c.dtype), c, b, edge


def targets_from(a, means, c_raw, b, edge, feat, labels_s, rng, info):
    """Steps 1-2: per-image feature targets from the released moments."""
    evals, evecs = torch.linalg.eigh(c_raw)
    v1 = evecs[:, -1]
    with torch.no_grad():
        v1 = v1 * torch.sign((feat(means.float()) @ v1).sum())
    m_hat = v1 * evals[-1].clamp(min=0).sqrt()
    pi = torch.full((K,), 1.0 / K, dtype=torch.float64)
    mu = (b.T + m_hat / K) / pi[:, None]
    within = c_raw - (pi[:, None, None] * mu[:, :, None] * mu[:, None, :]).sum(0)
    e2, u = torch.linalg.eigh(within)
    e2, u = e2.flip(0)[:a.rank], u.flip(1)[:, :a.rank]
    keep = e2 > edge
    e2, u = e2[keep] - edge, u[:, keep]
    info.update(rank_kept=int(keep.sum()), top_within=[round(float(v), 4) for v in e2[:5]])
    z = torch.randn(len(labels_s), len(e2), generator=rng, dtype=torch.float64)
    return mu[torch.from_numpy(labels_s)] + a.scale * (z * e2.sqrt()) @ u.T


def invert(a, start, targets, anchor_to, feat, rng, info):
    """Step 3: each support image fitted to its own target."""
    m = len(start)
    if a.warp:
        flow = (a.flow_noise * torch.randn(m, 2, a.warp, a.warp, generator=rng)).requires_grad_()
        ident = torch.nn.functional.affine_grid(torch.eye(2, 3)[None].repeat(m, 1, 1),
                                                (m, 1, 28, 28), align_corners=False)

        def render(fl):
            up = torch.nn.functional.interpolate(fl, size=(28, 28), mode='bicubic',
                                                 align_corners=False)
            return torch.nn.functional.grid_sample(start, ident + up.permute(0, 2, 3, 1),
                                                   align_corners=False)
        params = flow
    else:
        params = start.clone().requires_grad_(True)

        def render(s):
            return s
    optimizer = torch.optim.Adam([params], lr=a.lr)
    for _ in range(a.inv_steps):
        support = render(params)
        loss = -(feat(support) * targets).sum(1).mean()
        if a.anchor:
            loss = loss + a.anchor * ((support - anchor_to) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if not a.warp:
            with torch.no_grad():
                project_unit_box(params)
    with torch.no_grad():
        support = render(params).clamp(0, 1)
        info['cos_target'] = float((feat(support) * targets).sum(1).mean()
                                   / targets.norm(dim=1).mean())
    return support


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--data', default='mnist')
    p.add_argument('--data-dir', default='.devdata')
    p.add_argument('--cache', default='/tmp/images_targets')
    p.add_argument('--eps', type=float, default=np.inf)
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--mode', default='diverse', choices=['diverse', 'base'])
    p.add_argument('--rank', type=int, default=20)
    p.add_argument('--scale', type=float, default=1.0)
    p.add_argument('--warp', type=int, default=0)
    p.add_argument('--flow-noise', type=float, default=0.0)
    p.add_argument('--inv-steps', type=int, default=150)
    p.add_argument('--lr', type=float, default=0.05)
    p.add_argument('--anchor', type=float, default=0.0)
    p.add_argument('--kip-steps', type=int, default=0)
    p.add_argument('--conv-steps', type=int, default=100)
    p.add_argument('--test', type=int, default=2000)
    a = p.parse_args()
    t0, c0 = time.perf_counter(), time.process_time()
    cache = Path(a.cache)
    cache.mkdir(parents=True, exist_ok=True)
    z = np.load(Path(a.data_dir) / f'{a.data}.npz')
    x, y = z['x'], z['y'].astype(np.int64)
    xt, yt = z['xt'][:a.test], z['yt'][:a.test].astype(np.int64)
    sums, phi_head = cached_sums(cache, a.data, x, y)
    means, c_raw, c, b, edge = releases(a, x, y, sums, phi_head)
    rng = torch.Generator().manual_seed(a.seed)
    labels_s = np.repeat(np.arange(K), 10)
    support_y = centred_one_hot(torch.from_numpy(labels_s), K)
    net = ScatterNet((28, 28), norm_eps=1e-6)

    def feat(s):
        return kip_moments.unit_rows(net(s).double())
    support = initial_support(means, labels_s, 0.0, rng)
    info = {}
    if a.mode == 'diverse':
        targets = targets_from(a, means, c_raw, b, edge, feat, labels_s, rng, info)
        support = invert(a, support, targets, means[torch.from_numpy(labels_s)].float(), feat,
                         rng, info)
    if a.kip_steps:
        support = support.clone().requires_grad_(True)
        kip_moments.distil(support, feat, support_y, c, b, 1e-3, a.kip_steps, 0.05,
                           project=project_unit_box)
        support = support.detach()
    with torch.no_grad():
        fs = feat(support)
        alpha = krr_fit(fs, support_y, 1e-3)
        xt01 = torch.from_numpy(xt.astype(np.float32) / 255.0)[:, None]
        pred = torch.cat([feat(xt01[i:i + 500]) @ fs.T @ alpha
                          for i in range(0, len(xt01), 500)]).argmax(1).numpy()
    images = (support[:, 0] * 255).numpy()
    assert images.min() >= 0 and images.max() <= 255
    model = train_convnet(images, labels_s, pixel_range=(0, 255), steps=a.conv_steps,
                          random_state=a.seed)
    out = dict(vars(a), krr=float(np.mean(pred == yt)),
               conv=convnet_accuracy(model, xt, yt, pixel_range=(0, 255)),
               within_class_pixel_std=float(support.reshape(K, 10, -1).std(1).mean()),
               wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0, **info,
               peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out['eps'] = 'inf' if not np.isfinite(a.eps) else a.eps
    print(json.dumps(out), flush=True)
    with (cache / 'targets.jsonl').open('a') as f:
        f.write(json.dumps(out) + '\n')
    np.save(cache / f"support_{a.mode}_{out['eps']}_{a.seed}_w{a.warp}_s{a.scale:g}.npy", images)


if __name__ == '__main__':
    main()
