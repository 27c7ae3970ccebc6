"""Kernel and training options of DP-KIP and of Balog et al.'s reweighting."""

import math
from dataclasses import dataclass

from sdv_dpkme.engines.kip import SUPPORT_INITS
from sdv_dpkme.synthesizers.options_kme import _number, check


def _auto(value):
    return isinstance(value, str) and value == 'auto'


def _in(value, low, high, name, low_open=True):
    ok = _number(value) and math.isfinite(value) and value <= high
    ok = ok and (low < value if low_open else low <= value)
    check(ok, f'{name} must be a number in {"(" if low_open else "["}{low}, {high}], got '
              f'{value!r}.')


@dataclass(frozen=True)
class DPKIPKernel:
    """What DP-KIP distils into: the support rows and the kernel ridge regression they feed.

    Fields:
        support_per_class: rows per class, an int (every declared category) or a dict
            ``{category: rows}`` (categories left out get none).
        ntk_depth: hidden ReLU layers of the infinite-width FC-NTK (1 as in the paper).
        regularization: lambda of the trace-scaled ridge (K_ss + lambda tr(K_ss)/m I).
    """

    support_per_class: object = 10
    ntk_depth: int = 1
    regularization: float = 1e-6

    def __post_init__(self):
        per_class = self.support_per_class
        values = list(per_class.values()) if isinstance(per_class, dict) else [per_class]
        check(values and all(not isinstance(v, bool) and isinstance(v, int) and v >= 0
                             for v in values) and sum(values) >= 1,
              'support_per_class must be an int >= 1 or a dict {category: rows >= 0} with at '
              f'least one row, got {per_class!r}.')
        check(not isinstance(self.ntk_depth, bool) and isinstance(self.ntk_depth, int)
              and self.ntk_depth >= 1, f'ntk_depth must be an int >= 1, got {self.ntk_depth!r}.')
        _in(self.regularization, 0, math.inf, 'regularization', low_open=False)


@dataclass(frozen=True)
class DPKIPTraining:
    """DP-KIP's DP-SGD on the support rows (its mechanism: each step is one release).

    Fields:
        steps: DP-SGD steps. 'auto': from the public n and epsilon.
        sampling_rate: q, the probability that a row is in a step's batch (Poisson sampling).
            'auto': q = 0.02 epsilon, so the noise multiplier stays near 1 at every epsilon,
            held to an expected batch of 64 to 4,000 rows (and q <= 0.5).
        clip_norm: C, the per-example gradient clip (Adam is scale-free: C matters only
            through the share of rows clipped).
        learning_rate: Adam's step size on the support rows.
        class_balance: b in [0, 1]: each row's clipped gradient is scaled by (n_min / n_c)^b for
            its class c, from one noisy release of the class counts (``kip_class_counts``), so a
            rare class is not drowned; 0: off (the paper's loss).
        support_init: 'centre' (0.5 +- 0.05 on every encoded value), 'uniform' (the paper's),
            or 'auto': 'centre' when the expected batch q * n is below 2,000 rows, else
            'uniform'. Public noise either way.
    The values 'auto' resolves to are in the privacy report and ``resolved_parameters()``.
    """

    steps: object = 'auto'
    sampling_rate: object = 'auto'
    clip_norm: float = 0.1
    learning_rate: float = 0.02
    class_balance: float = 0.5
    support_init: str = 'auto'

    def __post_init__(self):
        check(_auto(self.steps) or (not isinstance(self.steps, bool)
                                    and isinstance(self.steps, int) and self.steps >= 1),
              f"steps must be 'auto' or an int >= 1, got {self.steps!r}.")
        if not _auto(self.sampling_rate):
            check(_number(self.sampling_rate) and math.isfinite(self.sampling_rate)
                  and 0 < self.sampling_rate <= 1,
                  f"sampling_rate must be a number in (0, 1], got {self.sampling_rate!r}. Or "
                  "pass sampling_rate='auto'.")
        check(_auto(self.support_init) or self.support_init in SUPPORT_INITS,
              f"support_init must be 'auto' or one of {SUPPORT_INITS}, got "
              f'{self.support_init!r}.')
        _in(self.clip_norm, 0, math.inf, 'clip_norm')
        _in(self.learning_rate, 0, math.inf, 'learning_rate')
        _in(self.class_balance, 0, 1, 'class_balance', low_open=False)


def _positive(value, name, integer=False, low=0):
    ok = _number(value) and math.isfinite(value) and value > low
    if integer:
        ok = ok and int(value) == value
    check(ok, f'{name} must be {"an integer" if integer else "a number"} > {low}, got {value!r}.')


@dataclass(frozen=True)
class ReweightingKernel:
    """The one release of Balog et al.'s reweighting: the private mean embedding.

    Fields:
        length_scale: the kernel, a product over columns of Gaussian kernels on the [0, 1]
            encoding, each of length ``length_scale * sqrt(number of columns)``.
        max_basis_rows: with public_data, at most this many public rows (a public random
            subset) span the basis the embedding is released in (O(rows^3) to decompose).
        basis_tolerance: 'auto' keeps the basis directions whose eigenvalue share carries more
            signal than the release's noise; a float in [0, 1) keeps eigenvalues above that
            fraction of the largest.
        n_features: without public_data (Algorithm 2): the random Fourier features released.
    """

    length_scale: float = 0.5
    max_basis_rows: int = 3000
    basis_tolerance: object = 'auto'
    n_features: int = 4000

    def __post_init__(self):
        _positive(self.length_scale, 'length_scale')
        _positive(self.max_basis_rows, 'max_basis_rows', integer=True)
        tolerance = self.basis_tolerance
        check(_auto(tolerance) or (_number(tolerance) and 0 <= tolerance < 1),
              f"basis_tolerance must be 'auto' or a number in [0, 1), got {tolerance!r}.")
        _positive(self.n_features, 'n_features', integer=True, low=1)
        check(self.n_features % 2 == 0,
              f'n_features must be even ([cos, sin] pairs), got {self.n_features!r}.')


@dataclass(frozen=True)
class ReweightingTraining:
    """What follows the release (post-processing: no epsilon).

    Fields:
        l1_bound: None, or C >= 1: the signed weights are projected into the L1 ball of radius C
            (the paper's appendix).
        n_points, steps, learning_rate: Algorithm 2 only: the reduced set of points fitted to
            the released random features, and its optimisation.
    """

    l1_bound: float = None
    n_points: int = 1000
    steps: int = 300
    learning_rate: float = 0.05

    def __post_init__(self):
        if self.l1_bound is not None:
            _positive(self.l1_bound, 'l1_bound (None, or a number >= 1)')
            check(self.l1_bound >= 1, 'l1_bound must be >= 1 (weights of a distribution already '
                                      f'have L1 norm 1), got {self.l1_bound!r}.')
        _positive(self.n_points, 'n_points', integer=True)
        _positive(self.steps, 'steps', integer=True)
        _positive(self.learning_rate, 'learning_rate')
