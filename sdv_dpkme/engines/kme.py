"""Kernel-mean-embedding engine (DP-MERF, DP-HP): plan -> one pass -> Gaussian releases -> generator.

Algorithm box (both papers, with the class-conditional embedding of DP-MERF §3):
  1. plan: split the precision of the budget over the releases (``plan_releases``);
  2. class proportions w = counts / n + N(0, (sigma sqrt(2)/n)^2) (only with a target);
  3. one pass over the private rows: M_k = (1/n) sum_i phi_k(x_i) y_i^T for every kernel term k;
  4. releases M_k + N(0, (sigma_k D_k/n)^2): sensitivity D_k/n, D_k = 2 as ||phi_k|| <= 1, or
     the map's tighter proven bound (one-hot blocks of the sum and pair kernels:
     ``replace_sensitivity``);
     optionally (``PairSelection``) the few categorical pairs most associated in the 'pairs'
     release are released again from the same pass, with their own share (step 4b);
  5. train a generator G so that E phi_k(G(z, c)) matches the released class means; the private
     rows are never touched again;
  6. optionally (``Training.calibration_parents``) fit offsets of G's categorical heads to the
     released pair tables beyond their noise (``engines.calibration``; post-processing).
Minibatch mode (DP-MERF's multi-release variant) replaces 3-4 for one term by one subsampled
release per training step (``fit_minibatch``).

Nothing here knows SDV: the input is the encoded matrix in the unit box and its public layout.
"""

import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from sdv_dpkme.engines.calibration import ROWS, calibrate, calibrate_values
from sdv_dpkme.engines.accumulate import ArrayRows, as_rows
from sdv_dpkme.engines.errors import EngineInputError
from sdv_dpkme.engines.generator import (
    Objective,
    TabularGenerator,
    collapsed_classes,
    train_generator,
)
from sdv_dpkme.engines.link_structure import (
    MIN_SIGNAL_RATIO,
    choose_parents,
    pair_scores,
    select_pairs,
)
from sdv_dpkme.features import PairwiseKernelMap, replace_sensitivity
from sdv_dpkme.privacy import SubsampledGaussianMechanism
from sdv_dpkme.privacy.recorder import releases_done


@dataclass
class KernelTerm:
    """One released embedding and its loss term."""

    group: str  # release (budget) group
    label: str  # name in the loss history
    feature_map: object
    weight: float = 1.0
    first_step: int = 0
    last_step: int = None  # exclusive; None = until the end
    period: int = 1  # used on the steps where step % period == phase
    phase: int = 0


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
    reweight_rows: int = 0  # > 0: a weighted pool of generated rows per class (see ``train``)
    schedule: str = 'constant'  # learning-rate schedule (``generator.SCHEDULES``)
    category_smoothing: float = 0.0  # share of uniform draws in categorical heads
    category_links: tuple = ()  # names of the categorical blocks whose heads see earlier draws
    max_link_parents: int = None  # None: every earlier linked head; k: the k chosen by the pairs
    link_signal_ratio: float = MIN_SIGNAL_RATIO  # a chosen pair's association / noise energy
    calibration_parents: int = 0  # > 0: calibrate the heads to the pair tables (``calibration``)
    ordered_heads: tuple = ()  # categorical blocks over consecutive integers (discrete numbers)
    calibration_rows: int = ROWS[1]  # generated rows per calibration round (``generated_rows``)


@dataclass
class PairSelection:
    """Step 4b: release ``count`` categorical pairs chosen on the 'pairs' release again, as
    group 'selected_pairs', and match them with ``weight``. The pairs: the largest ``score``
    ('signal': association energy, or 'tv': distance from independence), after a maximum
    spanning forest when ``spanning`` (``link_structure.select_pairs``).
    ``count`` None: one fewer than the categorical columns (a spanning tree's size)."""

    count: int = None
    weight: float = 1.0
    spanning: bool = False
    score: str = 'signal'

    def size(self, n_columns):
        return n_columns - 1 if self.count is None else self.count


