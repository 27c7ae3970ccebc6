"""Map each numeric column's generated values to an estimate of its shape from the releases
(post-processing).

Every additive release (a map that is a sum over single columns: the Hermite sum kernel, the
Fourier-series marginals, the one-way map) holds, in the coordinates of one numeric column v, a
noisy linear function of v's distribution. With p the shares of v on ``BINS`` equal bins of
its public range [0, 1] and A_s the bins' mean features of release s (public: the map on a
grid), the release is r_s = A_s p + e_s, e_s Gaussian of the release's public std s_s (pooled
over the classes with the released class weights). The estimate is

    p* = argmin_{p in simplex}  1/2 sum_s ||(A_s p - r_s) / s_s||^2 + lam KL(p || uniform),

a Gaussian likelihood with an entropy prior of weight ``lam`` (``PRIOR_WEIGHT``). Where the
releases resolve the shape (large n), the likelihood dominates and p* follows them. Where
they are mostly noise (small n), the prior keeps p* spread over the public range. The
generator, trained against the same noise, can instead park a column's mass at an edge of its
box, far from any real row.

The generated values are then mapped v -> F*^-1(F_gen(v)), a monotone quantile map that keeps
each row's rank (so the generator's joint structure stays). F* reweights the generated rows
bin by bin to p* and keeps their shape inside a bin (a money column's spike at 0 stays a
spike); a bin with no generated row is filled uniformly. A nullable column is mapped on its
present rows: its release holds P(present) x their features, so p* then has a free total mass
(fitted with it, then dropped). Only the releases, their public noise, the public layout and the generator are read:
no private row, no extra epsilon.
"""

import numpy as np
import torch
from scipy.optimize import minimize

from sdv_dpkme.features import OneWayMap
from sdv_dpkme.features.marginal import FourierMarginalMap

#: equal bins of a numeric column's public range on which its shape is estimated
BINS = 100
#: points per bin where the maps are evaluated (the bins' mean features)
POINTS_PER_BIN = 5
#: weight of the entropy prior against the releases' Gaussian log-likelihood (one unit: the
#: prior counts as much as one standard deviation of noise in one released coordinate)
PRIOR_WEIGHT = 1.0
#: knots of a numeric column's value map (at the generated values' quantiles)
VALUE_GRID = 2001
#: inside one resolution cell, the prior's share that follows the generated values (the rest
#: uniform over the cell's bins)
WITHIN_CELL_GENERATED = 0.9
#: the noise std an exact release (epsilon = inf) is weighed with
MIN_NOISE = 1e-4
#: fewest generated present rows a column's map is fitted from
MIN_ROWS = 100


def _value_columns(releases):
    """{encoded value column: block} of the numeric blocks in the releases' maps."""
    out = {}
    for feature_map, _, _ in releases:
        for block in getattr(feature_map, 'blocks', None) or ():
            if block.kind == 'numeric':
                out.setdefault(block.columns[0], block)
    return out


def additive_releases(objectives, w):
    """[(feature map, released mean features of the class mixture (P,), their noise std)] of
    the fixed releases of additive maps, each once."""
    seen, out = set(), []
    for o in objectives:
        if getattr(o.feature_map, 'additive', False) and isinstance(o.target, torch.Tensor) \
                and o.noise_std is not None and id(o.target) not in seen:
            seen.add(id(o.target))
            out.append((o.feature_map, *_pooled(o, w)))
    return out


def _pooled(objective, w):
    """(released mean features of the class mixture (P,), their noise std) of one release."""
    target = objective.target.double().numpy()
    std = objective.noise_std.double().numpy()
    if objective.pooled or target.shape[0] == 1:
        return target[0], float(std[0])
    trained = w > 0  # a class without rows has no release to pool
    return (w[trained] @ target[trained],
            float(np.sqrt((w[trained] ** 2 * std[trained] ** 2).sum())))


def column_releases(releases, base_row, block):
    """[(A (coordinates, BINS), released (coordinates,), noise std)]: per release, its
    coordinates that move with ``block``'s value, as bins' mean features and as released.
    ``base_row``: any encoded row (the other columns' coordinates do not move)."""
    points = (np.arange(BINS * POINTS_PER_BIN) + 0.5) / (BINS * POINTS_PER_BIN)
    probe = np.repeat(np.asarray(base_row, dtype=np.float64)[None], len(points), axis=0)
    probe[:, block.columns[0]] = points
    if block.nullable:
        probe[:, block.columns[1]] = 0.0  # present
    probe = torch.as_tensor(probe)
    out = []
    for feature_map, released, noise in releases:
        with torch.no_grad():
            phi = feature_map(probe).double().numpy()
        moving = np.flatnonzero(phi.std(axis=0) > 1e-12)
        if not len(moving):
            continue
        a = phi[:, moving].reshape(BINS, POINTS_PER_BIN, len(moving)).mean(axis=1).T
        out.append((a, released[moving], noise))
    return out


