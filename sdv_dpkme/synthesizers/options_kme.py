"""Kernel and training options of the kernel-mean-embedding synthesizers (DP-HP, DP-MERF).

The two methods share the extra releases ('marginals', 'pairs', 'selected_pairs') and the
generator, with the same defaults: they act on those releases or after them, never on the
method's own feature map (DP-MERF took DP-HP's, benchmarks/results/dpmerf_parity.md).
"""

import math
from dataclasses import dataclass

from sdv.errors import SynthesizerInputError

from sdv_dpkme.engines.generator import SCHEDULES
from sdv_dpkme.engines.link_structure import MIN_SIGNAL_RATIO


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integer(value, low):
    return _number(value) and int(value) == value and value >= low


def check(ok, message):
    if not ok:
        raise SynthesizerInputError(message)


def freeze(config, name, value):
    object.__setattr__(config, name, value)


@dataclass(frozen=True)
class _KMEKernel:
    """What the shared releases are (the method's own maps are in the subclasses).

    marginal_length_scale 0.01 is fine enough to see single values of an integer column over
    about 100 public values; selected_pairs 'auto' with selected_pairs_spanning releases a
    spanning tree of categorical pairs again (DP-MERF's minibatch mode releases none).

    Fields:
        budget_shares: ``{release group: share}`` of the privacy precision, over the default
            shares (normalised over the releases that exist). None: the defaults.
        marginal_length_scale: length (on the [0, 1] scale of the public bounds) of the extra
            per-numeric-column kernel released as 'marginals', so that column shapes finer than
            the method's own kernel are matched; None leaves the release out.
        pair_length_scale: length of the numeric kernels of 'pairs' (products of per-column
            kernels over every pair of columns), so that how columns move together within a
            class is matched; None leaves the release out.
        max_pair_features: cap on the size of the 'pairs' map per class (memory and training
            cost grow with it): the numeric features narrow to fit it, then a public subset of
            pairs, then the widest columns are left out (report notes say which and why).
        max_pair_width: columns with more features (categories + missing/out-of-domain buckets)
            are left out of 'pairs'.
        selected_pairs: 'auto' (categorical columns - 1), 0 (off) or a count: that many
            categorical pairs, the most associated in the 'pairs' release, are released again
            (group 'selected_pairs', which needs a budget share) and matched in training.
        selected_pairs_spanning: choose them as a spanning forest first (an MST-like tree).
        selected_pairs_score: what ranks the pairs: 'signal' (association energy) or 'tv'
            (distance from independence).
        plan: 'auto' decides before any spend, from public facts only (n, epsilon, delta, the
            layout, these options), which optional releases to make: a term whose expected
            noise norm is more than ``max_noise_ratio`` times the largest norm its signal can
            have is narrowed where it can be (fewer product-kernel redraws; a 'pairs' map with
            fewer frequencies, then fewer pairs; 'marginals' and the numeric part of 'one_way'
            at a coarser length than ``marginal_length_scale``, down to 0.1, i.e. fewer Fourier
            frequencies; DP-HP's sum kernel at a lower order), else dropped ('marginals',
            'one_way', 'pairs', 'selected_pairs'), the largest first, and a dropped term's
            budget share goes to the terms that remain. 'fixed': every term the options ask
            for. The privacy report lists the plan's decisions and numbers either way
            (docs/privacy_report.md).
        max_noise_ratio: the threshold of ``plan='auto'`` (a number > 0).
        one_way: release 'one_way', every column's own kernel (one-hot for a categorical
            column; for a numeric one the Fourier series of ``marginal_length_scale``, 0.01
            when that is None) pooled over the classes: one release of the one-way marginals,
            whose noise is about sqrt(C) below that of the class-conditional releases summed
            over C classes. The generator matches its class mixture to it (weight
            ``marginal_weight``), and calibration reads its tables. 'auto', with a
            target_column of >= 2 public categories: where the noise-aware plan finds the
            class-conditional 'marginals' noise-dominated (expected noise above their signal
            bound: small n or epsilon), instead of them; elsewhere beside them with >= 3
            categories and not at all with 2 (there the gain, sqrt(2), did not pay for its
            budget share on Adult: benchmarks/results/one_way.md). Under plan='fixed':
            beside them with >= 3 categories. True, False: on (beside 'marginals'), off.
            Its default
            ``budget_shares`` entry is 0.4 (MST, for one, spends a third of its budget on
            one-way marginals).
    """

    budget_shares: dict = None
    marginal_length_scale: float = 0.01
    pair_length_scale: float = 0.1
    max_pair_features: int = 1_000_000
    max_pair_width: int = 512
    selected_pairs: object = 'auto'
    selected_pairs_spanning: bool = True
    selected_pairs_score: str = 'signal'
    plan: str = 'auto'
    max_noise_ratio: float = 5.0
    one_way: object = 'auto'

    def __post_init__(self):
        shares = self.budget_shares
        # a zero share used to fail in the plan, after discovery had spent
        check(shares is None or (isinstance(shares, dict) and all(
            _number(v) and 0 < v < math.inf for v in shares.values())),
            f'budget_shares must be None or a dict {{release group: share > 0}}, got {shares!r}. '
            'To leave a release out, use its option instead: marginal_length_scale=None '
            "('marginals'), pair_length_scale=None ('pairs'), selected_pairs=0 "
            "('selected_pairs').")
        if shares is not None:
            freeze(self, 'budget_shares', dict(shares))
        for prefix in ('marginal', 'pair'):
            length = getattr(self, f'{prefix}_length_scale')
            check(length is None or (_number(length) and 0 < length <= 1),
                  f'{prefix}_length_scale must be None (off) or in (0, 1], got {length!r}.')
        check(_integer(self.max_pair_features, 1),
              f'max_pair_features must be an integer >= 1, got {self.max_pair_features!r}.')
        check(_integer(self.max_pair_width, 1),
              f'max_pair_width must be an integer >= 1, got {self.max_pair_width!r}.')
        count = self.selected_pairs
        check((isinstance(count, str) and count == 'auto') or _integer(count, 0),
              f"selected_pairs must be 'auto', 0 (off) or an integer >= 1, got {count!r}.")
        check(isinstance(self.selected_pairs_spanning, bool),
              'selected_pairs_spanning must be True or False, got '
              f'{self.selected_pairs_spanning!r}.')
        check(self.selected_pairs_score in ('signal', 'tv'),
              f"selected_pairs_score must be 'signal' or 'tv', got {self.selected_pairs_score!r}.")
        check(isinstance(self.plan, str) and self.plan in ('auto', 'fixed'),
              f"plan must be 'auto' or 'fixed', got {self.plan!r}.")
        ratio = self.max_noise_ratio
        check(_number(ratio) and 0 < ratio < math.inf,
              f'max_noise_ratio must be a number > 0, got {ratio!r}.')
        check(isinstance(self.one_way, bool) or self.one_way == 'auto',
              f"one_way must be 'auto', True or False, got {self.one_way!r}.")