def plan_releases(terms, shares, has_target, extra_groups=()):
    """``{group: (share of the precision, number of releases)}`` over the groups that exist
    (``extra_groups``: single releases that are not terms)."""
    counts = {}
    for term in terms:
        counts[term.group] = counts.get(term.group, 0) + 1
    if has_target:
        counts['class_proportions'] = 1
    for group in extra_groups:
        counts[group] = 1
    unknown = set(counts) - set(shares)
    if unknown:
        raise EngineInputError(f'budget_shares lacks a share for {sorted(unknown)}.')
    plan = {name: (float(shares[name]), count) for name, count in counts.items()}
    total = sum(share for share, _ in plan.values())
    if not all(share > 0 for share, _ in plan.values()):
        raise EngineInputError(f'budget_shares must be positive, got {shares}.')
    return {name: (share / total, count) for name, (share, count) in plan.items()}


def noisy_class_weights(counts_release, min_weight=1e-3):
    """Post-processing of released class proportions: clip, drop tiny, renormalise.

    On a tiny table or a small budget the noise can push every proportion below ``min_weight``;
    the classes are then sampled uniformly (still post-processing) with a warning, not a crash
    after the budget was spent.
    """
    w = np.clip(np.asarray(counts_release, dtype=float), 0, None)
    w[w < min_weight] = 0.0
    if w.sum() <= 0:
        warnings.warn(
            'Every released class proportion came out ~0 (the noise swamps the counts of this '
            'table at this epsilon), so the classes are sampled uniformly. Use a larger epsilon '
            'or a larger table for class shares that follow the data.', UserWarning, stacklevel=2)
        return np.full(w.shape, 1.0 / w.size)
    return w / w.sum()


def release_class_weights(stats, target, ledger, noise_multiplier):
    """Released class proportions -> (sampling weights, divisor of joint embeddings).

    ``stats``: the ``ClassSums`` of the pass (its exact class counts and n). The last bucket
    (out-of-domain) is modelled but never sampled.
    """
    if target is None:
        return np.ones(1), torch.ones(1, 1, dtype=torch.float64)
    n_classes = target.width
    released = ledger.mechanism.release(
        stats.proportions(), name='class_proportions',
        description=f"proportions of the {n_classes} buckets of '{target.name}'",
        sensitivity=np.sqrt(2) / stats.n, noise_multiplier=noise_multiplier,
    )
    weights = np.append(noisy_class_weights(released.numpy()[:-1]), 0.0)
    divisor = torch.as_tensor(np.where(weights > 0, weights, 1.0))[:, None]
    return weights, divisor


def one_pass(rows, n_classes, terms, verbose):
    """Step 3: the partial sums of every term over the rows (an array or a row source: a
    Parquet reader, a Dask or Spark DataFrame), merged; no noise yet."""
    return as_rows(rows).accumulate([t.feature_map for t in terms], n_classes, verbose=verbose)


def release_terms(stats, terms, sigmas, divisor, ledger):
    """One Gaussian release per term of the merged pass ``stats`` -> objectives."""
    if not terms:
        return []
    n = stats.n
    objectives = []
    for term, embedding in zip(terms, stats.means()):
        sensitivity = replace_sensitivity(term.feature_map) / n
        noisy = ledger.mechanism.release(
            embedding, name=term.group, description=term.feature_map.describe(),
            sensitivity=sensitivity, noise_multiplier=sigmas[term.group],
        )
        objectives.append(Objective(
            term.label, term.feature_map,
            noisy / divisor,  # joint -> class-conditional means (post-processing)
            weight=term.weight, first_step=term.first_step, last_step=term.last_step,
            period=term.period, phase=term.phase,
            noise_std=(sigmas[term.group] * sensitivity) / divisor[:, 0],
        ))
    return objectives


