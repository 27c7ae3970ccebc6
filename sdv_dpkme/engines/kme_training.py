"""Training and post-processing of the kernel-mean-embedding engine (no private row, no epsilon).

``trained_generator`` fits a fresh generator so that the expected features of its rows match the
released class means; ``post_process`` then optionally calibrates its categorical heads to the
released tables (``engines.calibration``) and keeps per class a pool of generated rows with
simplex weights fit to the releases (``reweighted_pools``). Every step reads only the releases,
their public noise and the public layout.
"""

import time
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from sdv_dpkme.engines.calibration import ROWS, calibrate, calibrate_values
from sdv_dpkme.engines.generator import (
    TabularGenerator,
    class_loss_weights,
    collapsed_classes,
    train_generator,
)
from sdv_dpkme.engines.kme_pairs import links_to_use
from sdv_dpkme.engines.link_structure import MIN_SIGNAL_RATIO
from sdv_dpkme.engines.simplex_weights import simplex_weights_for_terms


@dataclass
class Training:
    """Generator and optimiser settings (all public)."""

    steps: int
    batch_size: int
    learning_rate: float
    latent_dim: int
    generator_dims: tuple
    numeric_noise: float
    device: object
    reweight_rows: int = 0  # > 0: a weighted pool of generated rows per class (reweighted_pools)
    schedule: str = 'constant'  # learning-rate schedule (``generator.SCHEDULES``)
    category_smoothing: float = 0.0  # share of uniform draws in categorical heads
    category_links: tuple = ()  # names of the categorical blocks whose heads see earlier draws
    max_link_parents: int = None  # None: every earlier linked head; k: the k chosen by the pairs
    link_signal_ratio: float = MIN_SIGNAL_RATIO  # a chosen pair's association / noise energy
    calibration_parents: int = 0  # > 0: calibrate the heads to the pair tables (``calibration``)
    ordered_heads: tuple = ()  # categorical blocks over consecutive integers (discrete numbers)
    calibration_rows: int = ROWS[1]  # generated rows per calibration round (``generated_rows``)
    edge_snap: float = 0.0  # sampled numeric values this close to a box edge go to the edge
    collapse_fallback: bool = False  # retrain a collapsed generator on shrunk releases (prior)
    noise_weights: object = 'coordinate'  # 'coordinate', 'total' or None (objective_noise_weights)


def trained_generator(blocks, columns, target, weights, objectives, training, rng, verbose):
    """(generator, loss history, collapsed classes): a fresh generator trained against the
    objectives. Its categorical links: ``kme_pairs.links_to_use``."""
    n_classes = 1 if target is None else target.width
    links, scores, noise = links_to_use(objectives, weights, training)
    with torch.random.fork_rng(devices=[]):  # seed the initial weights, not the user's RNG
        torch.manual_seed(int(torch.randint(2**62, (1,), generator=rng)))
        generator = TabularGenerator(
            blocks, len(columns), n_classes, training.latent_dim, tuple(training.generator_dims),
            numeric_noise=training.numeric_noise, category_smoothing=training.category_smoothing,
            category_links=links,
        )
    classes = np.flatnonzero(weights > 0)
    history = train_generator(
        generator, objectives, classes, training.steps, training.batch_size,
        training.learning_rate, training.device, rng, verbose=verbose, schedule=training.schedule,
        class_weights=class_loss_weights(objectives, classes), mixture=weights[classes],
        noise_weights=training.noise_weights,
    )
    collapsed = collapsed_classes(generator, np.flatnonzero(weights > 0))
    history.attrs['pair_cell_noise'] = noise
    history.attrs['link_scores'] = scores
    return generator, history, collapsed


def post_process(model, objectives, training, rng, verbose):
    """The optional steps after training, in place on ``model``: calibration of the categorical
    heads (``training.calibration_parents``), the edge snap of sampled numeric values
    (``training.edge_snap``; after calibration, which fits its maps to unsnapped draws), then
    the reweighted pools (``training.reweight_rows``)."""
    history = model.loss_values
    if training.calibration_parents:
        started = time.perf_counter()
        history.attrs['calibrated_values'] = calibrate_values(
            model.generator, objectives, model.class_weights, rng, training.calibration_rows)
        history.attrs['calibrated_pairs'] = calibrate(
            model.generator, objectives, model.class_weights, rng, training.calibration_parents,
            rows=training.calibration_rows, verbose=verbose, ordered=training.ordered_heads)
        history.attrs['calibration_seconds'] = time.perf_counter() - started
    model.generator.edge_snap = float(training.edge_snap)
    if training.reweight_rows:
        model.pools = reweighted_pools(model, objectives, training.reweight_rows, rng, verbose)
    return model


def reweighted_pools(model, objectives, rows, rng, verbose=False):
    """Per class, ``rows`` generated rows and simplex weights that bring their embeddings
    closest to the released ones (Balog et al.'s reweighting applied to the generator's rows):
    minimise sum_k weight_k ||sum_g w_g phi_k(g) - target_k,c||^2 over the simplex. Only the
    fixed releases are used (post-processing, no extra epsilon)."""
    # a pooled target is of the class mixture, not of one class's rows
    fixed = [o for o in objectives if isinstance(o.target, torch.Tensor) and not o.pooled]
    pools = {}
    classes = np.flatnonzero(model.class_weights > 0)
    for c in tqdm(classes, desc='Reweighting generated rows', disable=not verbose, leave=False):
        labels = torch.full((rows,), int(c), dtype=torch.long)
        with torch.no_grad():
            x = np.array(model.generator.sample(labels, rng), dtype=np.float64)
        if model.target is not None:
            x[:, list(model.target.columns)] = 0.0
            x[:, model.target.columns[c]] = 1.0
        terms = [(o.feature_map, o.target[c].double(), o.weight) for o in fixed]
        weights = simplex_weights_for_terms(x, terms).numpy()
        pools[int(c)] = (x.astype(np.float32), weights / weights.sum())
    return pools
