"""DP-KIP: a table distilled into a few labelled rows (Vinaroz & Park, TMLR 2024).

Release plan: ``steps`` DP-SGD steps on the support rows, one
Poisson-subsampled Gaussian group (per-example clip C, replace-one sensitivity 2C of each
step's sum), composed with domain discovery (if any) by the fit's one accountant. The support is
initialised from public noise and never sees a private row except through the noisy gradients.
The engine is ``sdv_dpkme.engines.kip``.
"""

import math
import warnings

import numpy as np
from sdv.errors import SynthesizerInputError

from sdv_dpkme.engines import kip
from sdv_dpkme.engines.generator import resolve_device
from sdv_dpkme.features.ntk import FCNTK
from sdv_dpkme.synthesizers.base import BaseDPSynthesizer


def _is_auto(value):
    return isinstance(value, str) and value == 'auto'


def _format(settings):
    return ', '.join(f'{k}={v:.6g}' if isinstance(v, float) else f'{k}={v}'
                     for k, v in settings.items())


class DistilledDataWarning(UserWarning):
    """``sample`` was asked for more rows than the distilled set holds: rows repeat."""


class DPKIPSynthesizer(BaseDPSynthesizer):
    """Differentially private dataset distillation by kernel inducing points (DP-KIP).

    The fit learns ``support_per_class`` rows per class of ``target_column`` so that kernel
    ridge regression on them (infinite-width FC-NTK) predicts the private labels; the result is
    a small labelled training set, not a full synthetic table.

    Model args (besides those of the base class):
        target_column: required; the categorical label the support rows carry.
        support_per_class: rows per class, an int (every declared category) or a dict
            ``{category: rows}`` (categories left out get none).
        steps: DP-SGD steps (each one release). 'auto' (default): 100.
        sampling_rate: q, the probability that a row is in a step's batch (Poisson sampling);
            the expected batch is q * n rows. 'auto' (default): q = 0.02 epsilon, so that the
            noise multiplier stays near 1 at every epsilon, held to an expected batch of 64 to
            4,000 rows (and q <= 0.5). It uses only the public n and epsilon, never the rows.
        clip_norm: C, the per-example gradient clip. Adam is scale-free, so C matters only
            through the share of rows clipped: most are at the default.
        support_init: 'centre': the support starts at 0.5 +- 0.05 on every encoded value,
            each numeric value and category undecided, so the noisy gradients need only tip
            it; 'uniform': anywhere in the unit box (the paper's). Public noise either way.
            'auto' (default): 'centre' when the expected batch q * n is below 2,000 rows
            (small tables, where each step's gradient is mostly noise), else 'uniform'.
        learning_rate: Adam's step size on the support rows.
        regularization: lambda of the trace-scaled ridge (K_ss + lambda tr(K_ss)/m I).
        ntk_depth: hidden ReLU layers of the FC-NTK (1 as in the paper).
        class_balance: b in [0, 1]. With b > 0, each row's clipped gradient is scaled by
            w_c = (n_min / n_c)^b (at most 1) for its class c, so a rare class is not drowned
            by a common one (1: balanced; 0: off, the paper's loss). The class counts come from
            one Gaussian release that spends 2% of the budget's precision (in the privacy
            report as ``kip_class_counts``); the scaled gradients keep norm <= C, so the DP-SGD
            sensitivity is unchanged.
        The defaults were chosen on Adult (4,000 and 39,073 rows, epsilon 0.3 to 10;
        benchmarks/results/dpkip_tuning.md). The values 'auto' resolves to are in the privacy
        report (the notes and the details of the ``kip_gradients`` release) and in
        ``resolved_parameters()``.

    Sampling: ``get_distilled_data()`` returns the distilled rows, each once, in class order.
    ``sample(num_rows)`` returns them in a random order; asking for more rows than were
    distilled repeats them (every row once before any row twice) with a ``DistilledDataWarning``,
    because DP-KIP has no generator to draw new rows from. Classes are balanced as set by
    ``support_per_class``, not in the private table's proportions.
    """

    def __init__(self, metadata, epsilon, delta=1e-5, known_min_max_values=None,
                 known_categories=None, nullable_columns=None, metadata_is_public=False,
                 target_column=None, support_per_class=10, steps='auto', sampling_rate='auto',
                 clip_norm=0.1, learning_rate=0.02, regularization=1e-6, ntk_depth=1,
                 class_balance=0.5, support_init='auto', locales=('en_US',), random_state=None,
                 device='auto', verbose=True,
                 noise_seed=None, domain=None, domain_budget_share=0.1):
        if target_column is None:
            raise SynthesizerInputError(
                'DP-KIP distils a labelled table: pass target_column=<a categorical column>.'
            )
        self._init_model(locals())

    def _check_parameters(self):
        def number(value, low, high, name, low_open=True):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            ok = ok and (low < value if low_open else low <= value) and value <= high
            ok = ok and math.isfinite(value)
            if not ok:
                raise SynthesizerInputError(
                    f'{name} must be a number in {"(" if low_open else "["}{low}, {high}], '
                    f'got {value!r}.'
                )

        if not _is_auto(self.steps) and (isinstance(self.steps, bool)
                                         or not isinstance(self.steps, int) or self.steps < 1):
            raise SynthesizerInputError(f"steps must be 'auto' or an int >= 1, got {self.steps!r}.")
        if not _is_auto(self.sampling_rate):
            try:
                number(self.sampling_rate, 0, 1, 'sampling_rate')
            except SynthesizerInputError as err:
                raise SynthesizerInputError(f"{err} Or pass sampling_rate='auto'.") from None
        if not _is_auto(self.support_init) and self.support_init not in kip.SUPPORT_INITS:
            raise SynthesizerInputError(
                f"support_init must be 'auto' or one of {kip.SUPPORT_INITS}, got "
                f'{self.support_init!r}.'
            )
        number(self.clip_norm, 0, math.inf, 'clip_norm')
        number(self.learning_rate, 0, math.inf, 'learning_rate')
        number(self.regularization, 0, math.inf, 'regularization', low_open=False)
        number(self.class_balance, 0, 1, 'class_balance', low_open=False)
        if isinstance(self.ntk_depth, bool) or not isinstance(self.ntk_depth, int) \
                or self.ntk_depth < 1:
            raise SynthesizerInputError(f'ntk_depth must be an int >= 1, got {self.ntk_depth!r}.')
        per_class = self.support_per_class
        values = per_class.values() if isinstance(per_class, dict) else [per_class]
        if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 0
                             for v in values) or sum(values) < 1:
            raise SynthesizerInputError(
                'support_per_class must be an int >= 1 or a dict {category: rows >= 0} with at '
                f'least one row, got {per_class!r}.'
            )
        self._support_counts()

    def _support_counts(self):
        """Rows per bucket of the target's one-hot block (categories, [missing], out-of-domain)."""
        domain = self._domains.get(self.target_column)
        if domain is None:  # discovered at fit: checked then
            return None
        categories = list(domain.categories)
        width = len(categories) + (1 if domain.nullable else 0) + 1
        per_class = self.support_per_class
        if not isinstance(per_class, dict):
            return [per_class] * len(categories) + [0] * (width - len(categories))
        unknown = set(per_class) - set(categories)
        if unknown:
            raise SynthesizerInputError(
                f'support_per_class names {sorted(map(str, unknown))}, which are not declared '
                f"categories of '{self.target_column}' ({categories})."
            )
        return [per_class.get(c, 0) for c in categories] + [0] * (width - len(categories))

    def _fit_engine(self, x, blocks, target, labels, columns, ledger):
        self._check_parameters()  # attributes may have changed since construction
        counts = self._support_counts()
        if counts is None or len(counts) != target.width:
            raise SynthesizerInputError(
                f"target_column '{self.target_column}' has {target.width} buckets after "
                f'encoding, but the support plan has {len(counts)}.'
            )
        kernel = FCNTK(depth=self.ntk_depth)
        resolved = self._resolve(len(x))
        rate = resolved['sampling_rate']
        settings = kip.KIPSettings(resolved['steps'], rate, float(self.clip_norm),
                                   float(self.learning_rate), float(self.regularization),
                                   resolve_device(self.device),
                                   class_balance=float(self.class_balance),
                                   support_init=resolved['support_init'])
        features = [c for block in blocks for c in block.columns]
        support, support_labels, history = kip.fit(
            np.asarray(x)[:, features], labels, target.width, counts, kernel, settings, ledger,
            self._torch_generator(), verbose=self.verbose, details={'settings': dict(resolved)},
        )
        rows = kip.encoded_rows(support, support_labels, blocks, target, len(columns))
        notes = [f"Support initialised from public noise ('{settings.support_init}') with the "
                 f'model RNG; {len(support_labels)} rows, labels fixed; {settings.steps} DP-SGD '
                 f'steps, each row in a batch with probability q = {rate:.6g} (n = {len(x)} rows).',
                 'Settings used (from the arguments; \'auto\' resolved from the public n and '
                 f'epsilon only): {_format(resolved)}.']
        if 'class_weights' in history.attrs:
            # the weights themselves are a DP output (kept with the model's history), not
            # report text: the report's notes describe the plan only
            notes.append(f'Class-balance weights (b = {settings.class_balance:g}): each row\'s '
                         'clipped gradient is scaled by (n_min / n_c)^b <= 1 for its label '
                         'bucket, from the noisy class counts (kip_class_counts).')
        return kip.KIPModel(rows, columns, support_labels, history), notes

    def _resolve(self, n):
        """The DP-SGD settings of a fit on n rows: the arguments, with 'auto' resolved from the
        public n and epsilon (never from the rows)."""
        epsilon = float(self.epsilon)
        steps = kip.auto_steps(n, epsilon) if _is_auto(self.steps) else int(self.steps)
        rate = (kip.auto_sampling_rate(n, epsilon) if _is_auto(self.sampling_rate)
                else float(self.sampling_rate))
        self._resolved_parameters = {
            'steps': steps, 'sampling_rate': rate, 'clip_norm': float(self.clip_norm),
            'learning_rate': float(self.learning_rate),
            'regularization': float(self.regularization),
            'support_init': (kip.auto_support_init(n, rate) if _is_auto(self.support_init)
                             else self.support_init),
            'class_balance': float(self.class_balance),
        }
        return dict(self._resolved_parameters)

    def resolved_parameters(self):
        """The DP-SGD settings the last fit used ('auto' resolved), as in its privacy report."""
        resolved = getattr(self, '_resolved_parameters', None)
        if not self._fitted or resolved is None:
            raise SynthesizerInputError('Fit the synthesizer before asking for its resolved '
                                        'parameters; get_parameters() gives the arguments.')
        return dict(resolved)

    # ---------------------------------------------------------------------- outputs
    def get_distilled_data(self):
        """The distilled rows (each once, in class order) in the table's columns, with labels."""
        if not self._fitted or self._model is None:
            raise SynthesizerInputError('Fit the synthesizer before asking for its distilled data.')
        return self._data_processor.reverse_transform(self._model.support())

    def _warn_before_sampling(self, num_rows):
        m = len(self._model.rows)
        if num_rows > m:
            warnings.warn(
                f'DP-KIP distilled the table into {m} rows; sampling {num_rows} repeats each of '
                f'them about {num_rows / m:.1f} times (it has no generator to draw new rows). '
                'get_distilled_data() returns the distilled rows once each.',
                DistilledDataWarning,
            )

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault('class_balance', 0.0)  # saved before it existed: fitted without
        self.__dict__.setdefault('support_init', 'uniform')  # likewise