def fit(x, labels, blocks, target, columns, ledger, terms, shares, training, rng, verbose,
        selection=None):
    """Steps 1-5 of the algorithm box; returns the fitted ``KMEModel``.

    ``x``: the encoded rows in the unit box, an array (with ``labels``) or a row source whose
    ``accumulate`` does the one pass (``labels`` None then; see ``engines.accumulate``).
    ``selection``: a ``PairSelection`` (step 4b), used when there are >= 2 categorical columns
    in the 'pairs' term.
    """
    n_classes = 1 if target is None else target.width
    selectable = len(_selectable(terms))
    selects = selection is not None and selectable > 1 and selection.size(selectable) > 0
    plan = plan_releases(terms, shares, target is not None,
                         ['selected_pairs'] if selects else ())
    sigmas = ledger.accountant.calibrate(plan)
    stats = one_pass(as_rows(x, labels), n_classes, terms, verbose)
    del x
    weights, divisor = release_class_weights(stats, target, ledger, sigmas.get('class_proportions'))
    objectives = release_terms(stats, terms, sigmas, divisor, ledger)
    chosen = None
    if selects:
        chosen = release_selected_pairs(stats, terms, objectives, weights, divisor, sigmas,
                                        selection, ledger)
    del stats
    releases_done()  # an audit's white-box trial ends here (privacy.recorder); else a no-op
    model = train(blocks, columns, target, weights, objectives, training, rng, verbose)
    model.loss_values.attrs['selected_pairs'] = chosen
    return model


def _pairs_index(terms):
    return next((k for k, t in enumerate(terms) if isinstance(t.feature_map, PairwiseKernelMap)),
                None)


def _selectable(terms):
    """Names of the categorical columns of the 'pairs' term (public layout)."""
    k = _pairs_index(terms)
    return [] if k is None else [b.name for b in terms[k].feature_map.blocks
                                 if b.kind == 'categorical']


def release_selected_pairs(stats, terms, objectives, weights, divisor, sigmas, selection,
                           ledger):
    """Step 4b. Choose ``selection.count`` categorical pairs on the released 'pairs' tables
    (post-processing), release their block of the same exact pass again (a map over K
    categorical pairs: sensitivity sqrt(2)/n, ``PairwiseKernelMap.replace_bound``), combine each
    table with its 'pairs' copy by inverse variance (post-processing) and add the matching
    objective. Returns the chosen pairs."""
    k = _pairs_index(terms)
    fmap, pairs = terms[k].feature_map, objectives[k]
    cell_noise = pairs.noise_std * fmap.n_pairs ** 0.5
    names = _selectable(terms)
    scores = pair_scores(fmap, pairs.target, cell_noise, weights, names)
    chosen = select_pairs(scores, selection.size(len(names)), selection.spanning,
                          selection.score)
    sub = fmap.restricted(chosen)
    n, sigma = stats.n, sigmas['selected_pairs']
    bound, sub_bound = replace_sensitivity(fmap), replace_sensitivity(sub)
    noisy = ledger.mechanism.release(
        fmap.restrict_sums(stats.sums[k] / n, sub), name='selected_pairs',
        description=(f'{sub.describe()}: the {len(chosen)} categorical pairs most associated in '
                     "the 'pairs' release, released again"),
        sensitivity=sub_bound / n, noise_multiplier=sigma,
        details={'pairs': [f'{a} x {b}' for a, b in sub.pair_names()]},
    ) / divisor
    # per-cell noise variances of the two copies of a table (same class divisor for both)
    var_pairs = (sigmas[terms[k].group] * bound) ** 2 * fmap.n_pairs
    var_selected = (sigma * sub_bound) ** 2 * sub.n_pairs
    keep = var_selected / (var_pairs + var_selected) if var_pairs + var_selected > 0 else 0.0
    combined = keep * fmap.restrict_sums(pairs.target, sub) + (1 - keep) * noisy
    pairs.target = fmap.replace_pairs(pairs.target, sub, combined)
    objectives.append(Objective(
        'Selected pairs', sub, combined, weight=selection.weight,
        noise_std=(sigma * sub_bound / n) * (1 - keep) ** 0.5 / divisor[:, 0],
    ))
    return sub.pair_names()


