"""Balog et al. reweighting: (a) the paper's mixture experiment, (b) Adult with a biased public
subset. Writes benchmarks/results/reweighting.md (and a JSON of every run next to it).

(a) N = 100,000 private points from a 10-Gaussian mixture in D = 2 and 5 (component weights
    proportional to 1, 1/2, ..., 1/10, means ~ N(100, 200^2 I), within-component std 30, the
    research code's std reading), delta = 1e-6, kernel exp(-gamma ||x - y||^2) with gamma =
    1e-4 / D. Public points: an independent draw of the same mixture (the paper's 'leak' points
    are the first M private rows; an independent draw is the stricter version). Metric: RKHS
    distance to the private empirical embedding, exact kernel. For each M of a grid the basis
    keeps every numerically non-zero direction (as the paper's Gram-Schmidt does); 'auto' is our
    default one-release rule (basis directions kept by their signal-to-noise, M = 1000).
    Picking the best M of a grid reads the private data, as the paper's figures do: the 'auto'
    column is the honest one-release number.
(b) Adult: public rows = 2 % of the train split drawn with a selection bias (rows with
    educational-num >= 13, a bachelor's degree or more, 4x as likely); private rows = the rest
    of the train split. epsilon = 1, delta = 1e-5, bundled public domain. Compared: uniform
    public rows, reweighted public rows (DPReweightingSynthesizer, defaults), DP-HP (defaults),
    and DP-HP's generated rows reweighted to its own released embeddings (post-processing, no
    extra epsilon; the two DP-HP arms are fitted on one test-only fixed noise seed per seed, so
    they share their releases). Metrics against the private train split: SDMetrics quality, 3-way TV, MMD
    (the reweighting kernel on the public encoding); TSTR on the test split.

Usage: python benchmarks/studies/reweighting.py [--part a|b|both] [--quick] [--report-only]
"""

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402
from sdv_dpkme.engines import reweighting as rw  # noqa: E402
from sdv_dpkme.privacy import Ledger  # noqa: E402

PAPER = {  # (D, epsilon): (Algorithm 1 distance, its M); the table, from the repo's files
    (2, 1.0): (0.0009, 422), (2, 0.1): (0.0093, None), (2, 0.01): (0.0564, None),
    (5, 1.0): (0.0025, 613), (5, 0.1): (0.0149, None), (5, 0.01): (0.0789, None),
}
PAPER_UNIFORM = {2: 0.0078, 5: 0.0082}
PAPER_ALG2 = {2: 0.0025, 5: 0.0341}


def mixture(n, d, rng):
    means = np.random.default_rng(0).normal(100, 200, size=(10, d))
    weights = 1 / np.arange(1, 11)
    component = rng.choice(10, size=n, p=weights / weights.sum())
    return means[component] + rng.normal(0, 30, size=(n, d))


def mean_kernel_rows(kernel, z, x):
    return kernel.row_sums(z, x) / len(x)


def distance(gram, kbar, mean_kxx, w):
    w = torch.as_tensor(np.asarray(w, dtype=float))
    return math.sqrt(max(float(w @ gram @ w - 2 * w @ kbar + mean_kxx), 0.0))


