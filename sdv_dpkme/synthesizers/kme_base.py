"""The SDV side shared by the kernel-mean-embedding synthesizers (DP-HP, DP-MERF).

It adds the two kernel terms both methods release besides their own (fine-scale marginals and
pairwise products) and hands the fit to ``sdv_dpkme.engines.kme``.
"""

import warnings

from sdv.errors import SynthesizerInputError

from sdv_dpkme.domain.spec import is_discrete
from sdv_dpkme.engines import kme
from sdv_dpkme.engines.calibration import generated_rows
from sdv_dpkme.engines.errors import CollapsedGeneratorWarning
from sdv_dpkme.engines.generator import linked_blocks, resolve_device
from sdv_dpkme.engines.kernel_terms import one_way_term, shared_terms
from sdv_dpkme.synthesizers.base import BaseDPSynthesizer


class BaseDPKMESynthesizer(BaseDPSynthesizer):
    """Kernel-mean-embedding synthesizer (abstract): one release plan, then a generator.

    ``target_column`` (optional, categorical) makes the embedding class-conditional; the class
    proportions are then released with noise. ``kernel`` says what is released and
    ``training`` how the generator is trained on the releases (post-processing); their fields
    are documented in ``sdv_dpkme.synthesizers.options_kme``.
    """

    # Method hooks: the feature maps and the default budget shares.
    def _kernel_terms(self, blocks, generator, steps):
        """The method's own feature maps, as ``KernelTerm``s (one release each), for a training
        of ``steps`` steps."""
        raise NotImplementedError

    def _default_budget_shares(self):
        """Default precision share per release group (incl. 'class_proportions', 'marginals')."""
        raise NotImplementedError

    def _report_notes(self, terms):
        return []

    def _check_parameters(self):
        """Also ``kernel.budget_shares``: only this method's release groups (a misspelt group
        was ignored)."""
        super()._check_parameters()
        shares = self.kernel.budget_shares or {}
        groups = sorted(self._default_budget_shares())
        unknown = sorted(set(shares) - set(groups))
        if unknown:
            raise SynthesizerInputError(
                f'budget_shares has no release group {unknown}; the groups of '
                f'{type(self).__name__} are {groups}.')

    def _shares(self):
        return {**self._default_budget_shares(), **(self.kernel.budget_shares or {})}

    def _shared_terms(self, blocks, rng=None, planned=False):
        """The shared terms; the notes on the pairs' layout are kept for the privacy report
        (``_pair_notes``). ``rng``: the model RNG (a cyclic pair design's column order).
        ``planned``: leave out a 'one_way' term that the plan places (``_one_way_fallback``)."""
        kernel, training = self.kernel, self.training
        self._pair_notes = []  # public: widths and the model RNG only
        one_way = None if planned and self._plan_places_one_way(blocks) else \
            self._one_way_length()
        return shared_terms(blocks, kernel.marginal_length_scale, training.marginal_weight,
                            kernel.pair_length_scale, training.pair_weight,
                            kernel.max_pair_features, kernel.max_pair_width, rng,
                            self._pair_notes, one_way, training.marginal_weight)

    def _one_way_length(self):
        """The numeric length of the 'one_way' release, None when it is off: 'auto' releases it
        with a target of >= 3 public categories: its gain, about sqrt(C) less noise on each
        column's marginal, is smallest at C = 2 while its budget share is the same (without a
        target, every release is pooled already). Under the noise-aware plan it is placed by
        the plan instead (``_one_way_fallback``)."""
        one_way = self.kernel.one_way
        if one_way == 'auto':
            one_way = self._target_categories() >= 3
        return (self.kernel.marginal_length_scale or 0.01) if one_way else None

    def _one_way_fallback(self, blocks):
        """(terms, keep) for the plan: 'auto' with a target of >= 2 public categories under the
        noise-aware plan gives the 'one_way' term, which the plan releases instead of the
        class-conditional 'marginals' where these are noise-dominated (there about sqrt(C) less
        noise per column pays for its share), and else beside them with >= 3 categories
        (``keep``) or not at all with 2; otherwise ([], False)."""
        if not self._plan_places_one_way(blocks):
            return [], False
        return [one_way_term(blocks, self.kernel.marginal_length_scale or 0.01,
                             self.training.marginal_weight)], self._target_categories() >= 3

    def _plan_places_one_way(self, blocks):
        """'auto' with a target of >= 2 public categories under the noise-aware plan."""
        return (self.kernel.one_way == 'auto' and self._max_noise_ratio() is not None
                and bool(blocks) and self._target_categories() >= 2)

    def _target_categories(self):
        """The number of public categories of the target (0 without a declared list)."""
        domain = self._domains.get(self.target_column) if self.target_column else None
        return len(getattr(domain, 'categories', ()) or ())

    def _steps(self, n, blocks=()):
        training = self.training
        if training.steps == 'auto':
            cap = training.max_auto_steps
            per = training.auto_steps_columns
            limit = training.auto_steps_limit or 3 * cap  # absolute, whatever the width
            if per and len(blocks) > per:  # wider tables: more pairs to fit, more steps
                cap = round(cap * len(blocks) / per)
            return min(cap, limit, max(200, n))
        return int(training.steps)

    def _batch_size(self, n):
        if self.training.batch_size == 'auto':
            return min(1024, max(256, n))
        return int(self.training.batch_size)

    def _training(self, n, blocks):
        training = self.training
        return kme.Training(self._steps(n, blocks), self._batch_size(n), training.learning_rate,
                            training.latent_dim, tuple(training.generator_dims),
                            training.numeric_noise, resolve_device(self.device),
                            int(training.reweight_generated_rows or 0),
                            training.learning_rate_schedule, self._category_smoothing(),
                            self._category_links(blocks), training.max_link_parents,
                            training.link_signal_ratio, int(training.calibration_parents),
                            tuple(name for name, d in self._domains.items() if is_discrete(d)),
                            self._calibration_rows(n), float(training.edge_snap),
                            training.collapse_fallback, training.noise_weights)

    def _calibration_rows(self, n):
        rows = self.training.calibration_rows
        return generated_rows(n) if rows == 'auto' else int(rows)

    def _category_links(self, blocks):
        """The categorical columns whose heads may be linked: those at most ``max_link_width``
        (and ``max_pair_width``) wide and, widest left out first, at most ``max_pair_features``
        weights (public widths only)."""
        if not self.training.category_links:
            return ()
        width = min(self.kernel.max_pair_width, self.training.max_link_width)
        return linked_blocks(blocks, width, self.kernel.max_pair_features)

    def _category_smoothing(self):
        """'auto': 0.01 for a class-conditional fit (a target_column), else 0."""
        smoothing = self.training.category_smoothing
        if smoothing == 'auto':
            return 0.01 if self.target_column is not None else 0.0
        return float(smoothing)

    def _max_noise_ratio(self):
        """The plan's threshold (``kernel.plan='auto'``), None for the fixed plan."""
        return None if self.kernel.plan == 'fixed' else float(self.kernel.max_noise_ratio)

    def _fit_rows(self, rows, blocks, target, columns):
        super()._fit_rows(rows, blocks, target, columns)
        # the plan's decisions, from public facts only, next to the releases they led to
        self._privacy_report.plan = [e.to_dict() for e in self._model.release_plan]

    def _fits_in_one_pass(self):
        return True  # every release is a sum over the rows (see engines.accumulate)

    def _planned_terms(self, blocks, n, rng):
        """(terms, pair selection) the options ask for, before the release plan: public
        layout and n only."""
        terms = (self._kernel_terms(blocks, rng, self._steps(n, blocks))
                 + self._shared_terms(blocks, rng, planned=True))
        selection = None
        kernel = self.kernel
        if kernel.selected_pairs:
            count = None if kernel.selected_pairs == 'auto' else int(kernel.selected_pairs)
            selection = kme.PairSelection(count, float(self.training.selected_pair_weight),
                                          kernel.selected_pairs_spanning,
                                          kernel.selected_pairs_score)
        return terms, selection

    def _fit_engine(self, x, blocks, target, labels, columns, ledger):
        self._check_parameters()  # kernel and training may have been replaced
        rng = self._torch_generator()
        terms, selection = self._planned_terms(blocks, len(x), rng)
        model = kme.fit(x, labels, blocks, target, columns, ledger, terms, self._shares(),
                        self._training(len(x), blocks), rng, self.verbose, selection,
                        self._max_noise_ratio(), *self._one_way_fallback(blocks))
        self._warn_if_unlinked(model, blocks)
        # the pairs' layout notes, unless the release plan dropped the term altogether
        dropped = {e.group for e in model.release_plan if e.decision == 'dropped'}
        return model, (self._report_notes(terms) + self._warn_if_collapsed(model, target)
                       + ([] if 'pairs' in dropped else self._pair_notes))

    def _warn_if_unlinked(self, model, blocks):
        """category_links=True that training could not apply: say why rather than stay silent
        ('auto' asks for links only where they apply)."""
        if self.training.category_links is not True or model.generator._linked:
            return
        noise = model.loss_values.attrs.get('pair_cell_noise')
        if noise is None:
            why = "there is no 'pairs' release to link by (pair_length_scale=None)"
        elif noise > kme.LINK_NOISE_LIMIT:
            why = (f"one cell of the 'pairs' release has a noise std of {noise:.3f}, above "
                   f'{kme.LINK_NOISE_LIMIT} (links would fit that noise); more rows or a larger '
                   'epsilon lower it')
        elif len(self._category_links(blocks)) < 2:
            why = (f'fewer than two categorical columns are at most '
                   f'{self.training.max_link_width} '
                   'buckets wide')
        else:
            why = ("no pair of those columns is associated above the noise of its cells in "
                   "the released 'pairs' tables")
        warnings.warn(f'category_links=True was not applied: {why}. The generator was trained '
                      'with independent categorical heads.', UserWarning, stacklevel=4)

    def _warn_if_collapsed(self, model, target):
        """Warn of a collapse (also when the fallback retrained the generator); returns the
        privacy report's note on the fallback ([] when it did not run)."""
        fallback = model.loss_values.attrs.get('collapse_fallback')
        collapsed = fallback['collapsed'] if fallback else model.collapsed_classes
        if not collapsed:
            return []
        if target is None:
            which = 'every row came'
        else:
            names = [*self._domains[target.name].categories, None]  # None: the missing bucket
            which = (f"the rows of {target.name} = "
                     f"{', '.join(repr(names[c]) for c in collapsed)} came")
        stronger = ('more rows, a larger epsilon, or fewer released terms '
                    '(e.g. pair_length_scale=None)')
        first = (f'The trained generator collapsed: {which} out (nearly) identical (numeric '
                 'columns spread over less than 1% of their bounds and one category per column, '
                 'or every numeric column within 3% of its bounds). The noisy embeddings were '
                 'too weak to train on.')
        retry = (f'Refit with another random_state, or give the fit a stronger signal: '
                 f"{stronger}. In get_loss_values(), the '... above noise floor' columns "
                 'estimate how far the fit is from the true embeddings.')
        note = None
        if fallback:
            factors = ', '.join(f'{name} {max(f):.2f}' for name, f in fallback['factors'].items()
                                if f) or 'none (no single release to shrink)'
            note = ('The generator trained on the releases collapsed, so it was trained again on '
                    'the releases shrunk toward a prior that reads no row (every column uniform '
                    'over its public domain; James-Stein factors, the share of each release '
                    f'kept, at most: {factors}): post-processing, no budget '
                    '(training.collapse_fallback).')
            shrunk = ('It was trained again on the releases shrunk toward a prior that reads no '
                      'row (every column uniform over its public domain)')
            if model.collapsed_classes:
                message = f'{first} {shrunk}, and collapsed again. {retry}'
            else:
                message = (f'{first} {shrunk}: expect synthetic rows close to that prior (the '
                           'privacy report has the shrinkage). For a fit that carries the data, '
                           f'give it {stronger}.')
        else:
            message = f'{first} {retry}'
        warnings.warn(message, CollapsedGeneratorWarning, stacklevel=4)
        return [note] if note else []