def fit_minibatch(x, labels, blocks, target, columns, ledger, term, extra, shares, batch,
                  training, rng, verbose):
    """As ``fit``, but ``term`` is released once per training step on a secret batch of exactly
    ``batch`` rows (uniform without replacement); the ``extra`` terms are single releases."""
    n = len(x)
    if not 1 <= batch < n:
        raise EngineInputError(
            f'minibatch_size must be between 1 and the number of rows - 1 ({n - 1}), got '
            f'{batch!r}; use releases="single" for small tables.'
        )
    n_classes = 1 if target is None else target.width
    accountant = ledger.accountant
    # The plain releases (proportions, marginals) take their shares of the budget first; the
    # subsampled releases are then calibrated to spend exactly the rest.
    plain = plan_releases([term] + extra, shares, has_target=target is not None)
    del plain[term.group]
    sigmas = {}
    if plain:
        fraction = sum(share for share, _ in plain.values())
        sigmas = accountant.calibrate(
            {k: (share / fraction, c) for k, (share, c) in plain.items()}, fraction=fraction
        )
    stats = one_pass(ArrayRows(x, labels), n_classes, extra, verbose)
    weights, divisor = release_class_weights(stats, target, ledger, sigmas.get('class_proportions'))
    objectives = release_terms(stats, extra, sigmas, divisor, ledger)
    mechanism = SubsampledGaussianMechanism(
        accountant, ledger.noise, name=f'{term.group}_minibatch',
        description=term.feature_map.describe() + f', {batch} of {n} rows per step',
        sensitivity=replace_sensitivity(term.feature_map) / batch, sample_size=batch,
        population=n, count=training.steps,
    )
    x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
    labels = torch.as_tensor(np.zeros(n) if labels is None else labels, dtype=torch.long)

    def batch_target(step):
        idx = mechanism.sample_batch()
        y = torch.nn.functional.one_hot(labels[idx], n_classes).double()
        joint = term.feature_map.class_sums(x[idx], y, project=True) / batch
        return mechanism.release(joint) / divisor

    objectives.insert(0, Objective(term.label, term.feature_map, batch_target))
    releases_done()  # the recorded (plain) releases are made; the subsampled ones are not recorded
    return train(blocks, columns, target, weights, objectives, training, rng, verbose)


#: linked categorical heads fit the released pair tables cell by cell, noise included: they are
#: used only while one cell's noise std (in probability units, root mean square over the
#: trained classes) is at most this. At epsilon = 1: Adult (39,073 rows) 0.010, where links
#: helped; the 2,530-row hypothyroid table 0.098, where they lost 0.065 of SDMetrics quality.
#: Which pairs to link is then chosen pair by pair (``link_structure``): linking every narrow
#: pair passed this test on Census (0.022, 40 columns) and still lost 0.06
LINK_NOISE_LIMIT = 0.03


def pair_cell_noise(objectives, classes):
    """Std of the release noise in one cell of the 'pairs' tables (a pair's joint class-
    conditional frequencies), root mean square over ``classes``; None without that release.
    Public: from the calibrated sigma, n and the released class weights."""
    for o in objectives:
        if isinstance(o.feature_map, PairwiseKernelMap) and o.noise_std is not None:
            std = o.noise_std[torch.as_tensor(classes)] * o.feature_map.n_pairs ** 0.5
            return float((std ** 2).mean() ** 0.5)
    return None


def selected_links(objectives, weights, names, max_parents, min_ratio=MIN_SIGNAL_RATIO):
    """({child: parents}, scores): each of the candidate heads ``names`` linked to at most
    ``max_parents`` earlier ones, chosen on the released 'pairs' tables (``link_structure``)."""
    pairs = next(o for o in objectives if isinstance(o.feature_map, PairwiseKernelMap))
    fmap = pairs.feature_map
    names = [b.name for b in fmap.blocks if b.name in set(names)]  # in the map: layout order
    cell_noise = pairs.noise_std * fmap.n_pairs ** 0.5
    scores = pair_scores(fmap, pairs.target, cell_noise, weights, names)
    return choose_parents(scores, names, max_parents, min_ratio), scores


