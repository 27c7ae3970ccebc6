"""Kernel-mean-embedding engine (DP-MERF, DP-HP): plan -> one pass -> releases -> generator.

Algorithm box (both papers, with the class-conditional embedding of DP-MERF §3):
  1. plan: split the precision of the budget over the releases (``kme_plan.plan_releases``);
     with ``max_noise_ratio``, terms whose expected noise is far above their signal bound are
     dropped or narrowed first, their share going to the rest (``noise_plan``, public facts
     only), and a fit whose whole plan is noise-dominated warns before any spend;
  2. class proportions w = counts / n + N(0, (sigma sqrt(2)/n)^2) (only with a target);
  3. one pass over the private rows: M_k = (1/n) sum_i phi_k(x_i) y_i^T for every kernel term k;
  4. releases M_k + N(0, (sigma_k D_k/n)^2): sensitivity D_k/n, D_k = 2 as ||phi_k|| <= 1, or
     the map's tighter proven bound (one-hot blocks of the sum and pair kernels:
     ``replace_sensitivity``); then the class shares, from w and the per-class totals of the
     one-hot blocks in the M_k by inverse variance (post-processing, ``engines.class_shares``),
     turn the joint releases into class-conditional targets;
     optionally (``PairSelection``) the few categorical pairs most associated in the 'pairs'
     release are released again from the same pass, with their own share (``kme_pairs``);
  5. train a generator G so that E phi_k(G(z, c)) matches the released class means; the private
     rows are never touched again (``kme_training``); if G collapsed, train again on the
     releases shrunk toward a public prior (``Training.collapse_fallback``, ``engines.prior``);
  6. post-processing, optional: fit offsets of G's categorical heads to the released tables
     beyond their noise (``Training.calibration_parents``, ``engines.calibration``) and keep a
     reweighted pool of generated rows per class (``Training.reweight_rows``).
Minibatch mode (DP-MERF's multi-release variant) replaces 3-4 for one term by one subsampled
release per training step (``fit_minibatch``).

Nothing here knows SDV: the input is the encoded matrix in the unit box and its public layout.
"""

import math

import numpy as np
import pandas as pd
import torch

from sdv_dpkme.engines.accumulate import ArrayRows, as_rows
from sdv_dpkme.engines.errors import EngineInputError
from sdv_dpkme.engines.generator import Objective
from sdv_dpkme.engines.kme_pairs import (
    LINK_NOISE_LIMIT,
    PairSelection,
    release_selected_pairs,
)
from sdv_dpkme.engines.kme_plan import (
    KernelTerm,
    one_pass,
    plan_releases,
    release_class_proportions,
    release_embeddings,
    shared_class_weights,
    term_objectives,
)
from sdv_dpkme.engines.kme_training import (
    Training,
    post_process,
    trained_generator,
)
from sdv_dpkme.engines.link_structure import MIN_SIGNAL_RATIO
from sdv_dpkme.engines.noise_plan import choose_releases, note_class_shares
from sdv_dpkme.engines.plan_warning import warn_if_weak
from sdv_dpkme.engines.prior import shrunk_objectives
from sdv_dpkme.features import replace_sensitivity
from sdv_dpkme.privacy import SubsampledGaussianMechanism
from sdv_dpkme.privacy.recorder import releases_done

# the engine's API (the synthesizers and image generators use these names from here)
__all__ = ['KMEModel', 'KernelTerm', 'LINK_NOISE_LIMIT', 'MIN_SIGNAL_RATIO', 'PairSelection',
           'Training', 'fit', 'fit_minibatch', 'plan_releases', 'train']


def fit(x, labels, blocks, target, columns, ledger, terms, shares, training, rng, verbose,
        selection=None, max_noise_ratio=None, pooled_fallback=(), keep_fallback=False):
    """Steps 1-6 of the algorithm box; returns the fitted ``KMEModel`` (its ``release_plan``:
    the plan's ``noise_plan.PlanEntry``s).

    ``x``: the encoded rows in the unit box, an array (with ``labels``) or a row source whose
    ``accumulate`` does the one pass (``labels`` None then; see ``engines.accumulate``).
    ``selection``: a ``PairSelection``, used when there are >= 2 categorical columns in the
    'pairs' term. ``max_noise_ratio``: None keeps every term (the fixed plan).
    ``pooled_fallback``, ``keep_fallback``: pooled terms the plan releases in place of the
    class-conditional marginals where these are noise-dominated, and else beside them only
    with ``keep_fallback`` (``noise_plan.choose_releases``).
    """
    n_classes = 1 if target is None else target.width
    # 1. the plan, from public facts only; a warning before any spend if it carries little signal
    terms, selects, _, sigmas, entries = choose_releases(
        terms, shares, target is not None, len(x), n_classes, ledger.accountant.calibrate,
        max_noise_ratio, selection, training.steps, pooled_fallback, keep_fallback)
    warn_if_weak(entries, len(x), ledger.accountant.epsilon)
    # 2-4. one pass, then the releases
    stats = one_pass(as_rows(x, labels), n_classes, terms, verbose)
    del x
    weights, divisor, objectives = released_objectives(stats, target, terms, sigmas, ledger,
                                                      entries)
    chosen = None
    if selects:
        chosen = release_selected_pairs(stats, terms, objectives, weights, divisor, sigmas,
                                        selection, ledger)
    del stats
    releases_done()  # an audit's white-box trial ends here (privacy.recorder); else a no-op
    # 5-6. training and post-processing
    model = train(blocks, columns, target, weights, objectives, training, rng, verbose)
    model.loss_values.attrs['selected_pairs'] = chosen
    model.release_plan = entries
    return model


