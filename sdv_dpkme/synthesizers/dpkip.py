"""DP-KIP: a table distilled into a few labelled rows (Vinaroz & Park, TMLR 2024).

Release plan: ``steps`` DP-SGD steps on the support rows, one
Poisson-subsampled Gaussian group (per-example clip C, replace-one sensitivity 2C of each
step's sum), composed with domain discovery (if any) by the fit's one accountant. The support is
initialised from public noise and never sees a private row except through the noisy gradients.
The engine is ``sdv_dpkme.engines.kip``.
"""

import warnings

import numpy as np
from sdv.errors import SynthesizerInputError

from sdv_dpkme.engines import kip
from sdv_dpkme.engines.generator import resolve_device
from sdv_dpkme.features.ntk import FCNTK
from sdv_dpkme.synthesizers.base import BaseDPSynthesizer
from sdv_dpkme.synthesizers.options_kip import DPKIPKernel, DPKIPTraining


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

    Args: those of ``BaseDPSynthesizer``; ``target_column`` is required (the categorical label
    the support rows carry). ``kernel`` is a ``DPKIPKernel`` (the support rows and the kernel
    ridge regression), ``training`` a ``DPKIPTraining`` (the DP-SGD settings, part of the
    mechanism); both are documented in ``sdv_dpkme.synthesizers.options_kip``. The values
    'auto' resolves to are in the privacy report and in ``resolved_parameters()``.

    Sampling: ``get_distilled_data()`` returns the distilled rows, each once, in class order.
    ``sample(num_rows)`` returns them in a random order; asking for more rows than were
    distilled repeats them (every row once before any row twice) with a ``DistilledDataWarning``,
    because DP-KIP has no generator to draw new rows from. Classes are balanced as set by
    ``support_per_class``, not in the private table's proportions.
    """

    _kernel_class = DPKIPKernel
    _training_class = DPKIPTraining

    def __init__(self, metadata, epsilon, delta=1e-5, domain=None, target_column=None,
                 domain_budget_share=0.1, kernel=None, training=None, random_state=None,
                 device='auto', verbose=True, locales=('en_US',)):
        if target_column is None:
            raise SynthesizerInputError(
                'DP-KIP distils a labelled table: pass target_column=<a categorical column>.'
            )
        self._init_model(locals())

    def _check_parameters(self):
        super()._check_parameters()
        self._support_counts()  # the support plan against the declared target categories

    def _support_counts(self):
        """Rows per bucket of the target's one-hot block (categories, [missing], out-of-domain).

        A declared target is checked before anything is spent. A discovered one is known only
        after its release: classes of ``support_per_class`` that discovery did not release get
        no rows (a warning says so), and if no released class is left with rows, the released
        classes (or, when discovery released none, the missing bucket) get the plan's rows, so
        the fit still finishes."""
        domain = self._domains.get(self.target_column)
        if domain is None:  # discovered at fit: checked then
            return None
        categories = list(domain.categories)
        width = len(categories) + (1 if domain.nullable else 0) + 1
        per_class = self.kernel.support_per_class
        if not isinstance(per_class, dict):
            counts, fallback = [per_class] * len(categories), per_class
        else:
            unknown = set(per_class) - set(categories)
            if unknown and not domain.discovered:
                raise SynthesizerInputError(
                    f'support_per_class names {sorted(map(str, unknown))}, which are not declared '
                    f"categories of '{self.target_column}' ({categories})."
                )
            if unknown:
                warnings.warn(
                    f'support_per_class names {sorted(map(str, unknown))}, which domain discovery '
                    f"did not release as categories of '{self.target_column}'; they get no "
                    'support rows. Declare the target\'s categories to plan its support.')
            counts = [per_class.get(c, 0) for c in categories]
            fallback = max(per_class.values())
        counts += [0] * (width - len(categories))
        if domain.discovered and not any(counts):
            for i in range(max(len(categories), 1)):  # the missing bucket when none is released
                counts[i] = fallback
        return counts

    def _fit_engine(self, x, blocks, target, labels, columns, ledger):
        self._check_parameters()  # attributes may have changed since construction
        counts = self._support_counts()
        if counts is None or len(counts) != target.width:
            raise SynthesizerInputError(
                f"target_column '{self.target_column}' has {target.width} buckets after "
                f'encoding, but the support plan has {len(counts)}.'
            )
        kernel = FCNTK(depth=self.kernel.ntk_depth)
        resolved = self._resolve(len(x))
        rate = resolved['sampling_rate']
        settings = kip.KIPSettings(resolved['steps'], rate, resolved['clip_norm'],
                                   resolved['learning_rate'], resolved['regularization'],
                                   resolve_device(self.device),
                                   class_balance=resolved['class_balance'],
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
        epsilon, training = float(self.epsilon), self.training
        steps = kip.auto_steps(n, epsilon) if _is_auto(training.steps) else int(training.steps)
        rate = (kip.auto_sampling_rate(n, epsilon) if _is_auto(training.sampling_rate)
                else float(training.sampling_rate))
        self._resolved_parameters = {
            'steps': steps, 'sampling_rate': rate, 'clip_norm': float(training.clip_norm),
            'learning_rate': float(training.learning_rate),
            'regularization': float(self.kernel.regularization),
            'support_init': (kip.auto_support_init(n, rate) if _is_auto(training.support_init)
                             else training.support_init),
            'class_balance': float(training.class_balance),
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
