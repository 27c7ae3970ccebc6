"""The pooled one-way release's numeric columns on MST's basis: hat functions over public bins
(issue 42, stop 61). A probe, not a package option.

Why: on the small held-out tables DP-HP trails MST on column shapes. Where the class-conditional
'marginals' are noise, the plan releases 'one_way' (pooled over the classes) instead, and its
numeric part is a Fourier series at the fine length of 'marginals' (0.01 on a 215-row Adult
sample: 137 frequencies per column). Each coordinate's noise is then several times its signal, and
the generator's fit to that noise gathers mass at the box edges (``edge_mass.py``). MST measures
each column on ten public bins instead.

The arm ``hat<B>`` swaps, inside every ``OneWayMap``, the Fourier part for linear B-splines (hat
functions) on B equal public bins of [0, 1]: h_j(v) = max(0, 1 - |B v - j|), j = 0..B, so
sum_j h_j = 1, h >= 0 and ||h|| <= 1; a nullable column adds its missing indicator z as
[(1 - z) h, z] (non-negative, norm <= 1). The mean embedding of any distribution is a point of
the simplex over the B + 1 knots and every such point is one, so fitting the noisy release is a
projection onto that simplex, as MST's estimate of a one-way marginal is. Non-negative blocks of
norm <= 1 differ by at most sqrt(2) in norm, so the release's replace-one bound is sqrt(2) (the
Fourier part needs 2 per column: ``OneWayMap.replace_bound``). ``hat<B>L`` keeps the Fourier
bound (the same noise per coordinate as the default, so the objectives' noise weights stay as
they are). Other arms: ``base`` (the package as it is), ``steps<S>`` (``steps=S``) and
``spread<P>`` (the collapse check's ``spread`` at P % of the public range instead of 1 %),
``nspread<P>`` (a class whose numeric columns all have a std below P % of their range counts
as collapsed, whatever its heads draw: ``collapsed_classes(numeric_spread=P / 100)``, adopted at
3 % for two or more numeric columns in stop 62; the stop 62 rows ran a copy of that rule in
this file, the same on every table here, each having two or more numeric columns). A
trailing ``C`` (``baseC``, ``hat10C``) also runs the collapse fallback when a numeric column comes
out constant in every class (``column_collapse``), not only when whole rows do; a trailing
``R`` or ``M`` (``baseR``, ``baseM``) does so only for a non-nullable column whose pooled
one-way release lies closer to the uniform prior's embedding than to the generated column's
(``release_prefers_prior``: 'M' the column as generated, its classes mixed by the released
weights; 'R' a point mass at the last class's mean value, as first run).

Adult (the tuning table): ``small_marginals.run_one`` (n rows of the bundled sample, fixed noise
per seed: test only). Held-out tables (``--heldout``): the suite's split and declaration
(``heldout.split``), fixed noise per seed, scored by the suite's ``_score``; a diagnosis,
reported as it falls, never a tuning input.

    python -m benchmarks.studies.one_way_bins --arms base hat10 --n 215 500 \
        --epsilons 0.3 1 --seeds 0 1 2 3 4 5 --out /tmp/one_way_bins.csv
    python -m benchmarks.studies.one_way_bins --arms base hat10 --heldout wine \
        student_placements breast_cancer --epsilons 1 0.3 --seeds 0 1 2 --out /tmp/ho.csv

Each fit runs in its own process (an arm patches the package's classes). ``--distances``
prints, for held-out fits with the fallback off, each class's distance to its own releases
from the generated rows and from the uniform prior (``class_distances``).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

for _name in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_name, '1')  # as small_marginals: one thread, the same sums

import pandas as pd  # noqa: E402
import torch  # noqa: E402

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE))  # this checkout's harness and package


class HatMarginal:
    """Hat functions on ``bins`` equal bins of [0, 1] per numeric column, scaled by 1 / sqrt(p)
    as ``FourierMarginalMap`` is (||phi|| <= 1). The attributes the plan reads of a Fourier map
    are set so that it never narrows this one."""

    norm_bound = 1.0
    additive = True
    length_scale = 1.0
    n_frequencies = 1

    def __init__(self, blocks, bins):
        self.blocks = tuple(b for b in blocks if b.kind == 'numeric')
        self.bins = int(bins)
        self._series = self  # the plan's and calibration's view of a Fourier map's series

    def width(self, block):
        return self.bins + 1 + int(block.nullable)

    @property
    def dim(self):
        return sum(self.width(b) for b in self.blocks)

    @property
    def coordinate_bound(self):
        return 1.0 / math.sqrt(len(self.blocks))

    def _parts(self, x):
        knots = torch.arange(self.bins + 1, dtype=x.dtype, device=x.device)
        parts = []
        for b in self.blocks:  # any row: NaN and out-of-range values land inside [0, 1]
            v = torch.nan_to_num(x[:, b.columns[0]], nan=0.5).clamp(0, 1) * self.bins
            h = (1 - (v[:, None] - knots).abs()).clamp(min=0)
            if b.nullable:
                z = torch.nan_to_num(x[:, b.columns[1]], nan=1.0).clamp(0, 1)[:, None]
                h = torch.cat([(1 - z) * h, z], 1)
            parts.append(h)
        return parts

    def __call__(self, x):
        return torch.cat(self._parts(x), 1) / math.sqrt(len(self.blocks))

    def gram(self, a, b, cache=None):
        return self(a) @ self(b).T

    def class_sums(self, x, y, project=True):
        return y.to(x.dtype).T @ self(x)

    def class_moments(self, x, y):
        phi, y = self(x), y.to(x.dtype)
        return y.T @ phi, y.T @ (phi * phi).sum(1)

    def describe(self):
        return f'hat functions on {self.bins} public bins of {len(self.blocks)} numeric columns'


def column_collapse(original, rows=512, spread=0.01, supported=None):
    """``collapsed_classes`` that also reports every class when some numeric column comes out
    constant (std below ``spread`` of its public range) in every class: the fallback then runs
    for a fit that parked a whole column at one value, as for one whose rows are identical."""
    def check(generator, classes):
        found = original(generator, classes)
        if found or not len(classes):
            return found
        gen = torch.Generator().manual_seed(0)
        numeric = [b.columns[0] for b in generator.blocks if b.kind == 'numeric']
        flat, made = set(numeric), []
        for c in classes:
            z = torch.randn(rows, generator.latent_dim, generator=gen)
            y = torch.nn.functional.one_hot(torch.full((rows,), int(c)),
                                            generator.n_classes).float()
            with torch.no_grad():
                soft = generator(z, y, generator._numeric_noise(rows, gen, 'cpu'))
            flat &= {col for col in numeric if float(soft[:, col].std()) < spread}
            made.append(soft)
        if supported is not None:
            flat = {col for col in flat if supported(col, made)}
        return [int(c) for c in classes] if flat else []
    return check


#: the fixed objectives and released class weights of the fit being trained (set by ``install``
#: for a trailing 'R' or 'M')
RELEASES, WEIGHTS = [], []


def release_prefers_prior(column, made, mixed=False):
    """Whether the pooled one-way release of a non-nullable numeric ``column`` lies closer to
    the embedding of the uniform prior than to that of the generated column (public: the
    release, the prior, the generator). ``made``: the generated rows of each class in turn.
    ``mixed``: the column as generated, its classes mixed by the released class weights ('M');
    else a point mass at the mean of the last class's values ('R', as first run: an arbitrary
    choice). False where no such release exists."""
    from sdv_dpkme.features import OneWayMap

    for o in RELEASES:
        fmap = o.feature_map
        if not (isinstance(fmap, OneWayMap) and o.pooled and fmap.numeric is not None
                and isinstance(o.target, torch.Tensor)):
            continue
        start = sum(b.width for b in fmap.categorical)
        for b in fmap.numeric.blocks:
            width = fmap.numeric._series.width(b)
            if b.columns[0] == column and not b.nullable:
                release = o.target[0, start:start + width].double()
                scale = fmap._numeric_scale / math.sqrt(len(fmap.numeric.blocks))
                series = fmap.numeric._series
                grid = torch.zeros(4096, max(b.columns) + 1, dtype=torch.float64)
                grid[:, column] = (torch.arange(4096, dtype=torch.float64) + 0.5) / 4096
                if mixed:
                    w = torch.as_tensor(WEIGHTS, dtype=torch.float64)
                    w = w[w > 0] / w[w > 0].sum()
                    at = sum(wc * series.column_features(v.double(), [b])[0].mean(0)
                             for wc, v in zip(w, made)) * scale
                else:
                    point = torch.zeros(1, max(b.columns) + 1, dtype=torch.float64)
                    point[0, column] = float(made[-1][:, column].mean())
                    at = series.column_features(point, [b])[0][0] * scale
                uniform = series.column_features(grid, [b])[0].mean(0) * scale
                return float(((release - at) ** 2).sum()) > float(((release - uniform) ** 2).sum())
            start += width
    return False


def install(arm):
    """Patch the package for ``arm``; returns the flat DP-HP settings it adds."""
    if arm[-1] in 'RM':  # 'C', but only for a column the release does not put there
        from sdv_dpkme.engines import kme, kme_training

        original = kme.train

        def train(blocks, columns, target, weights, objectives, training, rng, verbose):
            RELEASES[:], WEIGHTS[:] = objectives, list(weights)
            return original(blocks, columns, target, weights, objectives, training, rng,
                            verbose)
        mixed = arm.endswith('M')
        kme.train = train
        kme_training.collapsed_classes = column_collapse(
            kme_training.collapsed_classes,
            supported=lambda column, made: release_prefers_prior(column, made, mixed))
        arm = arm[:-1]
    if arm.endswith('C'):
        from sdv_dpkme.engines import kme_training

        kme_training.collapsed_classes = column_collapse(kme_training.collapsed_classes)
        arm = arm[:-1]
    if arm.startswith('nspread'):  # the package's numeric-part rule, at P % of the range
        import functools

        from sdv_dpkme.engines import kme_training

        kme_training.collapsed_classes = functools.partial(
            kme_training.collapsed_classes, numeric_spread=int(arm[7:]) / 100)
        return {}
    if arm.startswith('spread'):  # the collapse check's spread, in % of the public range
        import functools

        from sdv_dpkme.engines import kme_training

        kme_training.collapsed_classes = functools.partial(
            kme_training.collapsed_classes, spread=int(arm[6:]) / 100)
        return {}
    if arm.startswith('steps'):
        return {'steps': int(arm[5:])}
    if arm.startswith('hat'):
        from sdv_dpkme.features import one_way

        bins = int(arm[3:].rstrip('L'))
        one_way.FourierMarginalMap = lambda blocks, length, n_frequencies=None: \
            HatMarginal(blocks, bins)
        if not arm.endswith('L'):
            one_way.OneWayMap.replace_bound = property(lambda self: math.sqrt(2.0))
    return {}


def fit_adult(arm, n, epsilon, seed):
    from benchmarks.studies import small_marginals

    row = small_marginals.run_one(n, epsilon, seed, arm, install(arm))
    return {k: (float(v) if hasattr(v, 'dtype') else v) for k, v in row.items()}


def fit_heldout(arm, table, epsilon, seed):
    import sdv_dpkme
    from benchmarks import harness
    from benchmarks.studies import heldout

    settings = install(arm)
    torch.set_num_threads(1)
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter('always')
        train, test, metadata, declared, target = heldout.split(table)
        name = metadata._get_single_table_name()
        synth = harness.make(sdv_dpkme.DPHPSynthesizer, metadata, epsilon, delta=heldout.DELTA,
                             random_state=seed, verbose=False, **declared, **settings)
        with harness.fixed_noise(seed):
            synth.fit({name: train})
            out = synth.sample(len(train))[name]
        scores = heldout._score(train, test, out, metadata, declared, target)
    return dict(label=arm, table=table, n=len(train), epsilon=epsilon, seed=seed,
                quality=scores['quality'], shapes=scores['column_shapes'],
                pairs=scores['column_pair_trends'], tstr_a=scores['tstr_a'],
                worst_shapes=scores['worst_shapes'],
                collapse_warning=any('Collapse' in w.category.__name__ for w in log),
                plan=' '.join(f"{e['group']}:{e['decision']}"
                              for e in synth.get_privacy_report().plan))


def class_distances(table, epsilon, seed, rows=4096):
    """Per class and fixed class-conditional release of a held-out fit with the fallback off:
    the squared distance of the release to the generated rows' embedding, to the uniform
    prior's, and the release's expected noise energy (``--distances``)."""
    import numpy as np

    import sdv_dpkme
    from benchmarks import harness
    from benchmarks.studies import heldout
    from sdv_dpkme.engines import kme, prior
    from sdv_dpkme.features.columns import split_columns

    seen, original = {}, kme.train

    def train(blocks, columns, target, weights, objectives, training, rng, verbose):
        seen.update(blocks=blocks, width=len(columns), target=target, objectives=objectives)
        seen['model'] = original(blocks, columns, target, weights, objectives, training, rng,
                                 verbose)
        return seen['model']
    kme.train = train
    torch.set_num_threads(1)
    train_rows, _, metadata, declared, _ = heldout.split(table)
    synth = harness.make(sdv_dpkme.DPHPSynthesizer, metadata, epsilon, delta=heldout.DELTA,
                         random_state=seed, verbose=False, collapse_fallback=False, **declared)
    with harness.fixed_noise(seed):
        synth.fit({metadata._get_single_table_name(): train_rows})
    model, objectives = seen['model'], seen['objectives']
    priors = prior.prior_embeddings(seen['blocks'], seen['width'], seen['target'], objectives,
                                    torch.Generator().manual_seed(3))
    out = []
    for c in np.flatnonzero(model.class_weights > 0):
        x = torch.as_tensor(np.asarray(model.sample(rows, label=int(c)).values),
                            dtype=torch.float32)
        y = torch.nn.functional.one_hot(torch.full((rows,), int(c)),
                                        len(model.class_weights)).float()
        with split_columns(x, seen['blocks']):
            for o, p in zip(objectives, priors):
                if p is None or o.pooled or o.noise_std is None:
                    continue
                made = o.feature_map.class_moments(x, y)[0][c].double() / rows
                t = o.target[c].double()
                out.append(dict(table=table, epsilon=epsilon, seed=seed, cls=int(c),
                                release=o.name, generated=float(((t - made) ** 2).sum()),
                                prior=float(((t - p[c]) ** 2).sum()),
                                noise=float(o.noise_std[c]) ** 2 * len(t)))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--arms', nargs='+', default=['base', 'hat10'])
    parser.add_argument('--n', type=int, nargs='+', default=[215, 500])
    parser.add_argument('--heldout', nargs='*', help='held-out tables instead of Adult')
    parser.add_argument('--epsilons', type=float, nargs='+', default=[0.3, 1.0])
    parser.add_argument('--seeds', type=int, nargs='+', default=list(range(6)))
    parser.add_argument('--out', default='/tmp/one_way_bins.csv')
    parser.add_argument('--distances', action='store_true',
                        help='print class_distances for --heldout tables, --epsilons, --seeds')
    parser.add_argument('--one', help=argparse.SUPPRESS)  # a child process: one JSON cell
    args = parser.parse_args(argv)
    if args.distances:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            for table in args.heldout:
                for epsilon in args.epsilons:
                    for seed in args.seeds:
                        for row in class_distances(table, epsilon, seed):
                            print(json.dumps(row), flush=True)
        return 0
    if args.one:
        cell = json.loads(args.one)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            row = fit_heldout(**cell) if 'table' in cell else fit_adult(**cell)
        print('ROW ' + json.dumps(row), flush=True)
        return 0
    places = [dict(table=t) for t in args.heldout] if args.heldout else \
        [dict(n=n) for n in args.n]
    for place in places:
        for epsilon in args.epsilons:
            for seed in args.seeds:
                for arm in args.arms:
                    cell = dict(arm=arm, epsilon=epsilon, seed=seed, **place)
                    done = subprocess.run([sys.executable, '-m', 'benchmarks.studies.one_way_bins',
                                           '--one', json.dumps(cell)], cwd=HERE,
                                          capture_output=True, text=True)
                    rows = [json.loads(line[4:]) for line in done.stdout.splitlines()
                            if line.startswith('ROW ')]
                    if not rows:
                        print(f'{cell}: failed\n{done.stderr[-2000:]}', file=sys.stderr)
                        continue
                    print(rows[0], flush=True)
                    frame = pd.DataFrame(rows)
                    if os.path.exists(args.out):
                        frame = pd.concat([pd.read_csv(args.out), frame])
                    frame.to_csv(args.out, index=False, lineterminator='\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