def part_a(quick, out):
    n = 20_000 if quick else 100_000
    grid = [30, 100, 300, 1000]  # the paper's best M were 422 and 613
    epsilons = [1.0, 0.1, 0.01]
    seeds = 2 if quick else 3
    auto_m = 1000
    rows = []
    for d in (2, 5):
        x = mixture(n, d, np.random.default_rng(1))
        kernel = rw.GaussianProductKernel(np.full(d, math.sqrt(2e-4 / d)))
        started = time.perf_counter()
        mean_kxx = rw.mean_kernel(kernel, x, 2048)
        print(f'D={d}: mean k(x, x) over {n:,}^2 pairs in {time.perf_counter() - started:.0f} s',
              flush=True)
        public = mixture(10_000, d, np.random.default_rng(2))
        kbar_all = mean_kernel_rows(kernel, public, x)
        uniform_gram = None
        for m in [*grid, 10_000]:
            z = public[:m]
            gram = kernel(z, z)
            kbar = kbar_all[:m]
            if m == 10_000:
                uniform_gram = distance(gram, kbar, mean_kxx, np.full(m, 1 / m))
                continue
            started = time.perf_counter()
            basis = rw.public_basis(kernel, z, tolerance=0.0)  # every non-zero direction
            alpha = basis.transform @ kbar  # = mean of phi(x) over the private rows
            phi_z = rw.features_of(basis, z)
            setup = time.perf_counter() - started
            for eps in epsilons:
                for seed in range(seeds):
                    ledger = Ledger.open(eps, 1e-6)
                    sigma = ledger.accountant.calibrate({'e': (1.0, 1)})['e']
                    beta = ledger.mechanism.release(alpha, name='e', description='',
                                                    sensitivity=2 / n, noise_multiplier=sigma)
                    signed, probabilities = rw.embedding_weights(phi_z, beta)
                    rows.append(dict(D=d, epsilon=eps, M=m, seed=seed, basis=basis.dim,
                                     signed=distance(gram, kbar, mean_kxx, signed),
                                     simplex=distance(gram, kbar, mean_kxx, probabilities),
                                     setup_s=setup))
            print(f'  M={m}: basis {basis.dim}, setup {setup:.1f} s', flush=True)
        # our default: one release, 'auto' basis on the public points, through fit_public
        for eps in epsilons:
            for seed in range(seeds):
                ledger = Ledger.open(eps, 1e-6)
                started = time.perf_counter()
                signed, probabilities, basis, _ = rw.fit_public(
                    x, public[:auto_m], kernel, ledger, rw.Algorithm1Settings(),
                    torch.Generator().manual_seed(seed))
                seconds = time.perf_counter() - started
                z = public[:auto_m]
                gram, kbar = kernel(z, z), kbar_all[:auto_m]
                rows.append(dict(D=d, epsilon=eps, M='auto', seed=seed, basis=basis.dim,
                                 signed=distance(gram, kbar, mean_kxx, signed),
                                 simplex=distance(gram, kbar, mean_kxx, probabilities),
                                 setup_s=seconds))
        # Algorithm 2 rows: part_alg2 (the same data)
        rows.append(dict(D=d, epsilon=None, M='uniform 10k', seed=0, basis=0,
                         signed=uniform_gram, simplex=uniform_gram, setup_s=0))
    (out / 'reweighting_mixture.json').write_text(json.dumps(rows, indent=1))
    return part_alg2(quick, out)


def mixture_reduced_set(kernel, x, public, m, ledger, rng):
    """Algorithm 2 through the engine: coordinates mapped to [0, 1] by public bounds
    [-600, 800]^D (the range the mixture's means can take), random features of the same kernel,
    one release, then ``reweighting.reduced_set`` (Frank-Wolfe over public-noise points,
    refinement of points and weights). Returns the points in raw coordinates and their
    simplex weights."""
    from sdv_dpkme.features import Block

    low, span = -600.0, 1400.0
    d = x.shape[1]
    unit_kernel = rw.GaussianProductKernel(kernel.scales.numpy() * span)
    fmap = rw.RandomFeatureMap(unit_kernel, 10_000, rng)
    beta, _ = rw.release_embedding((x - low) / span, fmap, ledger, 'rff')
    blocks = [Block(f'x{j}', 'numeric', (j,)) for j in range(d)]
    settings = rw.Algorithm2Settings(n_features=10_000, n_points=m, steps=300,
                                     learning_rate=0.05)
    z, probabilities, _ = rw.reduced_set(fmap, beta, blocks, d, settings, rng)
    return z * span + low, probabilities


