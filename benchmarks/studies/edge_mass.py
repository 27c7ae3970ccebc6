"""Where a noisy fit puts numeric mass at the box edges, and whether the releases ask for it
(issue 42, stop 60: a diagnosis of the small held-out tables' column shapes, not a tuning run).

For one table (the held-out suite's split and declaration, ``heldout.split``), DP-HP with its
defaults at each epsilon, noise fixed by ``--seed`` (``harness.fixed_noise``: not a private fit):

The fallback after a collapse (``collapse_fallback``) is off: this looks at the fit on the
releases as they are made.

* edge share: the share of numeric values within 0.02 of a declared bound, on the public
  [0, 1] scale of each column, in the real test rows and in ``len(train)`` sampled rows;
* the objectives' loss against the releases (sum over classes, each term times its weight,
  as ``train_generator`` weighs them) of 4,000 generated rows per class, as they come and with
  every numeric value in the edge bands replaced by a value drawn from the same column's
  values outside them (same class). If moving the edge mass inward raises the loss, the
  releases themselves pull the mass to the edges (a fit to their noise); if it lowers it, the
  training failed to reach a better fit (e.g. a saturated sigmoid).

    python -m benchmarks.studies.edge_mass --table wine --epsilons inf 3 1 0.3 --seed 0
"""

import argparse
import json
import sys
import warnings

import numpy as np
import pandas as pd
import torch

from benchmarks import harness
from benchmarks.studies import heldout

BAND = 0.02


def _edge_share(frame, bounds):
    shares = []
    for column, (low, high) in bounds.items():
        if column in frame:
            v = (pd.to_numeric(frame[column], errors='coerce').dropna() - low) / (high - low)
            shares.append(float(((v < BAND) | (v > 1 - BAND)).mean()))
    return float(np.mean(shares))


def _losses(model, objectives, blocks, rows_by_class):
    """Each term's plug-in loss against its release, weighed as in training."""
    from sdv_dpkme.engines.generator_training import mmd_to_target, pooled_mmd_to_target
    from sdv_dpkme.features.columns import split_columns

    classes = sorted(rows_by_class)
    x = torch.cat([rows_by_class[c] for c in classes])
    labels = torch.cat([torch.full((len(rows_by_class[c]),), c) for c in classes])
    y = torch.nn.functional.one_hot(labels, len(model.class_weights)).float()[:, classes]
    counts = y.sum(0)[:, None]
    weights = torch.as_tensor(model.class_weights[classes], dtype=torch.float32)
    mix = weights / weights.sum()
    out = {}
    for o in objectives:
        if not isinstance(o.target, torch.Tensor):
            continue
        with split_columns(x, blocks), torch.no_grad():
            sums, sq_norms = o.feature_map.class_moments(x, y)
        target = o.target.float()
        loss = (pooled_mmd_to_target(target, sums, sq_norms, counts, mix, unbiased=False)
                if o.pooled else
                mmd_to_target(target[classes], sums, sq_norms, counts, False, weights))
        out[o.name] = out.get(o.name, 0.0) + o.weight * float(loss)
    return out


def run(table, epsilon, seed, rows=4000):
    import sdv_dpkme
    from sdv_dpkme.engines import kme

    captured = {}
    original = kme.train

    def train(blocks, columns, target, weights, objectives, training, rng, verbose):
        model = original(blocks, columns, target, weights, objectives, training, rng, verbose)
        captured.update(blocks=blocks, objectives=objectives, model=model)
        return model

    kme.train = train
    try:
        train_rows, test, metadata, declared, _ = heldout.split(table)
        synth = harness.make(sdv_dpkme.DPHPSynthesizer, metadata, epsilon, delta=heldout.DELTA,
                             random_state=seed, verbose=False, collapse_fallback=False,
                             **declared)  # the fit on the releases as made: no retraining
        with warnings.catch_warnings(), harness.fixed_noise(seed):
            warnings.simplefilter('ignore')
            synth.fit({metadata._get_single_table_name(): train_rows})
            sampled = synth.sample(len(train_rows))[metadata._get_single_table_name()]
    finally:
        kme.train = original
    model, blocks = captured['model'], captured['blocks']
    numeric = [b.columns[0] for b in blocks if b.kind == 'numeric']
    pick = torch.Generator().manual_seed(1)
    raw, moved = {}, {}
    for c in np.flatnonzero(model.class_weights > 0):
        x = torch.as_tensor(np.asarray(model.sample(rows, label=int(c)).values),
                            dtype=torch.float32)
        y = x.clone()
        for j in numeric:
            edge = (y[:, j] < BAND) | (y[:, j] > 1 - BAND)
            inner = y[~edge, j]
            if edge.any() and len(inner):
                y[edge, j] = inner[torch.randint(len(inner), (int(edge.sum()),), generator=pick)]
        raw[int(c)], moved[int(c)] = x, y
    before = _losses(model, captured['objectives'], blocks, raw)
    after = _losses(model, captured['objectives'], blocks, moved)
    bounds = declared['known_min_max_values']
    return dict(table=table, epsilon=epsilon, seed=seed,
                edge_share_real=round(_edge_share(test, bounds), 4),
                edge_share_synthetic=round(_edge_share(sampled, bounds), 4),
                loss_as_generated={k: round(v, 5) for k, v in before.items()},
                loss_edges_moved_in={k: round(v, 5) for k, v in after.items()},
                plan=' '.join(f"{e['group']}:{e['decision']}"
                              for e in synth.get_privacy_report().plan))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--table', default='wine')
    parser.add_argument('--epsilons', type=float, nargs='+', default=[float('inf'), 3, 1, 0.3])
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    for epsilon in args.epsilons:
        print(json.dumps(run(args.table, epsilon, args.seed)), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
