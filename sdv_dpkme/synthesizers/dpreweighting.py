"""Balog et al. (ICML 2018): a DP weighting of public rows, or of points found from a DP embedding.

Release plan: one Gaussian release of the private mean embedding, sensitivity 2/n (replace-one,
||phi|| <= 1), composed with domain discovery (if any) by the fit's one accountant.
  - with ``public_data`` (Algorithm 1): the embedding projected on an orthonormal basis of the span
    of the public rows' kernel functions; the weights of the public rows follow by
    post-processing;
  - without (Algorithm 2): random Fourier features, then a reduced set of weighted points.
The engine is ``sdv_dpkme.engines.reweighting``.
"""

import warnings

import pandas as pd
from sdv.errors import SynthesizerInputError

from sdv_dpkme.domain.unit_box import unit_box
from sdv_dpkme.engines import reweighting
from sdv_dpkme.synthesizers.base import BaseDPSynthesizer
from sdv_dpkme.synthesizers.sampling import outside_domain
from sdv_dpkme.synthesizers.options_kip import ReweightingKernel, ReweightingTraining


class DPReweightingSynthesizer(BaseDPSynthesizer):
    """Differentially private reweighting of public rows (Balog et al., Algorithms 1 and 2).

    Args: those of ``BaseDPSynthesizer`` (no ``device``: the fit runs on the CPU), and:
        public_data: a DataFrame (or ``{table: DataFrame}``) of rows that are public: an earlier
            published extract, a consented subset, open data from the same population. Same
            columns as the metadata, values inside the public domain. The fit releases the
            private table's kernel mean embedding in the span of these rows and turns it into
            one weight per row. None: Algorithm 2 (no public rows).
        target_column: optional categorical column; conditions on it alone are sampled
            directly from the rows of that class.
        kernel: a ``ReweightingKernel`` (the kernel and the release), training: a
            ``ReweightingTraining`` (the weights' post-processing and Algorithm 2's points);
            both are documented in ``sdv_dpkme.synthesizers.options_kip``.

    Outputs: ``sample(n)`` resamples the public rows (or Algorithm 2's points) with replacement,
    with the probability vector whose embedding is closest to the released one (weights >= 0
    summing to 1). ``get_weights()`` gives the signed weights (Algorithm 1's w = A^T beta):
    sum_m w_m f(z_m) estimates the private mean of f. ``weighted_public_data()`` gives the rows
    with both columns.
    """

    _kernel_class = ReweightingKernel
    _training_class = ReweightingTraining

    def __init__(self, metadata, epsilon, delta=1e-5, public_data=None, domain=None,
                 target_column=None, domain_budget_share=0.1, kernel=None, training=None,
                 random_state=None, verbose=True, locales=('en_US',)):
        self._init_model(locals())

    # ------------------------------------------------------------------------ checks
    def _check_parameters(self):
        super()._check_parameters()
        if self.public_data is not None:
            self._public_table(check_domains=False)

    def _public_table(self, check_domains=True):
        """``public_data`` as a frame of the metadata's columns, checked against the domains."""
        public = self.public_data
        if isinstance(public, dict):
            if self._table_name not in public:
                raise SynthesizerInputError(
                    f"public_data is a dict without the table '{self._table_name}'."
                )
            public = public[self._table_name]
        if not isinstance(public, pd.DataFrame):
            raise SynthesizerInputError(
                f'public_data must be a pandas DataFrame of public rows, got '
                f'{type(public).__name__}.'
            )
        columns = list(self._original_metadata._convert_to_single_table().columns)
        extra = [c for c in public.columns if c not in columns]
        missing = [c for c in columns if c not in public.columns]
        if extra or missing:
            raise SynthesizerInputError(
                'public_data must have the columns of the metadata: '
                + (f'unknown {extra}' if extra else '')
                + ('; ' if extra and missing else '')
                + (f'missing {missing}' if missing else '') + '.'
            )
        if len(public) == 0:
            raise SynthesizerInputError('public_data has no rows.')
        if check_domains:
            outside = []
            for column, domain in self._domains.items():
                if not domain.discovered:
                    _check_public_column(public[column], domain)
                    continue
                try:  # a discovered domain is known only after its release: warn, never stop
                    _check_public_column(public[column], domain)
                except SynthesizerInputError:
                    outside.append(column)
            if outside:
                warnings.warn(
                    f'public_data has values of {outside} outside their discovered domains (or '
                    'missing where discovery found none). Those rows are kept and sampled as '
                    'they are; the kernel sees them clipped or in the out-of-domain bucket. '
                    'Declare these domains to check public_data against them.'
                )
        return public[columns]

    def _check_method_before_release(self, n):
        """public_data against the declared domains (public facts), before any release."""
        if self.public_data is not None:
            public = self._public_table(check_domains=False)
            declared, _ = self._resolve_domains()
            for column, domain in declared.items():
                _check_public_column(public[column], domain)

    # --------------------------------------------------------------------------- fit
    def _kernel(self, blocks, target, n_columns):
        kernel_blocks = blocks + ([target] if target is not None else [])
        return reweighting.GaussianProductKernel.for_blocks(
            kernel_blocks, n_columns, float(self.kernel.length_scale))

    def _fit_engine(self, x, blocks, target, labels, columns, ledger):
        self._check_parameters()  # attributes may have changed since construction
        kernel = self._kernel(blocks, target, len(columns))
        rng = self._torch_generator()
        if self.public_data is None:
            training = self.training
            settings = reweighting.Algorithm2Settings(
                int(self.kernel.n_features), int(training.n_points), int(training.steps),
                float(training.learning_rate))
            kernel_blocks = blocks + ([target] if target is not None else [])
            z, signed, probabilities, history, notes = reweighting.fit_synthetic(
                x, kernel_blocks, len(columns), kernel, ledger, settings, rng, self.verbose)
            loss = pd.DataFrame({'Step': range(len(history)), 'Loss': history})
            model = reweighting.ReweightedModel(z, columns, signed.numpy(), probabilities.numpy(),
                                                target, loss, kernel)
            return model, notes
        public = self._public_table()
        processed = self._data_processor.transform(public)
        z = unit_box(processed[columns])
        l1_bound = self.training.l1_bound
        settings = reweighting.Algorithm1Settings(
            int(self.kernel.max_basis_rows), self.kernel.basis_tolerance,
            None if l1_bound is None else float(l1_bound))
        signed, probabilities, _, notes = reweighting.fit_public(
            x, z, kernel, ledger, settings, rng, self.verbose)
        notes.append(f'public_data: {len(public)} rows, taken as public (never private rows).')
        model = reweighting.ReweightedModel(z, columns, signed.numpy(), probabilities.numpy(),
                                            target, kernel=kernel)
        return model, notes

    def _public_inputs(self):
        inputs = super()._public_inputs()
        if self.public_data is not None:
            inputs.append('public_data (the rows that are reweighted)')
        return inputs

    # ------------------------------------------------------------------------ outputs
    def _require_fit(self):
        if not self._fitted or self._model is None:
            raise SynthesizerInputError('Fit the synthesizer before asking for its weights.')

    def get_weights(self):
        """Signed weights, one per public row (index of ``public_data``) or Algorithm 2 point:
        sum_m w_m f(z_m) estimates the private mean of f (divide by sum_m w_m for a mean whose
        weights add up to 1)."""
        self._require_fit()
        index = self._public_table().index if self.public_data is not None else None
        return pd.Series(self._model.weights, index=index, name='weight')

    def weighted_public_data(self):
        """The public rows (Algorithm 2: the fitted points, decoded) with two columns: 'weight'
        (signed, see ``get_weights``) and 'sampling_probability' (>= 0, sums to 1; what
        ``sample`` draws with)."""
        self._require_fit()
        if self.public_data is not None:
            rows = self._public_table().copy()
        else:
            rows = self._data_processor.reverse_transform(
                pd.DataFrame(self._model.rows, columns=self._model.columns))
        weight, probability = _free_name(rows, 'weight'), _free_name(rows, 'sampling_probability')
        rows[weight] = self._model.weights
        rows[probability] = self._model.probabilities
        return rows


def _free_name(frame, name):
    while name in frame.columns:
        name = f'_{name}'
    return name


def _check_public_column(values, domain):
    """Public rows must lie in the public domain (they are returned as they are)."""
    column = domain.name
    missing = values.isna()
    if missing.any() and not domain.nullable:
        raise SynthesizerInputError(
            f"public_data has missing values in '{column}', which is not nullable in its "
            f"public domain (declare it in the domain spec's nullable_columns, or drop those rows)."
        )
    bad, where = outside_domain(values[~missing], domain)
    if bad is None:
        return  # datetimes: parsed by their transformer, out-of-range dates clipped there
    if len(bad):
        value = bad.iloc[0]
        raise SynthesizerInputError(
            f"public_data has {len(bad)} value(s) of '{column}' outside {where}, e.g. "
            f'{getattr(value, "item", lambda: value)()!r}; public rows are sampled as they are, '
            'so they must lie inside the declared domain. Fix or drop them, or widen the domain.'
        )


__all__ = ['DPReweightingSynthesizer']
