"""Training the generator against fixed (noisy) embeddings: the objectives, the unbiased MMD
estimate, the class weights of the loss and the training loop (Adam, learning-rate schedule).

Only feature maps of generated rows are evaluated here; the targets are releases.
"""

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import nn
from tqdm.auto import tqdm

from sdv_dpkme.engines.adam import Adam
from sdv_dpkme.features.columns import split_columns


@dataclass
class Objective:
    """Match the generator's class-conditional feature means to ``target`` (C, P), or with
    ``pooled`` its mixture over the classes to a target (1, P) (``pooled_mmd_to_target``).

    ``target`` is a fixed tensor (a single release) or a function of the step returning one (a
    fresh release per step, e.g. DP-MERF's minibatch mode).
    """

    name: str
    feature_map: object
    target: torch.Tensor
    weight: float = 1.0
    first_step: int = 0
    last_step: int = None  # exclusive; None = until the end
    period: int = 1  # active on the steps where step % period == phase
    phase: int = 0
    noise_std: torch.Tensor = None  # (C,) std of the release noise in each class's target
    pooled: bool = False  # target (1, P): the class mixture's features; noise_std (1,)

    def noise_floor(self, classes, class_weights=None):
        """E ||noise||^2 summed over ``classes`` (each class's term times ``class_weights``, as
        in the loss): what the loss keeps when the generator matches the true embedding exactly
        (public: from sigma, n and the released class weights)."""
        if self.noise_std is None:
            return None
        if self.pooled:  # one target for the mixture, one term in the loss
            return float(self.feature_map.dim * self.noise_std.double()[0] ** 2)
        energy = self.noise_std[classes].double() ** 2
        if class_weights is not None:
            energy = energy * torch.as_tensor(class_weights, dtype=torch.float64).cpu()
        return float(self.feature_map.dim * energy.sum())

    def active(self, step):
        return (step >= self.first_step and (self.last_step is None or step < self.last_step)
                and step % self.period == self.phase)


def mmd_to_target(target, sums, sq_norms, counts, unbiased=True, class_weights=None):
    """sum_c of an estimate of ||target_c - E phi(G(z, c))||^2 from a batch, each class's term
    times ``class_weights[c]`` when given.

    The plain plug-in ||target_c - mean_c||^2 overestimates by tr Cov(phi) / n_c, a penalty on
    the spread of the generated rows that pushes the generator to collapse (at batch sizes in the
    hundreds it is as large as the differences the noisy target can resolve). The unbiased form
    replaces ||mean_c||^2 by the U-statistic (||sum_c||^2 - sum_i ||phi_i||^2) / (n_c (n_c - 1)).
    """
    means = sums / counts
    if not unbiased:
        per_class = ((target - means) ** 2).sum(1)
    else:
        pairs = _mean_sq_norms(means, sums, sq_norms, counts)
        per_class = (target * target).sum(1) - 2 * (target * means).sum(1) + pairs
    if class_weights is not None:
        per_class = per_class * class_weights
    return per_class.sum()


def pooled_mmd_to_target(target, sums, sq_norms, counts, mixture, unbiased=True):
    """An estimate of ||target - sum_c w_c E phi(G(z, c))||^2 from a batch balanced over the
    classes, ``target`` (1, P) and ``mixture`` w (C,) summing to 1.

    Expanded, ||t||^2 - 2 sum_c w_c t.mu_c + sum_{c, c'} w_c w_c' mu_c.mu_c'. Class means of
    different classes come from different rows, so m_c.m_c' is unbiased for c != c'; only the
    diagonal c = c' takes the U-statistic of ``mmd_to_target`` in place of ||m_c||^2.
    """
    means = sums / counts
    mixed = (mixture[:, None] * means).sum(0)
    loss = (target[0] * target[0]).sum() - 2 * (target[0] * mixed).sum() + (mixed * mixed).sum()
    if unbiased:
        plain = (means * means).sum(1)
        loss = loss + (mixture ** 2 * (_mean_sq_norms(means, sums, sq_norms, counts) - plain)).sum()
    return loss