def train(blocks, columns, target, weights, objectives, training, rng, verbose):
    """Train a fresh generator against the objectives (post-processing of the releases).
    ``training.category_links`` apply only where the pair tables resolve what they fit
    (``LINK_NOISE_LIMIT``)."""
    n_classes = 1 if target is None else target.width
    noise = pair_cell_noise(objectives, np.flatnonzero(weights > 0))
    links = training.category_links if noise is not None and noise <= LINK_NOISE_LIMIT else ()
    scores = None
    if links and training.max_link_parents:
        links, scores = selected_links(objectives, weights, links, training.max_link_parents,
                                       training.link_signal_ratio)
    with torch.random.fork_rng(devices=[]):  # seed the initial weights, not the user's RNG
        torch.manual_seed(int(torch.randint(2**62, (1,), generator=rng)))
        generator = TabularGenerator(
            blocks, len(columns), n_classes, training.latent_dim, tuple(training.generator_dims),
            numeric_noise=training.numeric_noise, category_smoothing=training.category_smoothing,
            category_links=links,
        )
    history = train_generator(
        generator, objectives, np.flatnonzero(weights > 0), training.steps, training.batch_size,
        training.learning_rate, training.device, rng, verbose=verbose, schedule=training.schedule,
    )
    collapsed = collapsed_classes(generator, np.flatnonzero(weights > 0))
    history.attrs['pair_cell_noise'] = noise
    history.attrs['link_scores'] = scores
    model = KMEModel(generator, columns, target, weights, history, collapsed)
    if training.calibration_parents:
        started = time.perf_counter()
        history.attrs['calibrated_values'] = calibrate_values(
            model.generator, objectives, weights, rng, training.calibration_rows)
        history.attrs['calibrated_pairs'] = calibrate(
            model.generator, objectives, weights, rng, training.calibration_parents,
            rows=training.calibration_rows, verbose=verbose, ordered=training.ordered_heads)
        history.attrs['calibration_seconds'] = time.perf_counter() - started
    if training.reweight_rows:
        model.pools = reweighted_pools(model, objectives, training.reweight_rows, rng, verbose)
    return model


def reweighted_pools(model, objectives, rows, rng, verbose=False):
    """Per class, ``rows`` generated rows and simplex weights that bring their embeddings
    closest to the released ones (Balog et al.'s reweighting applied to the generator's rows):
    minimise sum_k weight_k ||sum_g w_g phi_k(g) - target_k,c||^2 over the simplex. Only the
    fixed releases are used (post-processing, no extra epsilon)."""
    from sdv_dpkme.engines.reweighting import simplex_weights_for_terms

    fixed = [o for o in objectives if isinstance(o.target, torch.Tensor)]
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


class KMEModel:
    """Trained generator, released label weights and the encoded layout (all public or DP)."""

    def __init__(self, generator, columns, target, class_weights, loss_values, collapsed=()):
        self.generator = generator.cpu().eval()
        self.collapsed_classes = list(collapsed)  # classes whose rows came out identical
        self.columns = list(columns)
        self.target = target
        self.class_weights = np.asarray(class_weights, dtype=float)
        self.loss_values = loss_values
        self._rng = None

    def set_random_state(self, random_state):
        self._rng = torch.Generator()
        if random_state is None:
            self._rng.seed()
        else:
            self._rng.manual_seed(int(random_state))

    def can_sample(self, label):
        """Whether class ``label`` has a positive released weight (the generator learnt it)."""
        return 0 <= label < len(self.class_weights) and self.class_weights[label] > 0

    def sample(self, num_rows, label=None):
        """Rows of classes drawn by the released weights, or all of class ``label``."""
        if self._rng is None:
            self.set_random_state(None)
        if label is None:
            weights = torch.as_tensor(self.class_weights, dtype=torch.float64)
            labels = torch.multinomial(weights, num_rows, replacement=True, generator=self._rng)
        else:
            labels = torch.full((num_rows,), int(label), dtype=torch.long)
        pools = getattr(self, 'pools', None)  # None in models saved before the option
        if pools:
            return self._sample_pools(labels, pools)
        rows = self.generator.sample(labels, self._rng)  # float32, target columns zero
        if self.target is not None:
            target = np.asarray(self.target.columns)
            rows[np.arange(num_rows), target[labels.numpy()]] = 1.0
        return pd.DataFrame(rows, columns=self.columns, copy=False)

    def _sample_pools(self, labels, pools):
        """Rows drawn with replacement from each class's weighted pool of generated rows."""
        rows = np.empty((len(labels), len(self.columns)), dtype=np.float32)
        labels = labels.numpy()
        for c in np.unique(labels):
            at = np.flatnonzero(labels == c)
            pool, weights = pools[int(c)]
            picks = torch.multinomial(torch.as_tensor(weights), len(at), replacement=True,
                                      generator=self._rng)
            rows[at] = pool[picks.numpy()]
        return pd.DataFrame(rows, columns=self.columns, copy=False)

    def __getstate__(self):
        state = dict(self.__dict__)
        state['_rng'] = None  # sampling restarts from SDV's fixed seed after loading
        return state
