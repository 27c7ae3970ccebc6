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
from sdv_dpkme.engines.generator import SCHEDULES, linked_blocks, resolve_device
from sdv_dpkme.engines.kernel_terms import shared_terms
from sdv_dpkme.synthesizers.base import BaseDPSynthesizer


class BaseDPKMESynthesizer(BaseDPSynthesizer):
    """Kernel-mean-embedding synthesizer (abstract): one release plan, then a generator.

    Args (besides those of ``BaseDPSynthesizer``):
        target_column: optional categorical column; the embedding is class-conditional and the
            class proportions are released with noise.
        marginal_length_scale: length (on the [0, 1] scale of the public bounds) of the extra
            per-numeric-column kernel released as 'marginals' (``FourierMarginalMap``), so that
            column shapes finer than the method's own kernel are matched; None leaves it out
            (the papers' release plans). marginal_weight: its weight in the training loss.
        pair_length_scale: length of the numeric kernels in the extra release 'pairs'
            (``PairwiseKernelMap``: products of per-column kernels over every pair of columns),
            so that how columns move together within a class is matched; None leaves it out.
            pair_weight: its weight in the training loss. Columns are left out of it, with a
            warning, when wider than ``max_pair_width`` (512) features, then widest first while
            it would exceed ``max_pair_features`` per class.
        learning_rate_schedule: 'constant' (the papers') or 'cosine': the generator's learning rate
            decays from ``learning_rate`` to 0 over the steps, so that the last steps settle on
            the released embeddings instead of jittering with each batch (training only: no
            extra epsilon, no extra time).
        category_smoothing: share a of each categorical value that is drawn uniformly over the
            column's public categories (0 <= a < 1), in training and sampling alike. Every public
            category keeps at least a / K of every class (K categories), so none that the noise
            pushed to 0 in one class becomes impossible there (models such as naive Bayes trained
            on the output break on impossible values); the generator compensates for the mixture
            on the categories above a / K. 0 gives the papers' generator. 'auto': 0.01 with a
            target_column (the class-conditional releases are where the noise makes a category
            impossible in one class), 0 without one (where it only adds noise: a share a of a
            label-like column's values would be random).
        category_links: whether categorical heads see the categories already drawn for the
            row. False: the papers' generator, every categorical column drawn independently
            given the latent noise. 'auto' (DP-HP's default) or True: each categorical head at
            most ``max_link_width`` (64) buckets wide may see, through a learned linear map, the
            categories drawn in at most ``max_link_parents`` (2) earlier such heads (layout
            order), so one-to-one and strongly associated pairs (education x educational-num)
            are carried instead of blurred; training draws the categories and passes gradients
            straight through. The parents are chosen on the released 'pairs' tables: the
            earlier heads with the largest association energy, among those where it is at
            least the noise energy of the pair's cells (``engines.link_structure``). No head is
            linked while one cell of the 'pairs' release has a noise std above
            ``engines.kme.LINK_NOISE_LIMIT`` (0.03) or without that release; True then warns,
            'auto' stays silent. Post-processing of the releases (public widths, sigma, n,
            released class weights): no extra epsilon. Measured
            (benchmarks/results/adult_plain.md, "Linked heads on chosen parents"): on Adult at
            epsilon = 1, SDMetrics quality 0.949 -> 0.966 (paired, 3 of 3).
        steps, batch_size: generator training steps and generated rows per step. 'auto' (the
            defaults) follows the number n of private rows, which is public: steps =
            min(``max_auto_steps``, max(200, n)) and batch_size = min(1024, max(256, n)), so
            500 x 1024 from 1,024 rows up (800 x 1024 for DP-HP). On small tables the targets
            are mostly noise; the 215-row table of benchmarks/results/small_tables.md fits about
            5x faster at no loss of quality.
        reweight_generated_rows: None (default) or R: after training, R rows per class are
            generated and weighted (Balog et al.'s reweighting, on the simplex) so that their
            embeddings come closest to the released ones; ``sample`` then draws from those
            weighted rows instead of the generator. Post-processing: no extra epsilon. On Adult
            it raised SDMetrics quality from 0.931 to 0.963 (DP-HP, 3 seeds)
            (benchmarks/results/reweighting.md); it costs R x R kernel sums per class and term
            at fit (DP-HP's maps from per-column kernels; DP-MERF's memory: R x its random
            features), and samples repeat rows of the pool.
    """

    #: steps='auto' trains min(max_auto_steps, max(200, n)) steps on n rows
    max_auto_steps = 500
    #: cap on the size of the 'pairs' map (its memory and training cost grow with it)
    max_pair_features = 1_000_000
    #: columns with more features than this (categories + missing/out-of-domain buckets) are
    #: left out of the 'pairs' map (Adult's and Census' widest categorical columns have 42 and 52
    #: categories)
    max_pair_width = 512
    #: categorical columns wider than this are not linked (``category_links``)
    max_link_width = 64
    #: each linked head sees at most this many earlier heads, chosen on the released pair tables
    #: (None: every earlier linked head)
    max_link_parents = 2
    #: a pair is linked only where its association energy is at least this multiple of the
    #: noise energy of its cells
    link_signal_ratio = kme.MIN_SIGNAL_RATIO
    #: steps='auto' allows ``max_auto_steps`` up to this many columns (generator blocks) and
    #: grows in proportion beyond, up to 3x (None: fixed)
    auto_steps_columns = None
    #: > 0 or 'auto' (categorical columns - 1): this many categorical pairs, the most associated
    #: in the 'pairs' release (a spanning forest first with ``selected_pairs_spanning``), are
    #: released again (group 'selected_pairs', needs its budget share; DP-HP's default is 0.1)
    #: and matched with ``selected_pair_weight``. Off here; DP-HP's default is 'auto', spanning
    #: (docs/privacy.md)
    selected_pairs = 0
    selected_pair_weight = 1.0
    selected_pairs_spanning = False
    #: what ranks the pairs: 'signal' (association energy) or 'tv' (distance from independence)
    selected_pairs_score = 'signal'
    #: > 0: after training, each categorical head's category probabilities take offsets by its
    #: own categories and by the categories drawn in up to this many earlier heads, fitted to the
    #: class-pooled released pair tables beyond their noise (``engines.calibration``;
    #: post-processing). 0: off
    calibration_parents = 0

    def _check_parameters(self):
        def number(value):
            return isinstance(value, (int, float)) and not isinstance(value, bool)

        batch = self.batch_size
        if batch != 'auto' and not (number(batch) and int(batch) == batch and batch >= 2):
            raise SynthesizerInputError(
                f"batch_size must be 'auto' or an integer >= 2, got {batch!r}."
            )
        steps = self.steps
        if steps != 'auto' and not (number(steps) and int(steps) == steps and steps >= 1):
            raise SynthesizerInputError(f"steps must be 'auto' or an integer >= 1, got {steps!r}.")
        schedule = self.learning_rate_schedule
        if not isinstance(schedule, str) or schedule not in SCHEDULES:
            raise SynthesizerInputError(
                f'learning_rate_schedule must be one of {list(SCHEDULES)}, got {schedule!r}.'
            )
        smoothing = self.category_smoothing
        if smoothing != 'auto' and not (number(smoothing) and 0 <= smoothing < 1):
            raise SynthesizerInputError(
                f"category_smoothing must be 'auto' or a number in [0, 1), got {smoothing!r}."
            )
        links = self.category_links
        if not (isinstance(links, bool) or (isinstance(links, str) and links == 'auto')):
            raise SynthesizerInputError(
                f"category_links must be 'auto', True or False, got {self.category_links!r}."
            )
        pool = getattr(self, 'reweight_generated_rows', None)
        if pool is not None and not (number(pool) and int(pool) == pool and pool >= 2):
            raise SynthesizerInputError(
                f'reweight_generated_rows must be None (off) or an integer >= 2, got {pool!r}.'
            )
        count = self.selected_pairs
        if not ((isinstance(count, str) and count == 'auto')
                or (number(count) and int(count) == count and count >= 0)):
            raise SynthesizerInputError(
                f"selected_pairs must be 'auto', 0 (off) or an integer >= 1, got {count!r}."
            )
        if not (number(self.selected_pair_weight) and 0 < self.selected_pair_weight < float('inf')):
            raise SynthesizerInputError(
                f'selected_pair_weight must be a number > 0, got {self.selected_pair_weight!r} '
                '(to leave the release out, set selected_pairs = 0).'
            )
        if not isinstance(self.selected_pairs_spanning, bool):
            raise SynthesizerInputError(
                f'selected_pairs_spanning must be True or False, got '
                f'{self.selected_pairs_spanning!r}.'
            )
        if self.selected_pairs_score not in ('signal', 'tv'):
            raise SynthesizerInputError(
                "selected_pairs_score must be 'signal' or 'tv', got "
                f'{self.selected_pairs_score!r}.'
            )
        parents = self.calibration_parents
        if not (number(parents) and int(parents) == parents and parents >= 0):
            raise SynthesizerInputError(
                f'calibration_parents must be 0 (off) or an integer >= 1, got {parents!r}.'
            )
        for prefix in ('marginal', 'pair'):
            length = getattr(self, f'{prefix}_length_scale')
            weight = getattr(self, f'{prefix}_weight')
            if length is not None and not (number(length) and 0 < length <= 1):
                raise SynthesizerInputError(
                    f'{prefix}_length_scale must be None (off) or in (0, 1], got {length!r}.'
                )
            if not (number(weight) and 0 < weight < float('inf')):
                raise SynthesizerInputError(
                    f'{prefix}_weight must be a number > 0, got {weight!r} (to leave the term '
                    f'out, and not spend budget on it, use {prefix}_length_scale=None).'
                )

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

    def _shares(self):
        return {**self._default_budget_shares(), **(getattr(self, 'budget_shares', None) or {})}

    def _shared_terms(self, blocks):
        return shared_terms(blocks, self.marginal_length_scale, self.marginal_weight,
                            self.pair_length_scale, self.pair_weight, self.max_pair_features,
                            self.max_pair_width)

    def _steps(self, n, blocks=()):
        if self.steps == 'auto':
            cap = self.max_auto_steps
            per = self.auto_steps_columns
            if per and len(blocks) > per:  # wider tables: more pairs to fit, more steps
                cap = min(3 * cap, round(cap * len(blocks) / per))
            return min(cap, max(200, n))
        return int(self.steps)

    def _batch_size(self, n):
        if self.batch_size == 'auto':
            return min(1024, max(256, n))
        return int(self.batch_size)

    def _training(self, n, blocks):
        return kme.Training(self._steps(n, blocks), self._batch_size(n), self.learning_rate,
                            self.latent_dim, tuple(self.generator_dims), self.numeric_noise,
                            resolve_device(self.device),
                            int(getattr(self, 'reweight_generated_rows', None) or 0),
                            self.learning_rate_schedule, self._category_smoothing(),
                            self._category_links(blocks), self.max_link_parents,
                            self.link_signal_ratio, int(self.calibration_parents),
                            tuple(name for name, d in self._domains.items() if is_discrete(d)),
                            generated_rows(n))

    def _category_links(self, blocks):
        """The categorical columns whose heads may be linked: those at most ``max_link_width``
        (and ``max_pair_width``) wide and, widest left out first, at most ``max_pair_features``
        weights (public widths only)."""
        if not self.category_links:
            return ()
        width = min(self.max_pair_width, self.max_link_width)
        return linked_blocks(blocks, width, self.max_pair_features)

    def _category_smoothing(self):
        """'auto': 0.01 for a class-conditional fit (a target_column), else 0."""
        if self.category_smoothing == 'auto':
            return 0.01 if self.target_column is not None else 0.0
        return float(self.category_smoothing)

    def _fits_in_one_pass(self):
        return True  # every release is a sum over the rows (see engines.accumulate)

    def _fit_engine(self, x, blocks, target, labels, columns, ledger):
        self._check_parameters()  # class attributes such as selected_pairs may have been set
        rng = self._torch_generator()
        terms = (self._kernel_terms(blocks, rng, self._steps(len(x), blocks))
                 + self._shared_terms(blocks))
        selection = None
        if self.selected_pairs:
            count = None if self.selected_pairs == 'auto' else int(self.selected_pairs)
            selection = kme.PairSelection(count, float(self.selected_pair_weight),
                                          self.selected_pairs_spanning,
                                          self.selected_pairs_score)
        model = kme.fit(x, labels, blocks, target, columns, ledger, terms, self._shares(),
                        self._training(len(x), blocks), rng, self.verbose, selection)
        self._warn_if_unlinked(model, blocks)
        self._warn_if_collapsed(model.collapsed_classes, target)
        return model, self._report_notes(terms)

    def _warn_if_unlinked(self, model, blocks):
        """category_links=True that training could not apply: say why rather than stay silent
        ('auto' asks for links only where they apply)."""
        if self.category_links is not True or model.generator._linked:
            return
        noise = model.loss_values.attrs.get('pair_cell_noise')
        if noise is None:
            why = "there is no 'pairs' release to link by (pair_length_scale=None)"
        elif noise > kme.LINK_NOISE_LIMIT:
            why = (f"one cell of the 'pairs' release has a noise std of {noise:.3f}, above "
                   f'{kme.LINK_NOISE_LIMIT} (links would fit that noise); more rows or a larger '
                   'epsilon lower it')
        elif len(self._category_links(blocks)) < 2:
            why = (f'fewer than two categorical columns are at most {self.max_link_width} '
                   'buckets wide')
        else:
            why = ("no pair of those columns is associated above the noise of its cells in "
                   "the released 'pairs' tables")
        warnings.warn(f'category_links=True was not applied: {why}. The generator was trained '
                      'with independent categorical heads.', UserWarning, stacklevel=4)

    def _warn_if_collapsed(self, collapsed, target):
        if not collapsed:
            return
        if target is None:
            which = 'every row comes'
        else:
            names = [*self._domains[target.name].categories, None]  # None: the missing bucket
            which = (f"the rows of {target.name} = "
                     f"{', '.join(repr(names[c]) for c in collapsed)} come")
        warnings.warn(
            f'The trained generator collapsed: {which} out (nearly) identical (numeric columns '
            'spread over less than 1% of their bounds, one category per column). The noisy '
            'embeddings were too weak to train on. Refit with another random_state, or give '
            'the fit a stronger signal: more rows, a larger epsilon, or fewer released terms '
            "(e.g. pair_length_scale=None). In get_loss_values(), the '... above noise "
            "floor' columns estimate how far the fit is from the true embeddings.",
            CollapsedGeneratorWarning, stacklevel=4,
        )

    def __setstate__(self, state):
        super().__setstate__(state)
        # saved before the pairwise term existed
        self.__dict__.setdefault('pair_length_scale', None)
        self.__dict__.setdefault('pair_weight', 1.0)
        self.__dict__.setdefault('reweight_generated_rows', None)  # saved before the option
        # saved before these options: the generator they trained
        self.__dict__.setdefault('learning_rate_schedule', 'constant')
        self.__dict__.setdefault('category_smoothing', 0.0)
        self.__dict__.setdefault('category_links', False)