def part_alg2(quick, out):
    """Algorithm 2 rows only (replaces those of a saved part (a) run)."""
    n = 20_000 if quick else 100_000
    path = out / 'reweighting_mixture.json'
    rows = [r for r in json.loads(path.read_text()) if r['M'] != 'alg2'] if path.exists() else []
    for d in (2, 5):
        x = mixture(n, d, np.random.default_rng(1))
        kernel = rw.GaussianProductKernel(np.full(d, math.sqrt(2e-4 / d)))
        public = mixture(10_000, d, np.random.default_rng(2))
        mean_kxx = rw.mean_kernel(kernel, x, 2048)
        ledger = Ledger.open(1.0, 1e-6)
        started = time.perf_counter()
        z, probabilities = mixture_reduced_set(kernel, x, public, 1000, ledger,
                                               torch.Generator().manual_seed(0))
        seconds = time.perf_counter() - started
        gram, kbar = kernel(z, z), mean_kernel_rows(kernel, z, x)
        rows.append(dict(D=d, epsilon=1.0, M='alg2', seed=0, basis=10_000, signed=float('nan'),
                         simplex=distance(gram, kbar, mean_kxx, probabilities.numpy()),
                         setup_s=seconds))
        print(f'D={d}: Algorithm 2 {rows[-1]["simplex"]:.4f} in {seconds:.0f} s', flush=True)
    path.write_text(json.dumps(rows, indent=1))
    return rows


def table_a(rows):
    frame = pd.DataFrame(rows)
    lines = ['| D | epsilon | Algorithm 1, best M of the grid (signed w) | its M | basis | '
             'simplex w, same M | ours: one release, auto basis (signed / simplex) | paper | '
             'uniform 10k (ours / paper) |', '|' + '---|' * 9]
    for d in (2, 5):
        uniform = frame[(frame.D == d) & (frame.M == 'uniform 10k')].signed.iloc[0]
        for eps in (1.0, 0.1, 0.01):
            sub = frame[(frame.D == d) & (frame.epsilon == eps)]
            grid = sub[sub.M.apply(lambda m: isinstance(m, int))]
            means = grid.groupby('M')[['signed', 'simplex', 'basis']].mean()
            best = means.signed.idxmin()
            auto = sub[sub.M == 'auto'][['signed', 'simplex', 'basis']].mean()
            paper, paper_m = PAPER[(d, eps)]
            lines.append(
                f'| {d} | {eps:g} | **{means.signed[best]:.4f}** | {best} | '
                f'{means.basis[best]:.0f} | {means.simplex[best]:.4f} | '
                f'{auto.signed:.4f} / {auto.simplex:.4f} (basis {auto.basis:.0f}) | {paper:.4f}'
                f'{f" (M = {paper_m})" if paper_m else ""} | '
                f'{uniform:.4f} / {PAPER_UNIFORM[d]:.4f} |')
    lines += ['', '| D | Algorithm 2 at epsilon = 1 (J = 10,000, at most 1,000 points; simplex w) | '
              'paper (M = 10k) |', '|---|---|---|']
    for d in (2, 5):
        alg2 = frame[(frame.D == d) & (frame.M == 'alg2')]
        lines.append(f'| {d} | {alg2.simplex.mean():.4f} ({alg2.setup_s.mean():.0f} s) | '
                     f'{PAPER_ALG2[d]:.4f} |')
    grid = frame[frame.M.apply(lambda m: isinstance(m, int))]
    full = grid.groupby(['D', 'epsilon', 'M'])['signed'].mean().unstack('M')
    lines += ['', 'Every M of the grid (signed weights, mean over seeds):', '',
              '| D | epsilon | ' + ' | '.join(f'M = {m}' for m in full.columns) + ' |',
              '|' + '---|' * (len(full.columns) + 2)]
    lines += [f'| {d} | {eps:g} | ' + ' | '.join(f'{v:.4f}' for v in row) + ' |'
              for (d, eps), row in full.iterrows()]
    return '\n'.join(lines)


