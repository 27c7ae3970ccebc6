"""The DP-KIP-ScatterNet paper's Table 3 protocol on the full image sets, on whatever device torch
sees (issue 43): made for a lent GPU, where the whole grid fits in minutes.

Cells, in priority order (a wall budget stops the grid between cells, so the most important ones
run first): distilled sets (``DPKIPScatterNet`` at the class defaults, the public ``fit`` path,
``device='auto'``) at eps = 1 and 10, 10 random real images per class, the eps = inf ceiling of
the same pipeline (no noise, ridge 1e-6), the DP-MERF / DP-HP image generators at their class
defaults (10,000 generated images); seeds 0 first, then 1 and 2. Every cell trains the paper's
ConvNet (``train_convnet``, 300 full-batch steps on 100 images, 2,000 steps of 256 on generated
sets) and scores it on the 10k real test images. One JSON line per cell goes to
``OUT/table3_gpu.jsonl`` as soon as the cell ends; the released images to ``OUT/images.npz``.

    python benchmarks/studies/images_table3_gpu.py --data-dir DIR --out OUT --budget 450

``--data-dir`` holds ``mnist.npz`` / ``fashion.npz`` (x, y, xt, yt as uint8 / int), written here
from the package's loaders (``--export DIR``) so that a machine without the wheels can run it.
``--smoke`` runs a tiny grid (subsets, few steps) to check the script itself.
"""

import argparse
import json
import platform
import resource
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's package

from sdv_dpkme.images import (  # noqa: E402
    DPHPImageGenerator,
    DPKIPScatterNet,
    DPMERFImageGenerator,
    PixelPrior,
    convnet_accuracy,
    train_convnet,
)
from sdv_dpkme.images.scattering import ScatterNet  # noqa: E402

DATA = ('mnist', 'fashion')
CONV_STEPS = 300  # full-batch steps on the 100 images (the benchmark's schedule)
GEN_CONV_STEPS = 2000  # batches of 256 on 10,000 generated images (about 50 epochs)


def export(folder):
    from sdv_dpkme.images.data import load_fashion_mnist, load_mnist_full
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, loader in (('mnist', load_mnist_full), ('fashion', load_fashion_mnist)):
        (x, y), (xt, yt) = loader()
        np.savez_compressed(folder / f'{name}.npz', x=x, y=y, xt=xt, yt=yt)


def load(folder, name, smoke):
    z = np.load(Path(folder) / f'{name}.npz')
    x, y, xt, yt = z['x'], z['y'].astype(np.int64), z['xt'], z['yt'].astype(np.int64)
    if smoke:
        x, y, xt, yt = x[:3000], y[:3000], xt[:500], yt[:500]
    return x, y, xt, yt


def gpu_peak_mb():
    return torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None


def fit_distilled(x, y, epsilon, seed, moment_steps, init_noise=None):
    prior = PixelPrior() if init_noise is None else PixelPrior(init_noise=init_noise)
    if np.isfinite(epsilon):
        return DPKIPScatterNet(epsilon, 1e-5, pixel_range=(0, 255), moment_steps=moment_steps,
                               pixel_prior=prior, device='auto', random_state=seed).fit(x, y)
    # eps = inf: the same steps with a not-private ledger and the exact sums (benchmark only)
    model = DPKIPScatterNet(np.inf, 1e-5, pixel_range=(0, 255), moment_ridge=1e-6,
                            moment_steps=moment_steps, pixel_prior=prior, device='auto',
                            random_state=seed)
    started = time.perf_counter()
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    images = torch.from_numpy(x.astype(np.float32) / 255.0)[:, None]
    phi = ScatterNet((28, 28), norm_eps=model._norm_eps()).to(device).batched(images.to(device))
    return model._fit_features(phi, y, (1, 28, 28), True, (0.0, 255.0), started,
                               images01=images)