def _mean_sq_norms(means, sums, sq_norms, counts):
    """Per class, the U-statistic (||sum_c||^2 - sum_i ||phi_i||^2) / (n_c (n_c - 1)) of
    ||E phi||^2 (the plug-in ||mean_c||^2 where a class has one row)."""
    n = counts[:, 0]
    pairs = ((sums * sums).sum(1) - sq_norms) / (n * (n - 1)).clamp(min=1)
    return torch.where(n > 1, pairs, (means * means).sum(1))


#: learning-rate schedules of ``train_generator``
SCHEDULES = ('constant', 'cosine')


def _lr_factor(schedule, steps):
    """Multiplier of the learning rate after each step: 1, or a cosine from 1 down to 0 at the
    last step (the batch-to-batch noise of the loss estimate then averages out at the end instead
    of being frozen into the final weights)."""
    if schedule == 'constant':
        return lambda step: 1.0
    if schedule == 'cosine':
        return lambda step: 0.5 * (1 + math.cos(math.pi * min(step, steps) / steps))
    raise ValueError(f'schedule must be one of {SCHEDULES}, got {schedule!r}')


def train_generator(generator, objectives, classes, steps, batch_size, learning_rate, device,
                    torch_generator, verbose=True, unbiased=True, schedule='constant',
                    class_weights=None, mixture=None, noise_weights='coordinate'):
    """Adam on sum_k w_k sum_c l_c ||target_k[c] - E phi_k(G(z, c))||^2, estimated per batch
    (``mmd_to_target``; ``unbiased=False``: the plug-in estimate of the original papers), with the
    learning rate held (``schedule='constant'``) or decayed to 0 on a cosine (``'cosine'``).

    Each batch is balanced over ``classes`` (the classes with positive released weight).
    ``class_weights``: l_c for each of ``classes`` (None: all 1), e.g. ``class_loss_weights``.
    A pooled objective (``Objective.pooled``) is one term for the mixture sum_c w_c G(., c) with
    ``mixture`` w over ``classes`` (the released class weights; None: uniform), renormalised,
    and it is weighed by sum_c l_c: a shift of one column's marginal in every class costs as
    much there as it does summed over the class-conditional terms. ``noise_weights``: how the
    terms are weighed by their release noise (``objective_noise_weights``).
    Returns the loss history as a DataFrame. The loss is an unbiased estimate of the distance to
    the noisy target, so it levels off near the noise energy; for single releases the history
    also has each term's loss minus that public noise floor ('... above noise floor'), an
    estimate of the distance to the true embedding that users can read.
    """
    generator.to(device).train()
    optimizer = Adam(generator.parameters(), lr=learning_rate)  # not torch.optim: see adam.py
    factor = _lr_factor(schedule, steps)
    classes = torch.as_tensor(classes, dtype=torch.long)
    per_class = max(1, batch_size // len(classes))
    labels = classes.repeat_interleave(per_class)
    y = nn.functional.one_hot(labels, generator.n_classes).float().to(device)
    y_loss = y[:, classes.to(device)]  # only the sampled classes: the maps cost grows with C
    counts = y_loss.sum(0).clamp(min=1)[:, None]
    fixed = [None if callable(o.target) else o.target.float().to(device) for o in objectives]
    weights = exact = None
    if class_weights is not None:
        exact = torch.as_tensor(class_weights, dtype=torch.float64)
        weights = exact.float().to(device)
    floors = [o.noise_floor(classes, exact) for o in objectives]
    mix = torch.ones(len(classes), dtype=torch.float64) if mixture is None \
        else torch.as_tensor(mixture, dtype=torch.float64).cpu()
    mix = (mix / mix.sum()).float().to(device)
    pooled_weight = float(len(classes) if exact is None else exact.sum())
    floors = [f if f is None or not o.pooled else pooled_weight * f
              for o, f in zip(objectives, floors)]
    scales = objective_noise_weights(objectives, floors, pooled_weight, noise_weights)
    history = []
    skipped = 0
    started = time.perf_counter()
    bar = tqdm(range(steps), desc='Training generator', disable=not verbose)
    for step in bar:
        z = torch.randn(len(labels), generator.latent_dim, generator=torch_generator).to(device)
        rows, additive_rows = generator.training_rows(
            z, y, generator._numeric_noise(len(labels), torch_generator, device),
            generator._category_draws(len(labels), torch_generator, device))
        record = {'Step': step}
        # the maps read column blocks of one split of the rows (``features.columns``)
        with split_columns(rows, generator.blocks), split_columns(additive_rows, generator.blocks):
            total = _step_loss(objectives, fixed, floors, step, rows, additive_rows, y_loss,
                               classes, counts, mix, pooled_weight, weights, unbiased, record,
                               device, scales)
        optimizer.zero_grad()
        total.backward()
        parameters = [p for p in generator.parameters() if p.grad is not None]
        if math.isfinite(float(total.detach())) and math.isfinite(float(
                nn.utils.clip_grad_norm_(parameters, math.inf))):
            optimizer.step()
        else:  # one non-finite update would make every later row NaN: keep the last finite G
            skipped += 1
        if schedule != 'constant':  # by hand: a constant schedule runs exactly as before it
            optimizer.lr = learning_rate * factor(step + 1)
        record['Loss'] = float(total.detach())
        history.append(record)
        if step % 50 == 0:
            bar.set_postfix(loss=f'{record["Loss"]:.4g}')
    generator.eval().cpu()
    history = pd.DataFrame(history).fillna(np.nan)
    history.attrs['seconds'] = time.perf_counter() - started
    history.attrs['noise_floor'] = {o.name: f for o, f in zip(objectives, floors) if f is not None}
    if exact is not None:
        history.attrs['class_loss_weights'] = exact.numpy()
    history.attrs['skipped_steps'] = skipped
    history.attrs['objective_noise_weights'] = {o.name: w for o, w in zip(objectives, scales)}
    if skipped:
        warnings.warn(
            f'{skipped} of {steps} training steps had a non-finite loss or gradient and were '
            'skipped, so the generator is the last finite one (the releases are spent: the fit '
            'finishes). Lower learning_rate, or refit with another random_state.')
    return history


def _step_loss(objectives, fixed, floors, step, rows, additive_rows, y_loss, classes, counts,
               mix, pooled_weight, weights, unbiased, record, device, scales=None):
    """The weighted sum of the objectives active at ``step`` on this step's rows; each term's
    loss (and above its noise floor) goes into ``record``."""
    total = 0.0
    moments = {}  # (map, rows) -> class sums, this step
    scales = scales or [1.0] * len(objectives)
    for objective, target, floor, scale in zip(objectives, fixed, floors, scales):
        if not objective.active(step):
            continue
        if target is None:
            target = objective.target(step).float().to(device)
        fmap = objective.feature_map
        x = additive_rows if getattr(fmap, 'additive', False) else rows
        parent = getattr(fmap, 'within', None)
        parent_sums = None if parent is None else moments.get((id(parent), id(x)))
        if parent_sums is not None:  # a sub-map of a map already evaluated on these rows
            sums, sq_norms = fmap.moments_within(parent_sums, x, y_loss)
        else:
            sums, sq_norms = fmap.class_moments(x, y_loss)
        moments[id(fmap), id(x)] = sums
        if objective.pooled:
            loss = pooled_weight * pooled_mmd_to_target(target, sums, sq_norms, counts, mix,
                                                        unbiased)
        else:
            loss = mmd_to_target(target[classes], sums, sq_norms, counts, unbiased, weights)
        total = total + objective.weight * scale * loss
        key = objective.name + ' loss'
        record[key] = record.get(key, 0.0) + float(loss.detach())
        if floor is not None:
            key = objective.name + ' above noise floor'
            record[key] = record.get(key, 0.0) + float(loss.detach()) - floor
    return total


def objective_noise_weights(objectives, floors, pooled_weight, per='coordinate'):
    """Public per-objective loss factors (1 + e_min) / (1 + e_k), e_k = (sigma_k / (b_k / 2))^2:
    the release's noise variance per coordinate (per unit of objective k's loss, sigma_k^2 =
    its noise floor over the loss's class weight and the map's width) against half the range a
    coordinate can take (every |phi_j| <= b_k, the map's ``coordinate_bound``; 1 if it has none).

    The minimiser of ||target - E phi(G)||^2 for a target outside the set of embeddings a
    distribution can have sits on that set's boundary: point masses. A numeric column then goes
    to a box edge, where every sine feature of the Fourier maps vanishes, when the noisy sine
    coefficients of its many pairs sum below zero. What pushes a target out of that set is its
    noise along single directions, against how far the embeddings reach in them, so the noise
    counts per coordinate: the total energy of a wide map grows with its width while the
    directions the generator can follow stay few (weighed by the total, the all-pairs term of
    a 51-state column lost most of its weight at a noise far inside every coordinate's range).
    Inverse variance in units of that half range, as ``class_loss_weights`` does across
    classes, lets the cleaner terms hold a column. Terms of negligible noise keep a factor near
    1; a term without a known noise (subsampled per step) keeps 1.

    ``per='total'``: e_k is the release's total noise energy per unit of loss instead (against
    the largest signal energy, 1), which weighs a wide map far down (DP-MERF's default:
    benchmarks/results/dpmerf_parity.md). None: every factor 1."""
    if per is None:
        return [1.0] * len(objectives)
    energies = []
    for objective, floor in zip(objectives, floors):
        if floor is None:
            energies.append(None)
            continue
        if per == 'total':
            energies.append(floor / pooled_weight)
            continue
        fmap = objective.feature_map
        half_range = float(getattr(fmap, 'coordinate_bound', 1.0)) / 2
        energies.append(floor / pooled_weight / max(1, fmap.dim) / half_range ** 2)
    known = [e for e in energies if e is not None]
    if not known:
        return [1.0] * len(objectives)
    low = min(known)
    return [1.0 if e is None else (1.0 + low) / (1.0 + e) for e in energies]


def class_loss_weights(objectives, classes):
    """Public per-class loss weights l_c = (S + N_min) / (S + N_c), from the releases' noise.

    A class-conditional target is the joint release divided by the class's released proportion
    p_c, so its noise std is sigma / p_c. N_c = sum_k w_k E||noise_k[c]||^2 is that noise energy
    in the loss, S = sum_k w_k the energy of the signal at most (every map has ||phi|| <= 1). A
    class of a few rows, which the proportion noise can lift above the sampling threshold, has a
    target that is nearly all noise: unweighted, its loss is orders of magnitude above the
    others' and drives the layers every class shares (issue 42: FARS, RACE 'White' 0.6 % instead
    of 19 %); l_c shrinks its pull to about S / N_c. Classes whose noise is small next to S keep
    a weight near 1, so a well-measured minority class is not traded away. None when no release
    has a known noise (subsampled releases only). A pooled objective is left out: its noise is
    the same for every class, so it says nothing about which class to trust."""
    classes = torch.as_tensor(classes, dtype=torch.long)
    signal, energy, known = 0.0, torch.zeros(len(classes), dtype=torch.float64), False
    for objective in objectives:
        if objective.pooled:
            continue
        signal += objective.weight
        if objective.noise_std is not None:
            known = True
            std = objective.noise_std.detach().double().cpu()[classes]
            energy += objective.weight * objective.feature_map.dim * std ** 2
    if not known:
        return None
    return ((signal + energy.min()) / (signal + energy)).numpy()