# ------------------------------------------------------------------------------- Adult (b)
def adult_split():
    train, test, metadata, domain = harness.adult_split()
    rng = np.random.default_rng(0)
    bias = np.where(train['educational-num'] >= 13, 4.0, 1.0)
    pick = rng.choice(len(train), size=int(0.02 * len(train)), replace=False,
                      p=bias / bias.sum())
    public = train.iloc[pick].reset_index(drop=True)
    private = train.drop(train.index[pick]).reset_index(drop=True)
    return private, public, test, metadata, domain


def fit_reweighting(private, public, metadata, domain, seed):
    """DPReweightingSynthesizer (defaults, ε = 1, δ = 1e-5) on the private rows: (synth, seconds)."""
    from sdv_dpkme import DPReweightingSynthesizer

    started = time.perf_counter()
    synth = harness.make(DPReweightingSynthesizer, metadata, 1.0, delta=1e-5, public_data=public,
                         domain=domain, target_column='income', verbose=False, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'adult': private})
    return synth, time.perf_counter() - started


def mmd(kernel_fn, a, b, rows=4000, seed=0):
    rng = np.random.default_rng(seed)
    a = a[rng.choice(len(a), size=min(rows, len(a)), replace=False)]
    b = b[rng.choice(len(b), size=min(rows, len(b)), replace=False)]
    value = (kernel_fn(a, a).mean() + kernel_fn(b, b).mean() - 2 * kernel_fn(a, b).mean())
    return math.sqrt(max(float(value), 0.0))


def part_b(quick, out, draws=1, public_only=False):
    from sdv_dpkme import DPHPSynthesizer
    from sdv_dpkme.evaluation import quality_scores
    from sdv_dpkme.evaluation.marginals import marginal_tv
    from sdv_dpkme.evaluation.tstr import tstr_scores

    private, public, test, metadata, domain = adult_split()
    print(f'Adult: {len(private):,} private rows, {len(public):,} public rows; '
          f"share >50K: private {(private.income == '>50K').mean():.3f}, "
          f"public {(public.income == '>50K').mean():.3f}", flush=True)
    seeds = [0] if quick else [0, 1, 2]
    n_out = len(private)
    columns = list(private.columns)
    categorical = [c for c in columns if c in domain['known_categories']]
    bounds = domain['known_min_max_values']
    encoder = None
    results = []

    def score(name, seed, table, seconds, draw=0):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            quality = quality_scores(private, table, metadata)
            tv = marginal_tv(private, table, columns, alpha=3, max_subsets=100,
                             categorical=categorical,
                             bins={c: np.linspace(*bounds[c], 11) for c in bounds})
            tstr = tstr_scores(table, test, 'income', [c for c in categorical if c != 'income'],
                               [c for c in columns if c not in categorical],
                               categories=domain['known_categories'],
                               classifiers=['LogisticRegression', 'RandomForestClassifier',
                                            'XGBClassifier'])
            tstr = tstr[tstr['classifier'] == 'mean']
        enc_private = encoder[0](private)
        enc_table = encoder[0](table)
        row = dict(method=name, seed=seed, draw=draw, quality=quality['quality'],
                   column_shapes=quality['column_shapes'],
                   column_pair_trends=quality['column_pair_trends'], tv3=tv,
                   tstr_roc=float(tstr['roc_auc'].mean()), tstr_pr=float(tstr['pr_auc'].mean()),
                   mmd=mmd(encoder[1], enc_private, enc_table), fit_s=seconds)
        results.append(row)
        print(f'  {name} seed {seed}: ' + ', '.join(
            f'{k} {v:.4f}' for k, v in row.items() if isinstance(v, float)), flush=True)

    for seed in seeds:
        reweighted, seconds = fit_reweighting(private, public, metadata, domain, seed)
        if encoder is None:  # the public encoding and the reweighting kernel, for the MMD
            processor = reweighted._data_processor
            kernel = reweighted._model.kernel

            def encode(frame, processor=processor):
                return processor.transform(frame[columns]).to_numpy(float)

            encoder = (encode, lambda a, b, kernel=kernel: kernel(a, b))
        # several resampling draws per fit: both arms resample 781 rows into 38k, and the
        # draw alone moves TSTR PR-AUC by about as much as the gap between them
        for draw in range(draws):
            uniform = public.sample(n_out, replace=True, random_state=seed + 1000 * draw)
            score('uniform public rows', seed, uniform.reset_index(drop=True), 0.0, draw)
            score('reweighted public rows', seed, reweighted.sample(n_out)['adult'], seconds,
                  draw)
        if public_only:
            continue

        # the same releases and training with and without the reweighted pools: two fits paired
        # on a test-only fixed noise seed (the pools are post-processing of those releases)
        for name, rows in (('DP-HP', None), ('DP-HP + reweighted generated rows', 4000)):
            started = time.perf_counter()
            with warnings.catch_warnings(), harness.fixed_noise(10_000 + seed):
                warnings.simplefilter('ignore')
                dphp = harness.make(DPHPSynthesizer, metadata, 1.0, delta=1e-5, domain=domain,
                                    target_column='income', reweight_generated_rows=rows,
                                    verbose=False, random_state=seed)
                dphp.fit({'adult': private})
            score(name, seed, dphp.sample(n_out)['adult'], time.perf_counter() - started)
    path = out / 'reweighting_adult.json'
    if public_only and path.exists():  # keep the saved DP-HP rows
        results += [r for r in json.loads(path.read_text()) if 'DP-HP' in r['method']]
    path.write_text(json.dumps(results, indent=1))
    return results