def released_objectives(stats, target, terms, sigmas, ledger, entries=()):
    """The class proportions and each term's release, then the class shares from all of them,
    before any use of the shares (the selected pairs are chosen with them, so their release
    cannot inform them) -> (sampling weights, divisor of joint embeddings, objectives)."""
    proportions, std = release_class_proportions(stats, target, ledger,
                                                 sigmas.get('class_proportions'))
    releases = release_embeddings(stats, terms, sigmas, ledger)
    weights, divisor, shares_std, count = shared_class_weights(proportions, std, terms, releases)
    note_class_shares(entries, std, shares_std, count)
    return weights, divisor, term_objectives(terms, releases, divisor)


def fit_minibatch(x, labels, blocks, target, columns, ledger, term, extra, shares, batch,
                  training, rng, verbose, max_noise_ratio=None):
    """As ``fit``, but ``term`` is released once per training step on a secret batch of exactly
    ``batch`` rows (uniform without replacement); the ``extra`` terms are single releases (the
    noise-aware plan judges those only)."""
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

    def calibrate_plain(plan):
        plain = {k: v for k, v in plan.items() if k != term.group}
        sigmas = {term.group: math.nan}  # per step, on a batch: in the ledger, not judged here
        if plain:
            fraction = sum(share for share, _ in plain.values())
            sigmas.update(accountant.calibrate(
                {k: (share / fraction, c) for k, (share, c) in plain.items()}, fraction=fraction))
        return sigmas

    terms, _, _, sigmas, entries = choose_releases(
        [term] + extra, shares, target is not None, n, n_classes, calibrate_plain,
        max_noise_ratio, None, training.steps)
    extra = terms[1:]
    entries[0].reason = 'released once per training step on a secret batch (see the ledger)'
    warn_if_weak(entries, n, accountant.epsilon)
    stats = one_pass(ArrayRows(x, labels), n_classes, extra, verbose)
    weights, divisor, objectives = released_objectives(stats, target, extra, sigmas, ledger,
                                                      entries)
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
    model = train(blocks, columns, target, weights, objectives, training, rng, verbose)
    model.release_plan = entries
    return model


def train(blocks, columns, target, weights, objectives, training, rng, verbose):
    """Steps 5-6: a fresh generator trained against the objectives, then the post-processing
    ``training`` asks for. Reads only the releases: post-processing, no extra epsilon.

    With ``training.collapse_fallback``, a generator that collapsed (identical rows in some
    class) is trained again, from a fresh start, on the releases shrunk toward a public prior
    (``engines.prior``); the loss history's attrs['collapse_fallback'] then holds the classes
    that collapsed and the shrinkage factors. Not where a target is released afresh at every
    step (``fit_minibatch``): those releases are accounted for one training only."""
    generator, history, collapsed = trained_generator(
        blocks, columns, target, weights, objectives, training, rng, verbose)
    fallback = None
    # per-step releases (minibatch mode) are spent once, step by step: no second training
    fixed = all(isinstance(o.target, torch.Tensor) for o in objectives)
    if collapsed and training.collapse_fallback and fixed:
        seed = int(torch.randint(2**62, (1,), generator=rng))
        objectives, factors = shrunk_objectives(
            objectives, blocks, len(columns), target, weights, torch.Generator().manual_seed(seed))
        fallback = {'collapsed': list(collapsed), 'factors': factors}
        generator, history, collapsed = trained_generator(
            blocks, columns, target, weights, objectives, training, rng, verbose)
    model = KMEModel(generator, columns, target, weights, history, collapsed)
    model.loss_values.attrs['collapse_fallback'] = fallback
    return post_process(model, objectives, training, rng, verbose)


class KMEModel:
    """Trained generator, released label weights and the encoded layout (all public or DP)."""

    def __init__(self, generator, columns, target, class_weights, loss_values, collapsed=()):
        self.generator = generator.cpu().eval()
        self.collapsed_classes = list(collapsed)  # classes whose rows came out identical
        self.columns = list(columns)
        self.target = target
        self.class_weights = np.asarray(class_weights, dtype=float)
        self.loss_values = loss_values
        self.pools = None  # post-processing's reweighted pools, when that option is on
        self.release_plan = []  # the plan's noise_plan.PlanEntry's (public numbers)
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
        if self.pools:
            return self._sample_pools(labels, self.pools)
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