@dataclass(frozen=True)
class _KMETraining:
    """How the generator is trained on the fixed releases (post-processing: no epsilon).

    The defaults (pair_weight 4, a cosine learning rate, 'auto' smoothing and links,
    calibration_parents 2, up to 800 auto steps grown beyond 14 columns) fit the releases more
    closely than the papers' generator, which underfit them (``DPMERFTraining`` shows the
    papers' settings).

    Fields:
        steps, batch_size: training steps and generated rows per step. 'auto' follows the public
            number n of private rows: steps = min(cap, max(200, n)) with cap ``max_auto_steps``
            (grown for tables wider than ``auto_steps_columns`` blocks, up to 3x), and
            batch_size = min(1024, max(256, n)). In DP-MERF's minibatch mode every step is also
            a release.
        learning_rate, latent_dim, generator_dims: the generator's Adam step, noise input size
            and hidden layers.
        numeric_noise: std of Gaussian noise added to numeric outputs (on the [0, 1] scale), in
            training and sampling, so that structure finer than the kernel resolves is smooth.
        marginal_weight, pair_weight, selected_pair_weight: weights of those terms in the loss.
        learning_rate_schedule: 'constant' or 'cosine' (decays to 0 over the steps, so the last
            steps settle on the releases instead of jittering with each batch).
        category_smoothing: share a in [0, 1) of each categorical value drawn uniformly over the
            public categories, in training and sampling, so that no category the noise pushed to
            0 in one class becomes impossible there. 'auto': 0.01 with a target_column, else 0.
        category_links: whether categorical heads see the categories drawn in up to
            ``max_link_parents`` earlier heads (at most ``max_link_width`` buckets wide), chosen
            on the released 'pairs' tables where the association is at least
            ``link_signal_ratio`` times the noise energy of the pair's cells. 'auto' links where
            that applies; True also warns when it does not; False: independent heads.
        reweight_generated_rows: None or R >= 2: after training, R rows per class are generated
            and weighted (Balog et al.'s reweighting) so their embeddings come closest to the
            released ones; ``sample`` draws from those rows.
        calibration_parents: > 0: after training, each categorical head's probabilities take
            offsets by its own categories and those drawn in up to this many earlier heads,
            fitted to the released pair tables beyond their noise. 0: off.
        calibration_rows: generated rows per calibration round (a Monte Carlo size: more rows,
            less sampling noise in the fitted offsets, more time). 'auto': the public n of
            private rows, clipped to [5,000, 50,000] (the release noise of a table cell falls
            as 1/n, the Monte Carlo error as 1/sqrt(rows): a small table's releases do not
            justify more rows).
        edge_snap: sampled numeric (and datetime) values within this distance of a bound on
            the column's encoded [0, 1] scale (a share of the range on a linear scale) are set
            to the bound (post-processing). The generator's sigmoid never reaches a bound, so
            a column whose rows sit on one (a money column's zeros) would otherwise have none
            there; the default is the finest length of the marginal kernels (0.01), below which
            the releases do not tell a value from the bound. 0: off.
        collapse_fallback: whether a generator that collapsed (every row of a class
            (nearly) the same) is trained again, from a fresh start, on the releases shrunk
            toward a public prior, each column uniform over its public domain (James-Stein:
            each release keeps as much of its distance from the prior as stands out of its
            public noise; ``engines.prior``). Post-processing; the privacy report says when
            it ran. False: keep the collapsed generator (and its warning). Not in DP-MERF's
            minibatch mode, whose per-step releases are accounted for one training.
        noise_weights: how each loss term is weighed by its release's public noise, (1 +
            e_min) / (1 + e_k): 'coordinate' (e_k the noise variance per coordinate against
            half the range a coordinate can take, so a wide map whose every coordinate is well
            measured keeps its weight), 'total' (e_k the release's total noise energy against
            the largest signal energy, which weighs wide maps such as 'pairs' far down), or
            None (every term at its own weight).
        max_auto_steps, auto_steps_columns: the cap of steps='auto' and the table width (in
            blocks) beyond which it grows in proportion (None: fixed).
        auto_steps_limit: the absolute cap of steps='auto', however wide the table (None:
            3 x ``max_auto_steps``); each step's cost is bounded apart from the width: the
            'pairs' map by ``max_pair_features``, the other maps grow linearly with the columns.
    """

    steps: object = 'auto'
    batch_size: object = 'auto'
    learning_rate: float = 1e-2
    latent_dim: int = 32
    generator_dims: tuple = (256, 256)
    numeric_noise: float = 0.0
    marginal_weight: float = 1.0
    pair_weight: float = 4.0
    selected_pair_weight: float = 1.0
    learning_rate_schedule: str = 'cosine'
    category_smoothing: object = 'auto'
    category_links: object = 'auto'
    max_link_width: int = 64
    max_link_parents: int = 2
    link_signal_ratio: float = MIN_SIGNAL_RATIO
    reweight_generated_rows: int = None
    calibration_parents: int = 2
    calibration_rows: object = 'auto'
    edge_snap: float = 0.01
    collapse_fallback: bool = True
    noise_weights: object = 'coordinate'
    max_auto_steps: int = 800
    auto_steps_columns: int = 14
    auto_steps_limit: int = None

    def __post_init__(self):
        freeze(self, 'generator_dims', tuple(self.generator_dims))
        batch, steps = self.batch_size, self.steps
        check(batch == 'auto' or _integer(batch, 2),
              f"batch_size must be 'auto' or an integer >= 2, got {batch!r}.")
        check(steps == 'auto' or _integer(steps, 1),
              f"steps must be 'auto' or an integer >= 1, got {steps!r}.")
        off = {'learning_rate': '', 'marginal_weight': 'marginal_length_scale=None',
               'pair_weight': 'pair_length_scale=None', 'selected_pair_weight': 'selected_pairs=0'}
        for name, how in off.items():
            value = getattr(self, name)
            check(_number(value) and 0 < value < math.inf,
                  f'{name} must be a number > 0, got {value!r}'
                  + (f' (to leave the term out, and not spend budget on it, set the kernel '
                     f'option {how}).' if how else '.'))
        check(_integer(self.latent_dim, 1),
              f'latent_dim must be an integer >= 1, got {self.latent_dim!r}.')
        check(all(_integer(d, 1) for d in self.generator_dims),
              f'generator_dims must be integers >= 1, got {self.generator_dims!r}.')
        check(_number(self.numeric_noise) and self.numeric_noise >= 0,
              f'numeric_noise must be a number >= 0, got {self.numeric_noise!r}.')
        schedule = self.learning_rate_schedule
        check(isinstance(schedule, str) and schedule in SCHEDULES,
              f'learning_rate_schedule must be one of {list(SCHEDULES)}, got {schedule!r}.')
        smoothing = self.category_smoothing
        check(smoothing == 'auto' or (_number(smoothing) and 0 <= smoothing < 1),
              f"category_smoothing must be 'auto' or a number in [0, 1), got {smoothing!r}.")
        links = self.category_links
        check(isinstance(links, bool) or (isinstance(links, str) and links == 'auto'),
              f"category_links must be 'auto', True or False, got {links!r}.")
        check(_integer(self.max_link_width, 1),
              f'max_link_width must be an integer >= 1, got {self.max_link_width!r}.')
        check(self.max_link_parents is None or _integer(self.max_link_parents, 1),
              f'max_link_parents must be None or an integer >= 1, got {self.max_link_parents!r}.')
        check(_number(self.link_signal_ratio) and self.link_signal_ratio >= 0,
              f'link_signal_ratio must be a number >= 0, got {self.link_signal_ratio!r}.')
        pool = self.reweight_generated_rows
        check(pool is None or _integer(pool, 2),
              f'reweight_generated_rows must be None (off) or an integer >= 2, got {pool!r}.')
        check(_integer(self.calibration_parents, 0),
              'calibration_parents must be 0 (off) or an integer >= 1, got '
              f'{self.calibration_parents!r}.')
        rows = self.calibration_rows
        check(rows == 'auto' or _integer(rows, 100),
              f"calibration_rows must be 'auto' or an integer >= 100, got {rows!r}.")
        check(_number(self.edge_snap) and 0 <= self.edge_snap < 0.5,
              f'edge_snap must be a number in [0, 0.5) (0: off), got {self.edge_snap!r}.')
        check(isinstance(self.collapse_fallback, bool),
              f'collapse_fallback must be True or False, got {self.collapse_fallback!r}.')
        check(self.noise_weights is None or (isinstance(self.noise_weights, str)
                                             and self.noise_weights in ('coordinate', 'total')),
              "noise_weights must be 'coordinate', 'total' or None, got "
              f'{self.noise_weights!r}.')
        check(_integer(self.max_auto_steps, 1),
              f'max_auto_steps must be an integer >= 1, got {self.max_auto_steps!r}.')
        check(self.auto_steps_columns is None or _integer(self.auto_steps_columns, 1),
              'auto_steps_columns must be None or an integer >= 1, got '
              f'{self.auto_steps_columns!r}.')
        check(self.auto_steps_limit is None or _integer(self.auto_steps_limit, 1),
              f'auto_steps_limit must be None or an integer >= 1, got {self.auto_steps_limit!r}.')