def shape_estimate(sources, free_mass=False, prior=None, prior_weight=PRIOR_WEIGHT):
    """(p* (BINS,) of the module docstring, the objective at p*) from ``column_releases``;
    ``free_mass``: the releases see m p* for a fitted m in (0, 1) (a nullable column's present
    share); ``prior``: the shares the KL term pulls to (None: uniform). p = softmax(theta),
    m = sigmoid(mu), by L-BFGS (scipy's: torch's optimisers import torch's compiler)."""
    # an exact release (epsilon = inf) weighs as one whose noise is far below any cell's signal
    std = [max(s[2], MIN_NOISE) for s in sources]
    a = np.concatenate([s[0] / d for s, d in zip(sources, std)])
    r = np.concatenate([s[1] / d for s, d in zip(sources, std)])
    bins = a.shape[1]
    log_prior = np.full(bins, -np.log(bins)) if prior is None else np.log(prior)

    def objective(x):
        theta = x[:bins]
        log_p = theta - theta.max()
        log_p -= np.log(np.exp(log_p).sum())
        p = np.exp(log_p)
        m = 1.0 / (1.0 + np.exp(-x[bins])) if free_mass else 1.0
        gap = a @ (m * p) - r
        back = a.T @ gap
        grad_p = m * back + prior_weight * (log_p - log_prior + 1.0)
        grad = p * (grad_p - p @ grad_p)  # through the softmax
        value = 0.5 * gap @ gap + prior_weight * p @ (log_p - log_prior)
        if free_mass:
            grad = np.append(grad, (back @ p) * m * (1.0 - m))
        return value, grad

    start = np.append(log_prior, 0.0) if free_mass else log_prior.copy()
    result = minimize(objective, start, jac=True, method='L-BFGS-B',
                      options={'maxiter': 1000, 'gtol': 1e-10})
    theta = result.x[:bins]
    shares = np.exp(theta - theta.max())
    return shares / shares.sum(), float(result.fun)


def resolution_cells(releases):
    """Cells of [0, 1] the releases resolve: as many as the most frequencies of a Fourier-series
    release (its finest wave has that many half periods), at most ``BINS``; ``BINS`` without
    one."""
    counts = []
    for feature_map, _, _ in releases:
        fourier = feature_map.numeric if isinstance(feature_map, OneWayMap) else feature_map
        if isinstance(fourier, FourierMarginalMap):
            counts.append(fourier._series.n_frequencies)
    return min(BINS, max(counts)) if counts else BINS


def cell_prior(generated, cells):
    """The KL term's shares: uniform over ``cells`` equal cells of [0, 1], and inside a cell
    mostly the generated shares (``WITHIN_CELL_GENERATED``): what the releases cannot resolve,
    such as a spike at 0 inside a cell, keeps the generator's shape; a cell without generated
    values is uniform."""
    bins = len(generated)
    cell = np.minimum((np.arange(bins) + 0.5) * cells / bins, cells - 1).astype(int)
    prior = np.empty(bins)
    for c in range(cells):
        inside = cell == c
        total = generated[inside].sum()
        flat = np.full(inside.sum(), 1.0 / inside.sum())
        shape = generated[inside] / total if total > 0 else flat
        prior[inside] = (WITHIN_CELL_GENERATED * shape
                         + (1 - WITHIN_CELL_GENERATED) * flat) / cells
    return prior / prior.sum()


def target_cdf(values, shares, grid):
    """F* on ``grid``: the generated values' CDF reweighted bin by bin to ``shares``, their shape
    inside a bin kept; a bin without values filled uniformly."""
    edges = np.linspace(0.0, 1.0, len(shares) + 1)
    values = np.sort(values)
    at = lambda x: np.searchsorted(values, x, side='right') / len(values)  # noqa: E731
    have_edges = at(edges)
    have_edges[0], have_edges[-1] = 0.0, 1.0
    mass = np.diff(have_edges)
    b = np.clip(np.searchsorted(edges, grid, side='right') - 1, 0, len(shares) - 1)
    inside = np.where(mass[b] > 0, (at(grid) - have_edges[b]) / np.maximum(mass[b], 1e-300),
                      (grid - edges[b]) * len(shares))
    start = np.concatenate([[0.0], np.cumsum(shares)])[:-1]
    return np.clip(start[b] + shares[b] * np.clip(inside, 0, 1), 0, 1)


def calibrate_values(generator, objectives, class_weights, rng, rows=50_000):
    """Fit ``generator.value_maps`` ({encoded column: (knots, mapped)}, monotone piecewise-linear
    maps applied to a numeric column's generated values, ``TabularGenerator.sample``) to the
    shape estimates of the module docstring; returns the names of the mapped columns."""
    generator.value_maps = {}
    w = np.asarray(class_weights, dtype=float)
    w = w / w.sum()
    releases = additive_releases(objectives, w)
    if not releases:
        return []
    cells = resolution_cells(releases)
    labels = torch.as_tensor(np.repeat(np.arange(len(w)), np.round(w * rows).astype(int)))
    drawn = generator.sample(labels, rng)
    grid = levels = np.linspace(0.0, 1.0, VALUE_GRID)
    maps, names = {}, []
    for column, block in _value_columns(releases).items():
        present = drawn if not block.nullable else drawn[drawn[:, block.columns[1]] < 0.5]
        if len(present) < MIN_ROWS:
            continue
        sources = column_releases(releases, drawn[0], block)
        if not sources:
            continue
        values = present[:, column].astype(np.float64)
        generated = np.histogram(values, np.linspace(0, 1, BINS + 1))[0] / len(values)
        shares, _ = shape_estimate(sources, block.nullable, cell_prior(generated, cells))
        want = target_cdf(values, shares, grid)
        want = np.maximum.accumulate(want) + grid * 1e-9  # strictly increasing to invert
        # knots at the generated quantiles, not on a fixed grid: a column squeezed into a
        # sliver of its range (near an edge, say) is spread by its ranks too
        knots = np.maximum.accumulate(np.quantile(values, levels)) + levels * 1e-12
        maps[column] = (knots, np.interp(levels, want, grid))
        names.append(block.name)
    generator.value_maps = maps
    return names