def run_cell(cell, data, args, saved):
    kind, name, epsilon, seed = cell
    x, y, xt, yt = data[name]
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    out = dict(kind=kind, data=name, epsilon=None if epsilon is None else
               (epsilon if np.isfinite(epsilon) else 'inf'), seed=seed)
    conv_steps = args.conv_steps
    if kind == 'distilled':
        model = fit_distilled(x, y, epsilon, seed, args.moment_steps, args.init_noise)
        images, labels = model.distilled_images_, model.distilled_labels_
        out.update(fit_seconds=model.fit_seconds_, moment_steps=args.moment_steps,
                   init_noise=args.init_noise,
                   epsilon_spent=(model.privacy_report_.epsilon_spent
                                  if np.isfinite(epsilon) else None))
        t = time.perf_counter()
        out['krr_accuracy'] = model.score(xt, yt)
        out['krr_seconds'] = time.perf_counter() - t
    elif kind == 'real10':
        rng = np.random.default_rng(seed)
        picks = np.concatenate([rng.choice(np.flatnonzero(y == c), 10, replace=False)
                                for c in range(10)])
        images, labels = x[picks].astype(np.float32), y[picks]
    else:
        cls = DPMERFImageGenerator if kind == 'dpmerf' else DPHPImageGenerator
        gen = cls(epsilon, 1e-5, pixel_range=(0, 255), device='auto', random_state=seed,
                  **({'steps': args.gen_steps} if args.gen_steps else {}))
        gen.fit(x, y)
        images, labels = gen.sample(args.generated, random_state=seed)
        out.update(fit_seconds=gen.fit_seconds_, epsilon_spent=gen.privacy_report_.epsilon_spent,
                   generator_steps=gen.steps)
        conv_steps = args.gen_conv_steps
    assert np.min(images) >= 0 and np.max(images) <= 255, 'released images outside the range'
    t = time.perf_counter()
    net = train_convnet(images, labels, pixel_range=(0, 255), steps=conv_steps,
                        random_state=seed, device='auto')
    out.update(convnet_accuracy=convnet_accuracy(net, xt, yt, pixel_range=(0, 255)),
               convnet_steps=conv_steps, convnet_seconds=time.perf_counter() - t,
               cell_seconds=time.perf_counter() - started, gpu_peak_mb=gpu_peak_mb(),
               rss_peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    if kind != 'real10':
        saved[f'{kind}_{name}_{out["epsilon"]}_{seed}'] = np.asarray(images[:100],
                                                                   dtype=np.float32)
    return out


def grid(args):
    first = [('distilled', 'mnist', 1.0, 0), ('real10', 'mnist', None, 0),
             ('distilled', 'fashion', 1.0, 0), ('real10', 'fashion', None, 0),
             ('distilled', 'mnist', 10.0, 0), ('distilled', 'fashion', 10.0, 0),
             ('distilled', 'mnist', np.inf, 0), ('distilled', 'fashion', np.inf, 0),
             ('dpmerf', 'mnist', 1.0, 0), ('dpmerf', 'fashion', 1.0, 0)]
    more = [(k, d, e, s) for s in (1, 2) for k, d, e in
            [('real10', 'mnist', None), ('real10', 'fashion', None),
             ('distilled', 'mnist', 1.0), ('distilled', 'fashion', 1.0),
             ('distilled', 'mnist', 10.0), ('distilled', 'fashion', 10.0)]]
    rest = [(k, d, e, s) for s in (1, 2) for k, d, e in
            [('distilled', 'mnist', np.inf), ('distilled', 'fashion', np.inf),
             ('dpmerf', 'mnist', 1.0), ('dpmerf', 'fashion', 1.0)]]
    rest += [('dphp', 'mnist', 1.0, 0), ('dphp', 'fashion', 1.0, 0)]
    return first + more + rest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--data-dir', default='.devdata')
    parser.add_argument('--out', default='/tmp/table3_gpu')
    parser.add_argument('--budget', type=float, default=450.0, help='seconds; no cell starts after')
    parser.add_argument('--moment-steps', type=int, default=300)
    parser.add_argument('--conv-steps', type=int, default=CONV_STEPS)
    parser.add_argument('--gen-conv-steps', type=int, default=GEN_CONV_STEPS)
    parser.add_argument('--gen-steps', type=int, default=None)
    parser.add_argument('--generated', type=int, default=10_000)
    parser.add_argument('--only', default=None, help='comma list of cell kinds')
    parser.add_argument('--cells', default=None,
                        help='kind:data:epsilon:seed,... instead of the grid (epsilon inf or -)')
    parser.add_argument('--init-noise', type=float, default=None,
                        help="PixelPrior's init_noise (default: the class default)")
    parser.add_argument('--smoke', action='store_true')
    parser.add_argument('--export', default=None)
    args = parser.parse_args()
    if args.export:
        return export(args.export)
    if args.smoke:
        args.moment_steps, args.conv_steps, args.gen_conv_steps = 3, 3, 3
        args.gen_steps, args.generated = 3, 200
    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(kind='env', torch=torch.__version__, python=platform.python_version(),
               cuda=torch.cuda.is_available(), threads=torch.get_num_threads(),
               device=torch.cuda.get_device_name(0) if torch.cuda.is_available() else
               platform.processor())
    print(json.dumps(env), flush=True)
    data = {name: load(args.data_dir, name, args.smoke) for name in DATA}
    log = out / 'table3_gpu.jsonl'
    with log.open('a') as f:
        f.write(json.dumps(env) + '\n')
    saved = {}
    cells = grid(args)
    if args.cells:
        cells = [(k, d, None if e == '-' else float(e), int(s))
                 for k, d, e, s in (c.split(':') for c in args.cells.split(','))]
    if args.only:
        cells = [c for c in cells if c[0] in args.only.split(',')]
    for cell in cells:
        if time.perf_counter() - t0 > args.budget:
            print(f'budget reached before {cell}', flush=True)
            break
        try:
            row = run_cell(cell, data, args, saved)
        except Exception:  # keep the grid going; the traceback is the result of this cell
            row = dict(kind=cell[0], data=cell[1], seed=cell[3], error=traceback.format_exc())
        row['elapsed'] = time.perf_counter() - t0
        print(json.dumps(row), flush=True)
        with log.open('a') as f:
            f.write(json.dumps(row) + '\n')
        if saved:
            np.savez_compressed(out / 'images.npz', **saved)


if __name__ == '__main__':
    main()