@dataclass(frozen=True)
class DPHPKernel(_KMEKernel):
    """DP-HP's releases: a Hermite sum kernel, redrawn product kernels, and the shared
    'marginals', 'pairs' and 'selected_pairs' (fields of ``_KMEKernel``).

    Fields (besides the shared ones):
        sum_order, sum_sigma2: Hermite order and squared length (on the [0, 1] scale of the
            public bounds) of the sum kernel.
        product_order, product_sigma2, product_columns, product_redraws, max_product_features:
            the product kernel over ``product_columns`` random columns, redrawn
            ``product_redraws`` times (each redraw its own release), each subset capped at
            ``max_product_features`` features.
    """

    sum_order: int = 100
    sum_sigma2: float = 0.05
    product_order: int = 5
    product_sigma2: float = 0.05
    product_columns: int = 5
    product_redraws: int = 20
    max_product_features: int = 8192

    def __post_init__(self):
        super().__post_init__()
        for name in ('sum_order', 'product_order', 'product_columns', 'product_redraws',
                     'max_product_features'):
            check(_integer(getattr(self, name), 1),
                  f'{name} must be an integer >= 1, got {getattr(self, name)!r}.')
        for name in ('sum_sigma2', 'product_sigma2'):
            value = getattr(self, name)
            check(_number(value) and 0 < value < math.inf,
                  f'{name} must be a number > 0, got {value!r}.')


