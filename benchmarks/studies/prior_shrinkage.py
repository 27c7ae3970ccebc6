"""Probe (issue 42, stop 59): James-Stein shrinkage of the released targets, on small Adult samples.

Not a package option: a run-time patch of ``engines.kme.train`` that rewrites each released
class target t_c (dimension d, public per-coordinate noise variance s_c^2) as

    m + max(0, 1 - (d - 2) s_c^2 / ||t_c - m||^2) (t_c - m)

before the generator trains on it (post-processing of the releases: no budget, no data read).
Arms (``--arm``):

* ``base``: no shrinkage (the package as it is);
* ``uniform``: m = the embedding, under the same feature map, of a public prior: every
  column uniform over its declared domain (numeric values uniform in [0, 1] on the encoded
  scale, categories uniform, no missing values), 8,192 rows drawn with a fixed seed; pooled
  targets shrink toward the class-weighted prior. Since stop 60 this arm calls the package's
  ``engines.prior.shrunk_objectives`` (the collapse fallback's shrinkage), on every fit;
* ``pooled``: class targets shrink toward the class-weighted mean of the class targets (their
  pooled estimate, with variance sum_c w_c^2 s_c^2); pooled targets are left alone;
* ``draw``: no fit; the prior itself, scored the same way: the held-out suite's ``uniform``
  reference (``heldout.uniform_table``: public categories and bins, uniform in each bin).

Each fit is ``small_marginals.run_one`` (fixed noise per seed, so the arms are paired; such
fits are not private). Rows are appended to ``--out`` as JSON lines, with the shrinkage factors.

    python -m benchmarks.studies.prior_shrinkage --arm uniform --n 215 500 --epsilons 0.3 1 \
        --seeds 5 --out /tmp/prior_shrinkage.jsonl
"""

import argparse
import dataclasses
import json

import numpy as np
import torch

from benchmarks.studies import small_marginals

FACTORS = []  # (objective, class, dimension, factor) of the last fit


def shrunk(objectives, blocks, columns, target, weights, arm):
    """The objectives with their fixed targets shrunk as ``arm`` says."""
    from sdv_dpkme.engines.prior import james_stein, shrunk_objectives

    FACTORS.clear()
    if arm == 'uniform':  # the package's shrinkage (its collapse fallback), here on every fit
        out, factors = shrunk_objectives(objectives, blocks, len(columns), target, weights,
                                         torch.Generator().manual_seed(12345))
        FACTORS.extend((name, c, None, f) for name, values in factors.items()
                       for c, f in enumerate(values))
        return out
    mix = torch.as_tensor(np.asarray(weights, float))
    mix = mix / mix.sum()
    out = []
    for o in objectives:
        if not isinstance(o.target, torch.Tensor) or o.noise_std is None or \
                o.pooled or o.target.shape[0] < 2:
            out.append(o)
            continue
        t = o.target.clone().double()
        variance = o.noise_std.double() ** 2
        centre = (mix[:, None] * t).sum(0).expand_as(t)
        for c in range(t.shape[0]):
            t[c], factor = james_stein(t[c], centre[c], float(variance[c]))
            FACTORS.append((o.name, c, t.shape[1], round(factor, 3)))
        out.append(dataclasses.replace(o, target=t.to(o.target.dtype)))
    return out


def patch(arm):
    from sdv_dpkme.engines import kme

    original = kme.train

    def train(blocks, columns, target, weights, objectives, training, rng, verbose):
        objectives = shrunk(objectives, blocks, columns, target, weights, arm)
        return original(blocks, columns, target, weights, objectives, training, rng, verbose)

    if arm != 'base':
        kme.train = train


def uniform_draw(n, seed):
    """The ``draw`` arm's row: n rows of the held-out suite's ``uniform`` reference
    (``heldout.uniform_table``) on the Adult sample, scored as ``small_marginals`` scores."""
    from benchmarks.studies.heldout import uniform_table

    train, test, metadata, domain = small_marginals.adult_sample_split(n)
    table = uniform_table(train, metadata, domain, seed)
    scores = small_marginals.score(test, table, metadata, domain)
    return dict(label='draw', n=n, seed=seed, **{k: float(v) for k, v in scores.items()})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--arm', choices=('base', 'uniform', 'pooled', 'draw'), required=True)
    parser.add_argument('--n', type=int, nargs='+', default=[215, 500])
    parser.add_argument('--epsilons', type=float, nargs='+', default=[0.3, 1.0])
    parser.add_argument('--seeds', type=int, default=5)
    parser.add_argument('--out', default='/tmp/prior_shrinkage.jsonl')
    args = parser.parse_args(argv)
    patch(args.arm)
    with open(args.out, 'a', encoding='utf-8') as handle:
        for n in args.n:
            for epsilon in args.epsilons:
                for seed in range(args.seeds):
                    if args.arm == 'draw':  # reads no row: one draw per seed, whatever ε
                        row = dict(uniform_draw(n, seed), epsilon=epsilon)
                        handle.write(json.dumps(row) + '\n')
                        continue
                    row = small_marginals.run_one(n, epsilon, seed, args.arm)
                    row = {k: (float(v) if isinstance(v, np.floating) else v)
                           for k, v in row.items()}
                    row['factors'] = sorted({(name, f) for name, _, _, f in FACTORS})
                    handle.write(json.dumps(row) + '\n')
                    handle.flush()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