def table_b(rows):
    frame = pd.DataFrame(rows)
    if 'draw' not in frame:
        frame['draw'] = 0
    # draws of one fit are averaged first: the ± is over fits (seeds)
    frame = frame.groupby(['method', 'seed'], as_index=False).mean(numeric_only=True)
    metrics = ['quality', 'column_shapes', 'column_pair_trends', 'tv3', 'mmd', 'tstr_roc',
               'tstr_pr', 'fit_s']
    order = ['uniform public rows', 'reweighted public rows', 'DP-HP',
             'DP-HP + reweighted generated rows']
    means = frame.groupby('method')[metrics].mean().reindex(order)
    stds = frame.groupby('method')[metrics].std().reindex(order)
    lines = ['| method | ' + ' | '.join(metrics) + ' |', '|' + '---|' * (len(metrics) + 1)]
    for method in order:
        cells = [f'{means.loc[method, m]:.4f}' + (
            f' ± {stds.loc[method, m]:.4f}' if frame.seed.nunique() > 1 else '')
            for m in metrics]
        lines.append(f'| {method} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--part', choices=['a', 'alg2', 'b', 'both'], default='both')
    parser.add_argument('--quick', action='store_true')
    parser.add_argument('--draws', type=int, default=1,
                        help='(b) resampling draws per fit of the public-row arms (averaged)')
    parser.add_argument('--public-only', action='store_true',
                        help='(b) rerun only the public-row arms; keep the saved DP-HP rows')
    parser.add_argument('--out', default=str(harness.RESULTS))
    parser.add_argument('--report-only', action='store_true',
                        help='print the tables of the saved JSON runs')
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report_only:  # tables from the saved runs
        for name, table in (('mixture', table_a), ('adult', table_b)):
            path = out / f'reweighting_{name}.json'
            if path.exists():
                print(table(json.loads(path.read_text())), '\n')
        return
    if args.part in ('a', 'both'):
        print(table_a(part_a(args.quick, out)))
    if args.part == 'alg2':
        print(table_a(part_alg2(args.quick, out)))
    if args.part in ('b', 'both'):
        print(table_b(part_b(args.quick, out, args.draws, args.public_only)))


if __name__ == '__main__':
    main()