@dataclass(frozen=True)
class DPHPTraining(_KMETraining):
    """DP-HP's generator training (fields of ``_KMETraining``, plus the product term's).

    Fields (besides the shared ones):
        product_weight: weight of the product-kernel term in the loss.
        product_schedule: when each product subset is matched. 'cycle': subset r on the steps
            where step % R == r, so every subset is matched until the end; 'blocks' (the
            paper's): subset r for a contiguous r-th share of the steps.
    """

    product_weight: float = 0.1
    product_schedule: str = 'cycle'

    def __post_init__(self):
        super().__post_init__()
        check(_number(self.product_weight) and 0 < self.product_weight < math.inf,
              f'product_weight must be a number > 0, got {self.product_weight!r}.')
        check(self.product_schedule in ('blocks', 'cycle'),
              f"product_schedule must be 'blocks' or 'cycle', got {self.product_schedule!r}.")


@dataclass(frozen=True)
class DPMERFKernel(_KMEKernel):
    """DP-MERF's releases: random Fourier features of a Gaussian kernel, and the shared
    'marginals', 'pairs' and 'selected_pairs' (fields of ``_KMEKernel``).

    Fields (besides the shared ones):
        n_features: number D of random Fourier features (even; D/2 frequencies).
        length_scale: public length scale of the Gaussian kernel over the numeric columns, on
            the [0, 1] scale of their public bounds (a hyperparameter, never a median heuristic).
        releases: 'single' (one release, the paper's main mode) or 'minibatch' (one subsampled
            release per training step of a secret batch of ``minibatch_size`` rows). Minibatch
            mode releases no selected pairs: 'auto' is off there, and a count is an error.
    """

    n_features: int = 1000
    length_scale: float = 0.3
    releases: str = 'single'
    minibatch_size: int = 2000

    def __post_init__(self):
        super().__post_init__()
        check(self.releases in ('single', 'minibatch'),
              f"releases must be 'single' or 'minibatch', got {self.releases!r}.")
        check(_integer(self.n_features, 2) and self.n_features % 2 == 0,
              f'n_features must be an even integer >= 2, got {self.n_features!r}.')
        check(_number(self.length_scale) and 0 < self.length_scale < math.inf,
              f'length_scale must be a number > 0, got {self.length_scale!r}.')
        check(_integer(self.minibatch_size, 1),
              f'minibatch_size must be an integer >= 1, got {self.minibatch_size!r}.')
        check(self.releases == 'single' or self.selected_pairs in (0, 'auto'),
              f"selected_pairs={self.selected_pairs!r} needs releases='single' (minibatch mode "
              "releases no selected pairs); set selected_pairs=0 or 'auto'.")


@dataclass(frozen=True)
class DPMERFTraining(_KMETraining):
    """DP-MERF's generator training (the fields of ``_KMETraining``).

    The papers' generator is ``DPMERFTraining(pair_weight=1, learning_rate_schedule='constant',
    category_smoothing=0, category_links=False, calibration_parents=0, edge_snap=0,
    collapse_fallback=False, max_auto_steps=500, auto_steps_columns=None)``. In minibatch
    mode every step is a release, so the steps also set how many.

    ``noise_weights`` defaults to 'total' here ('coordinate' in DP-HP): on Adult samples of
    500 and 2,500 rows the per-coordinate rule gave DP-MERF's 'pairs' term most of its weight
    back and lost quality in every paired fit (benchmarks/results/dpmerf_parity.md).
    """

    noise_weights: object = 'total'
