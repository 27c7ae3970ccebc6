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

#: equal bins of a numeric column's public range on which its shape is estimated
BINS = 100
#: points per bin where the maps are evaluated (the bins' mean features)
POINTS_PER_BIN = 5
#: weight of the entropy prior against the releases' Gaussian log-likelihood (one unit: the
#: prior counts as much as one standard deviation of noise in one released coordinate)
PRIOR_WEIGHT = 1.0
#: knots of a numeric column's value map (at the generated values' quantiles)
VALUE_GRID = 2001
#: shares of the generated shares in the priors tried (the rest uniform)
PRIOR_MIXES = (0.0,)
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
    """p* (BINS,) of the module docstring, from ``column_releases``; ``free_mass``: the
    releases see m p* for a fitted m in (0, 1) (a nullable column's present share);
    ``prior``: the shares the KL term pulls to (None: uniform)."""
    # an exact release (epsilon = inf) weighs as one whose noise is far below any cell's signal
    std = [max(s[2], MIN_NOISE) for s in sources]
    a = torch.as_tensor(np.concatenate([s[0] / d for s, d in zip(sources, std)]))
    r = torch.as_tensor(np.concatenate([s[1] / d for s, d in zip(sources, std)]))
    log_prior = torch.full((a.shape[1],), -np.log(a.shape[1]), dtype=torch.float64) \
        if prior is None else torch.log(torch.as_tensor(prior, dtype=torch.float64))
    theta = log_prior.clone().requires_grad_(True)
    mass = torch.zeros((), dtype=torch.float64, requires_grad=free_mass)
    optimiser = torch.optim.LBFGS([theta, mass] if free_mass else [theta], max_iter=500,
                                  tolerance_grad=1e-10, line_search_fn='strong_wolfe')

    def closure():
        optimiser.zero_grad()
        log_p = torch.log_softmax(theta, 0)
        p = log_p.exp()
        seen = p * torch.sigmoid(mass) if free_mass else p
        loss = 0.5 * ((a @ seen - r) ** 2).sum() + prior_weight * (p * (log_p - log_prior)).sum()
        loss.backward()
        return loss

    optimiser.step(closure)
    shape_estimate.objective = float(closure())
    return torch.softmax(theta.detach(), 0).numpy()


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
        best = None
        for mix in PRIOR_MIXES:
            prior = mix * generated + (1 - mix) / BINS
            shares = shape_estimate(sources, block.nullable, prior)
            if best is None or shape_estimate.objective < best[0]:
                best = (shape_estimate.objective, shares)
        want = target_cdf(values, best[1], grid)
        want = np.maximum.accumulate(want) + grid * 1e-9  # strictly increasing to invert
        # knots at the generated quantiles, not on a fixed grid: a column squeezed into a
        # sliver of its range (near an edge, say) is spread by its ranks too
        knots = np.maximum.accumulate(np.quantile(values, levels)) + levels * 1e-12
        maps[column] = (knots, np.interp(levels, want, grid))
        names.append(block.name)
    generator.value_maps = maps
    return names
