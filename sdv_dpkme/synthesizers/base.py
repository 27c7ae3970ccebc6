"""The SDV-facing base class of every DP synthesizer; it knows no method.

It owns everything between SDV and the engines: the public domain, the DP-safe transformer
configuration, the refusal of leaky transformers and constraints, the ledger of the fit (one
accountant and noise source), the privacy report, ``get_info``, save/load and version stamps.
A method's class only implements ``_fit_engine`` (encoded rows in the unit box -> a model with
``sample`` and ``loss_values``), handing the work to an engine under ``sdv_dpkme.engines``.
"""

import contextlib
import copy
import inspect
import math
import os
import warnings

import numpy as np
import pandas as pd
import torch
from rdt.transformers.id import RegexGenerator
from rdt.transformers.pii.anonymizer import AnonymizedFaker
from sdv.cag import FixedIncrements, Inequality, OneHotEncoding, Range
from sdv.errors import SynthesizerInputError
from sdv.metadata import Metadata
from sdv.single_table.base import BaseSingleTableSynthesizer

from sdv_dpkme._version import __version__
from sdv_dpkme.domain import (
    DP_TRANSFORMERS,
    ColumnDomain,
    DomainError,
    discover,
    merge_declarations,
    missing_domain_message,
    resolve_domains,
    transformer_for,
)
from sdv_dpkme.domain.decoding import DPHyperTransformer
from sdv_dpkme.domain import integers
from sdv_dpkme.domain.discovery import check_usable, warn_discovered
from sdv_dpkme.domain.spec import default_scale, is_discrete
from sdv_dpkme.domain.transformers import (
    FIXED_SEED,
    DPCategoricalTransformer,
    DPDatetimeTransformer,
    DPDiscreteTransformer,
    DPNumericalTransformer,
)
from sdv_dpkme.engines.errors import EngineInputError
from sdv_dpkme.features import Block
from sdv_dpkme.privacy import Ledger, validate_budget
from sdv_dpkme.privacy.diagnostics import sanitised_errors
from sdv_dpkme.scale.sources import is_dask_frame, is_spark_frame
from sdv_dpkme.synthesizers.public_state import (
    column_dtypes,
    fit_constraints_publicly,
    generated_column,
    public_frame,
    public_metadata,
    safe_generator,
    set_data_length,
    warn_undeclared_types,
)
from sdv_dpkme.synthesizers.entry_points import SanitisedEntryPoints
from sdv_dpkme.synthesizers.options import option_values, resolve_option, spec_flag
from sdv_dpkme.synthesizers.rows import FrameRows

#: the layout of a saved synthesizer; a file of another format is refused (refit instead)
FORMAT_VERSION = 1

# Constraints whose fit keeps no row-level facts; they are enforced by reject sampling only, so no
# derived column is ever modelled without a public domain.
SAFE_CONSTRAINTS = (Inequality, Range, FixedIncrements, OneHotEncoding)


class MissingDomainError(SynthesizerInputError, DomainError):
    """Modelled columns lack a public domain and discovery is off (``domain_budget_share=0``)."""


class BaseDPSynthesizer(SanitisedEntryPoints, BaseSingleTableSynthesizer):
    """Differentially private single-table synthesizer (abstract, method-neutral).

    Args:
        metadata: ``sdv.metadata.Metadata`` with one table. Its data-derived keys (``range_min``,
            ``range_max``, ``range_values``, ...) are dropped unless ``metadata_is_public``.
        epsilon, delta: the privacy budget of the whole fit. ``epsilon=float('inf')`` is a
            non-private reference (no noise), reported as such.
        domain: the public domain spec of the table, a dict or a JSON file path (our format or
            SDV DayZ's parameter format; see docs/domains.md). Its top-level shorthand keys:
            ``known_min_max_values`` (``{column: (low, high)}`` for numerical and datetime
            columns), ``known_categories`` (``{column: [categories]}``), ``nullable_columns``
            (columns that may hold missing values; their missingness is modelled under DP),
            ``integer_columns``, and ``metadata_is_public`` (True: take missing domains from the
            metadata's ranges, only if they were written from public knowledge, never detected
            from the data; otherwise the metadata's data-derived keys are dropped).
        domain_budget_share: share of the privacy budget (of the precision 1/sigma^2, i.e. of
            mu^2 in Gaussian-DP terms) spent at fit to discover, in one DP release, the domain of
            every modelled column that has none declared; plus 10% of delta when a categorical
            column is discovered. Unused when everything is declared. 0 turns discovery off:
            an undeclared column is then an error. Numerical columns whose integer-ness no
            public fact states get a separate small vote (3% of the precision, see
            ``sdv_dpkme.domain.integers``), also off at 0 (they then stay floats).
        target_column: optional categorical column (the label of the methods that use one).
        kernel, training: the method's options (``sdv_dpkme.synthesizers.options``): what its
            releases are, and everything after them. None: the class's defaults.
        random_state: seeds model initialisation, subsets and training (never the privacy noise).
        device: 'auto' (CUDA when available), 'cpu' or 'cuda'.
        verbose: progress bars.
        locales: Faker locales of generated (id/PII) columns.
    """

    #: the option classes of ``kernel`` and ``training`` (set by each method)
    _kernel_class = None
    _training_class = None

    def __init__(self, metadata, epsilon, delta=1e-5, domain=None, target_column=None,
                 domain_budget_share=0.1, kernel=None, training=None, random_state=None,
                 device='auto', verbose=True, locales=('en_US',)):
        try:
            validate_budget(epsilon, delta, calibrated=True)
        except ValueError as err:
            raise SynthesizerInputError(str(err)) from None
        if not isinstance(metadata, Metadata):
            raise SynthesizerInputError(
                f'metadata must be an sdv.metadata.Metadata, got {type(metadata).__name__}.'
            )
        self.domain = copy.deepcopy(domain)
        metadata_is_public = self._metadata_is_public()
        public = public_metadata(metadata, metadata_is_public, domain)
        super().__init__(
            Metadata.load_from_dict(public),
            enforce_min_max_values=False,
            enforce_rounding=False,
            locales=list(locales),
        )
        self.epsilon = epsilon
        self.delta = delta
        self.target_column = target_column
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.domain_budget_share = domain_budget_share
        if self._kernel_class is not None:
            self.kernel = resolve_option(kernel, self._kernel_class, 'kernel')
            self.training = resolve_option(training, self._training_class, 'training')
        self._sdv_dpkme_format = FORMAT_VERSION
        self._privacy_report = None
        self._ledger = None
        self._discovery = None
        self._integer_vote = None
        self._user_transformers = {}
        self._fitted_sdv_dpkme_version = None
        self._domains, self._undeclared = self._resolve_domains()

    def _init_model(self, arguments):
        """Subclass constructors call this with ``locals()``: the base arguments (with the
        ``kernel`` and ``training`` options) go to the base class, the rest become attributes
        (SDV's ``get_parameters`` reads them back by name); then ``_check_parameters`` validates
        what the option objects cannot check alone."""
        names = inspect.signature(BaseDPSynthesizer.__init__).parameters
        BaseDPSynthesizer.__init__(
            self, **{k: v for k, v in arguments.items() if k in names and k != 'self'}
        )
        for name, value in arguments.items():
            if name not in names and name not in ('self', '__class__'):
                setattr(self, name, value)
        self._check_parameters()

    def _check_parameters(self):
        """Raise ``SynthesizerInputError`` for a bad method argument (run at construction and
        at fit: ``kernel`` and ``training`` may have been replaced since)."""
        for name, option in (('kernel', self._kernel_class), ('training', self._training_class)):
            if option is not None and not isinstance(getattr(self, name), option):
                raise SynthesizerInputError(
                    f'{name} must be a sdv_dpkme.{option.__name__}, got '
                    f'{type(getattr(self, name)).__name__}.'
                )

    def _metadata_is_public(self):
        """The domain spec's ``metadata_is_public`` (False when absent)."""
        flag = spec_flag(self.domain, 'metadata_is_public')
        if flag is not None and not isinstance(flag, bool):
            raise SynthesizerInputError(
                f"The domain spec's metadata_is_public must be true or false, got {flag!r}."
            )
        return bool(flag)

    def _option_values(self):
        """Every option of the fit, for the privacy report (public settings only)."""
        values = {name: getattr(self, name, None) for name in
                  ('target_column', 'domain_budget_share', 'random_state')}
        values['metadata_is_public'] = self._metadata_is_public()
        if self._kernel_class is not None:
            values.update(option_values(self.kernel, 'kernel'))
            values.update(option_values(self.training, 'training'))
        return values

    # ---------------------------------------------------------------------- domains
    def _resolve_domains(self):
        """(declared domains, undeclared columns) from the current public declarations.

        Run at construction (early errors) and again at every fit, so attributes set after
        construction (e.g. ``domain_budget_share``) take effect.
        """
        share = self.domain_budget_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share < 1:
            raise SynthesizerInputError(
                f'domain_budget_share must be a number in [0, 1), got {share!r}.'
            )
        columns = self._original_metadata._convert_to_single_table().columns
        try:
            declarations = merge_declarations(domain=self.domain, table_name=self._table_name)
            declared, undeclared, hints = resolve_domains(
                columns, declarations, self._metadata_is_public()
            )
        except ValueError as err:
            raise SynthesizerInputError(str(err)) from None
        for column, transformer in self._user_transformers.items():
            if column in undeclared and isinstance(transformer, DP_TRANSFORMERS):
                declared[column] = _domain_from_transformer(undeclared.pop(column), transformer)
        if undeclared and share == 0:
            hints = [h for h in hints if h.split("'")[1] in undeclared]
            raise MissingDomainError(
                missing_domain_message(hints)
                + ' Discovery is off here (domain_budget_share=0).'
            )
        target = self.target_column
        if target is not None:
            domain = declared.get(target) or undeclared.get(target)
            if domain is None or domain.is_numeric:
                raise SynthesizerInputError(
                    f"target_column '{target}' must be a categorical, boolean or ordinal "
                    f'column of the metadata; modelled columns are '
                    f'{sorted([*declared, *undeclared])}.'
                )
            if target in declared and len(declared[target].categories) < 2:
                raise SynthesizerInputError(
                    f"target_column '{target}' is declared with the single class "
                    f'{declared[target].categories}; a target needs 2 classes or more: '
                    f"known_categories={{'{target}': [...]}}."
                )
        order = list(columns)
        declared = dict(sorted(declared.items(), key=lambda item: order.index(item[0])))
        return declared, undeclared

    def _discover_domains(self, table_data, rows=None):
        """Declared domains, plus one DP release for the columns that have none (counted on
        ``rows``, a distributed row source, when given; else on ``table_data``)."""
        declared, undeclared = self._resolve_domains()
        self._discovery = None
        self._undeclared = undeclared
        source = table_data if rows is None else rows
        if undeclared:
            discovery = discover(source, undeclared, self._ledger, self.domain_budget_share)
            warn_discovered(discovery)
            check_usable(discovery, self.target_column)  # kept only if usable
            self._discovery = discovery
            declared = {**declared, **discovery.domains}
        # after discovery, whose delta reservation must precede every release
        self._vote_integers(source, declared)
        order = list(self._original_metadata._convert_to_single_table().columns)
        self._domains = dict(sorted(declared.items(), key=lambda item: order.index(item[0])))

    def _vote_integers(self, rows, domains):
        """One DP vote on the integer-ness of the numerical columns no public fact settles; the
        default encoding rule then sees it (a small integer range becomes one-hot)."""
        self._integer_vote = None
        columns = [c for c, d in domains.items() if integers.needs_vote(d)]
        if not columns or not self.domain_budget_share:
            return
        result = integers.vote(rows, columns, self._ledger)
        if result is None:
            warnings.warn(
                f'Columns {columns} have no declared integer-ness and the table is too small '
                'for a DP vote on it, so they are modelled as floats. Declare it: '
                "domain={'columns': {'<column>': {'integer': True}}} (or False), or the spec's "
                'integer_columns.'
            )
            return
        self._integer_vote = result
        for column in columns:
            dom = domains[column]
            dom.integer, dom.integer_voted = result.integer[column], True
            if dom.integer and dom.discovered:  # discovered bounds: widen to whole numbers
                dom.low, dom.high = float(math.floor(dom.low)), float(math.ceil(dom.high))
            if dom.scale_by_rule:
                dom.scale = default_scale(dom)

    def _modelled_columns(self):
        return set(self._domains) | set(self._undeclared)

    # ---------------------------------------------------------------- transformers
    def _build_config(self, table_data):
        """SDV's config with every modelled column on a public-domain transformer and every
        other column on a generator chosen from its metadata alone (never from the rows)."""
        config = self._data_processor._create_config(table_data)
        columns = self._data_processor.metadata.columns
        for column, transformer in list(config['transformers'].items()):
            if isinstance(column, tuple):  # SDV's multi-column transformers (enterprise add-ons)
                if transformer is not None and not transformer.is_generator():
                    raise SynthesizerInputError(
                        f'Columns {column} would be modelled together by '
                        f'{type(transformer).__name__}, which learns from the private rows.'
                    )
            elif column in self._domains:
                config['transformers'][column] = transformer_for(self._domains[column])
            elif column in self._undeclared:
                config['transformers'][column] = None  # its domain is only known after discovery
            else:
                config['transformers'][column] = self._generated_column(column)
                config['sdtypes'][column] = 'id' if columns[column]['sdtype'] == 'id' else 'pii'
        for column, transformer in self._user_transformers.items():
            if not isinstance(transformer, DP_TRANSFORMERS):
                transformer = safe_generator(transformer)
            config['transformers'][column] = transformer
        return config

    def _generated_column(self, column):
        return generated_column(column, self._data_processor.metadata.columns[column],
                                self._data_processor, self.locales)

    def _column_dtypes(self, columns, domains):
        fields = self._data_processor._hyper_transformer.field_transformers
        return column_dtypes(columns, domains, lambda c: (
            self._user_transformers.get(c) or fields.get(c) or self._generated_column(c)))

    def _reseed_generators(self):
        for transformer in self._data_processor._hyper_transformer.field_transformers.values():
            if isinstance(transformer, (AnonymizedFaker, RegexGenerator)):
                transformer.random_seed = FIXED_SEED
                if isinstance(transformer, AnonymizedFaker):
                    transformer._faker_random_seed = FIXED_SEED
                transformer.reset_randomization()

    def _install_config(self, table_data):
        processor = self._data_processor
        processor._hyper_transformer = DPHyperTransformer()
        processor._hyper_transformer.set_config(self._build_config(table_data))

    def _open_ledger(self):
        """One accountant and noise source per fit; every release of the fit goes through it."""
        self._ledger = Ledger.open(self.epsilon, self.delta)  # warns under fixed_noise (tests)
        return self._ledger

    #: an encoded table above this many bytes gets a warning with its size and widest columns
    encoded_warning_bytes = 1 << 30

    def _check_encoded_size(self, n_rows):
        """Say up front (public facts: n and the declared domains) when the one-hot encoded table
        is large, and refuse one that cannot fit in memory, before any budget is spent."""
        # each column's width is its transformer's number of outputs
        widths = {c: len(transformer_for(d).output_properties) for c, d in self._domains.items()}
        size = n_rows * sum(widths.values()) * 8  # float64, held a few times during the fit
        if size <= self.encoded_warning_bytes:
            return
        widest = sorted(widths.items(), key=lambda item: -item[1])[:3]
        what = (f'{n_rows:,} rows x {sum(widths.values()):,} encoded columns (one per '
                f'category; widest: {", ".join(f"{c!r} {w:,}" for c, w in widest)})')
        advice = ('Group wide categorical columns publicly (e.g. a zip code by its first '
                  'digits), or give identifiers sdtype id/pii so they are generated, not modelled.')
        memory = _physical_memory()
        if memory and 4 * size > memory:  # measured: 6.7 GB peak for a 1.5 GiB table
            raise SynthesizerInputError(
                f'The encoded table would take about {size / 2**30:.1f} GiB ({what}) and the '
                f'fit holds it about 4 times, more than this machine\'s {memory / 2**30:.0f} '
                f'GiB. Nothing was spent. {advice}'
            )
        warnings.warn(f'The encoded table takes about {size / 2**30:.1f} GiB ({what}); the fit '
                      f'holds it a few times and gets slower with it. {advice}')

    def _preprocess(self, table_data):
        self._check_encoded_size(len(table_data))
        self._prepare_encoding(table_data)
        return self._data_processor.transform(table_data)

    def _prepare_encoding(self, table_data, rows=None):
        """Open the fit's ledger, settle the domains (discovery spends here) and fit the
        processor: public-domain transformers, so ``table_data`` teaches it nothing. A
        distributed fit passes no rows (None) and its row source as ``rows`` (discovery's own
        pass, and n): the processor is then fitted on a public stand-in, never on a partition.
        Returns the frame the processor was fitted on."""
        processor = self._data_processor
        self._open_ledger()
        try:
            self._discover_domains(table_data, rows)
        except DomainError as err:
            raise SynthesizerInputError(str(err)) from None
        self._check_increments()  # discovered bounds too
        n = len(table_data if rows is None else rows)
        if table_data is None:
            columns = list(self._original_metadata._convert_to_single_table().columns)
            table_data = public_frame(columns, self._domains, self._column_dtypes(
                columns, self._domains))
        self._install_config(table_data)
        with warnings.catch_warnings():
            warnings.filterwarnings('ignore', module='rdt.hyper_transformer')
            processor.fit(table_data)
        processor.formatters = {}  # SDV formatters learn exact min/max and rounding (leak L2)
        # SDV keeps the private frame's dtypes, which one row flips (a NaN in an int column)
        processor._dtypes = self._column_dtypes(table_data.columns, self._domains)
        self._reseed_generators()
        set_data_length(processor._hyper_transformer.field_transformers.values(), n)
        warn_undeclared_types(self._domains, table_data)
        return table_data

    def _validate_transform_constraints(self, table_data, enforce_constraint_fitting=False):
        """Constraints are checked on the rows but fitted on an empty table of public dtypes."""
        if self._constraints_fitted and not enforce_constraint_fitting:
            return table_data
        declared, undeclared = self._resolve_domains()
        fit_constraints_publicly(
            self._reject_sampling_constraints, table_data, self._original_metadata,
            self._column_dtypes(table_data.columns, {**declared, **undeclared}),
        )
        self._constraints_fitted = True
        return table_data

    @sanitised_errors  # with fit, and preprocess and fit_processed_data (entry_points.py)
    def validate(self, data):
        with warnings.catch_warnings():
            # SDV's advice (a datetime_format in the metadata) does not apply: detected formats
            # are not public here; warn_undeclared_types says what to declare instead
            warnings.filterwarnings('ignore', message="No 'datetime_format' is present")
            super().validate(data)

    def auto_assign_transformers(self, data):
        """Show the transformers a fit would use (nothing is learned from the data).

        Columns whose domain is discovered at fit show ``None`` until then.
        """
        self._install_config(data[self._table_name] if isinstance(data, dict) else data)

    def update_transformers(self, column_name_to_transformer, table_name=None):
        """Only public-domain transformers (or generators for id/PII columns) are accepted."""
        modelled = self._modelled_columns()
        for column, transformer in column_name_to_transformer.items():
            if column in modelled and isinstance(transformer, DP_TRANSFORMERS):
                continue
            if column not in modelled and transformer is not None and (
                transformer.is_generator()
            ):
                continue
            raise SynthesizerInputError(
                f"Transformer {type(transformer).__name__} for column '{column}' is refused: "
                'SDV/RDT transformers learn statistics of the private data (means, min/max, '
                'category frequencies) that would bypass the privacy mechanism. Use '
                'DPNumericalTransformer/DPDatetimeTransformer/DPCategoricalTransformer/'
                'DPDiscreteTransformer from '
                'sdv_dpkme.domain with public parameters, or a generator for id/PII columns.'
            )
        self._user_transformers.update(column_name_to_transformer)
        if self._fitted:
            warnings.warn('For this change to take effect, please refit the synthesizer.')

    # ----------------------------------------------------------------- constraints
    def _increments(self):
        """``{column: increment}`` of the FixedIncrements constraints (public facts)."""
        return {c.column_name: c.increment_value for c in self._reject_sampling_constraints
                if isinstance(c, FixedIncrements)}

    def _check_increments(self):
        """Every FixedIncrements column needs a multiple of its increment inside its bounds."""
        for column, step in self._increments().items():
            domain = self._domains.get(column)
            if domain is None or not domain.is_numeric:
                continue
            if math.ceil(domain.low / step) > math.floor(domain.high / step):
                raise SynthesizerInputError(
                    f"FixedIncrements({column!r}, increment_value={step}) cannot be met: no "
                    f'multiple of {step} lies inside its public bounds [{domain.low:g}, '
                    f'{domain.high:g}]. Widen the bounds or change the increment.'
                )

    def reverse_transform_constraints(self, sampled):
        """FixedIncrements columns are rounded to the nearest multiple inside the public bounds
        (post-processing) before SDV's reject sampling checks them: a column modelled as
        continuous would otherwise never pass, and sampling would return no rows."""
        for column, step in self._increments().items():
            domain = self._domains.get(column)
            if column not in sampled.columns or domain is None or not domain.is_numeric:
                continue
            values = pd.to_numeric(sampled[column], errors='coerce')
            lowest, highest = math.ceil(domain.low / step), math.floor(domain.high / step)
            snapped = np.clip(np.round(values.to_numpy(float) / step), lowest, highest) * step
            sampled[column] = pd.Series(snapped, index=sampled.index).astype(sampled[column].dtype)
        return super().reverse_transform_constraints(sampled)

    def add_constraints(self, constraints):
        """Accept constraints that keep no row-level facts; enforce them by reject sampling."""
        for constraint in constraints:
            if not isinstance(constraint, SAFE_CONSTRAINTS):
                raise SynthesizerInputError(
                    f'{type(constraint).__name__} is not supported by DP synthesizers: it learns '
                    'from the private rows (e.g. FixedCombinations stores every combination '
                    'seen) or runs arbitrary code on them. Supported: '
                    + ', '.join(c.__name__ for c in SAFE_CONSTRAINTS)
                    + '.'
                )
            constraint.get_updated_metadata(self._original_metadata)  # validates columns
            self._reject_sampling_constraints.append(constraint)
        self._constraints_fitted = False
        self._check_increments()

    # ------------------------------------------------------------------ validation
    def _validate(self, table_data):
        errors = []
        if len(table_data) < 2:
            errors.append(
                f'The table has {len(table_data)} row(s); a DP fit needs at least 2 (and far '
                'more for useful output: noise scales like 1/n).'
            )
        return errors

    # ------------------------------------------------------------------------- fit
    @sanitised_errors
    def fit(self, data):
        """SDV's fit; a Dask or Spark DataFrame goes to ``sdv_dpkme.fit_distributed``."""
        table = next(iter(data.values())) if isinstance(data, dict) and len(data) == 1 else data
        if is_dask_frame(table) or is_spark_frame(table):
            from sdv_dpkme.scale.fit import fit_distributed  # the scale package imports this one

            fit_distributed(self, table)
            return
        super().fit(data)

    def _layout(self, processed):
        """Blocks of the encoded table, from the fitted transformers (public facts only)."""
        index = {c: i for i, c in enumerate(processed.columns)}
        blocks, target = [], None
        fields = self._data_processor._hyper_transformer.field_transformers
        for column in self._domains:
            transformer = fields.get(column)
            if transformer is None or not transformer.output_columns:
                continue
            cols = tuple(index[c] for c in transformer.output_columns)
            # one-hot blocks (categories, discrete integer columns) are matched as categories
            one_hot = isinstance(transformer, DPCategoricalTransformer)
            kind = 'categorical' if one_hot else 'numeric'
            block = Block(column, kind, cols)
            if column == self.target_column:
                target = block
            else:
                blocks.append(block)
        return blocks, target

    def _fit(self, processed_data):
        blocks, target = self._layout(processed_data)
        if not blocks:
            raise SynthesizerInputError('There is no modelled column besides the target.')
        # a chunked view: the one-pass engines never hold the whole float64 copy
        rows = FrameRows(processed_data, target)
        self._fit_rows(rows, blocks, target, list(processed_data.columns))

    def _fits_in_one_pass(self):
        """Whether ``_fit_engine`` takes a row source (one pass of partial sums, see
        ``sdv_dpkme.engines.accumulate``) instead of the encoded array: then it can also fit
        out-of-core or distributed rows (``sdv_dpkme.fit_distributed``)."""
        return False

    def _fit_rows(self, rows, blocks, target, columns):
        """Fit from a row source (``FrameRows`` in memory, or a distributed one)."""
        if self._fits_in_one_pass():
            x, labels = rows, None
        else:
            x, labels = rows.to_numpy()
        ledger = getattr(self, '_ledger', None)
        if ledger is None:  # fit_processed_data without preprocess: same encoding, same cost
            ledger = self._open_ledger()
            if self._discovery is not None:
                self._discovery.replay(ledger.accountant)
            if self._integer_vote is not None:
                self._integer_vote.replay(ledger.accountant)
        try:
            try:
                self._model, notes = self._fit_engine(x, blocks, target, labels, columns, ledger)
            except EngineInputError as err:
                raise SynthesizerInputError(str(err)) from None
            self._privacy_report = ledger.accountant.report(
                ledger.noise, public_inputs=self._public_inputs(), notes=notes,
            )
            self._privacy_report.parameters = self._option_values()
        finally:
            self._ledger = None  # the noise source is never kept (nor pickled)
        self._fitted_sdv_dpkme_version = __version__

    def _fit_engine(self, x, blocks, target, labels, columns, ledger):
        """The method: encoded private rows (unit box) and their public layout -> ``(model,
        report notes)``. Every noisy release goes through ``ledger``; the rows are not kept.

        ``x`` is the float64 array with its ``labels``, or, when ``_fits_in_one_pass()``, a row
        source (``len`` and ``accumulate``; ``labels`` None) that may be out-of-core or remote."""
        raise NotImplementedError

    def _torch_generator(self):
        """The model RNG (initialisation, random features, subsets; never the privacy noise)."""
        gen = torch.Generator()
        if self.random_state is None:
            gen.seed()
        else:
            gen.manual_seed(int(self.random_state))
        return gen

    def _public_inputs(self):
        def origin(d):
            return 'discovered under DP (domain_discovery)' if d.discovered else 'declared'

        def integer(d):
            if not d.integer_voted:
                return ''
            return ('; integer' if d.integer else '; not integer') + ' by DP vote (integer_discovery)'

        inputs = [f"bounds of '{d.name}': [{d.low:g}, {d.high:g}], {origin(d)}"
                  + (' (one-hot over its integer values)' if is_discrete(d) else
                     ' (log scale)' if d.scale == 'log' else '')
                  + (', encoding by the default rule' if d.scale_by_rule and d.scale not in
                     (None, 'linear') else '') + integer(d)
                  for d in self._domains.values() if d.is_numeric]
        inputs += [f"categories of '{d.name}': {len(d.categories)} {origin(d)} + missing + "
                   'out-of-domain buckets' for d in self._domains.values() if not d.is_numeric]
        inputs.append('number of rows n (replace-one adjacency)')
        return inputs

    # ---------------------------------------------------------------------- sample
    #: rows generated and decoded at a time by every sampling method (``sample``,
    #: ``sample_from_conditions``, ...), whatever their ``batch_size``: beyond it memory stays flat
    #: in the number of rows (only the decoded output grows). Larger chunks are not faster.
    sample_chunk_rows = 50_000

    def _sample_rows(self, num_rows, conditions=None, transformed_conditions=None,
                     float_rtol=0.1, previous_rows=None, keep_extra_columns=False):
        """SDV's ``_sample_rows`` (generate, decode, check constraints, filter conditions) on
        chunks of at most ``sample_chunk_rows`` rows. SDV would generate all ``num_rows`` at once
        (``batch_size=None`` means one batch, and a reject-sampling retry asks for up to 10x the
        batch), holding the encoded rows (one column per category) several times over."""
        if self._model is not None:
            self._warn_before_sampling(num_rows)
        chunk = max(1, int(self.sample_chunk_rows))
        if num_rows <= chunk:
            return super()._sample_rows(num_rows, conditions, transformed_conditions, float_rtol,
                                        previous_rows, keep_extra_columns)
        parts = [] if previous_rows is None else [previous_rows]
        for start in range(0, num_rows, chunk):
            rows, _ = super()._sample_rows(min(chunk, num_rows - start), conditions,
                                           transformed_conditions, float_rtol, None,
                                           keep_extra_columns)
            parts.append(rows)
        sampled = pd.concat(parts, ignore_index=True)
        return sampled, len(sampled)

    def _warn_before_sampling(self, num_rows):
        """Hook: warnings about a request of ``num_rows`` rows (once, not per chunk)."""

    def _sample(self, num_rows, conditions=None):
        if conditions is None:
            return self._model.sample(num_rows)
        label = self._target_condition(conditions)
        if label is None:
            raise NotImplementedError  # SDV falls back to reject sampling
        # the model is class-conditional: draw the class directly (other conditions in the same
        # request are then met by SDV's reject sampling)
        return self._model.sample(num_rows, label=label)

    def _target_condition(self, conditions):
        """The target's bucket when ``conditions`` (encoded) fix the target column, else None."""
        target = self.target_column
        fields = self._data_processor._hyper_transformer.field_transformers
        transformer = fields.get(target) if target is not None else None
        outputs = getattr(transformer, 'output_columns', None) or []
        if not outputs or not set(outputs) <= set(conditions):
            return None
        onehot = np.array([float(conditions[c]) for c in outputs])
        label = int(onehot.argmax())
        if onehot[label] != 1 or label == len(outputs) - 1:  # not one bucket, or out-of-domain
            return None
        return label

    def _validate_conditions_unseen_columns(self, conditions):
        """SDV's check, then one that says why a condition outside the public domain can never
        be met (the model only samples inside it) instead of reject sampling to no avail."""
        super()._validate_conditions_unseen_columns(conditions)
        for column in conditions.columns:
            domain = self._domains.get(column)
            if domain is None:
                continue
            values = conditions[column]
            present = values[values.notna()]
            if values.isna().any() and not domain.nullable:
                raise SynthesizerInputError(
                    f"Column '{column}' is not nullable in its public domain, so no synthetic "
                    'row holds a missing value there; a condition on NaN cannot be met.'
                )
            outside, where = outside_domain(present, domain)
            if outside is None:
                continue  # datetimes: compared after SDV parses them
            if len(outside):
                value = outside.iloc[0]
                raise SynthesizerInputError(
                    f'Cannot condition on {column} = {getattr(value, "item", lambda: value)()!r}: '
                    f'it is outside {where}, and the model only samples inside the declared '
                    'domain.'
                )
            if column == self.target_column and self._model is not None:
                self._check_target_classes(present, domain)

    def _check_target_classes(self, values, domain):
        """A target class with no released weight was never learnt: say so before sampling."""
        for value in pd.unique(values):
            label = list(domain.categories).index(value)
            if not self._model.can_sample(label):
                raise SynthesizerInputError(
                    f'No rows can be sampled with {self.target_column} = {value!r}: its released '
                    'class proportion was about 0 (fewer rows than the noise can tell apart), so '
                    'the model never learnt that class. A larger epsilon or more rows of that '
                    'class would be needed.'
                )

    def sample_from_conditions(self, conditions, max_tries_per_batch=100, batch_size=None,
                               output_folder_path=None):
        with self._explain_unmet_conditions(max_tries_per_batch):
            return super().sample_from_conditions(
                conditions, max_tries_per_batch, batch_size, output_folder_path)

    def sample_remaining_columns(self, known_columns, max_tries_per_batch=100, batch_size=None,
                                 output_folder_path=None):
        with self._explain_unmet_conditions(max_tries_per_batch):
            return super().sample_remaining_columns(
                known_columns, max_tries_per_batch, batch_size, output_folder_path)

    @contextlib.contextmanager
    def _explain_unmet_conditions(self, max_tries_per_batch):
        try:
            yield
        except ValueError as err:
            if not str(err).startswith('Unable to sample any rows'):
                raise
            target = self.target_column
            direct = (f"Conditions on the target_column '{target}' alone are sampled directly. "
                      if target is not None else
                      'Only a target_column can be sampled directly (set one at construction). ')
            raise ValueError(
                f'Unable to sample any rows for the given conditions: in {max_tries_per_batch} '
                'tries per batch the model produced no row that meets them. Conditions on a '
                'column other than the target are met by reject sampling, so they need the model '
                'to produce such rows; a value (or combination) that the noisy embeddings did not '
                'resolve, because few private rows hold it, may never come up. ' + direct
                + 'Loosen the condition, or raise max_tries_per_batch if it is merely rare.'
            ) from None

    # ---------------------------------------------------------------------- report
    def get_privacy_report(self):
        """The PrivacyReport of the last fit: budget, spend and one row per noisy release."""
        if self._privacy_report is None:
            raise SynthesizerInputError('Fit the synthesizer before asking for its privacy report.')
        return self._privacy_report

    def get_loss_values(self):
        """Loss per training step (DataFrame)."""
        if not self._fitted or self._model is None:
            raise SynthesizerInputError('Fit the synthesizer before asking for its loss values.')
        return self._model.loss_values.copy()

    def get_info(self):
        info = super().get_info()
        info['sdv_dpkme_version'] = self._fitted_sdv_dpkme_version or __version__
        info['epsilon'] = self.epsilon
        info['delta'] = self.delta
        if self._privacy_report is not None:
            info['epsilon_spent'] = self._privacy_report.epsilon_spent
            info['neighbouring_relation'] = self._privacy_report.neighbouring_relation
            info['dp_guarantee_holds'] = self._privacy_report.guarantee_holds
        if self._discovery is not None:
            info['discovered_columns'] = list(self._discovery.domains)
        return info

    def __setstate__(self, state):
        saved = state.get('_sdv_dpkme_format')
        if saved != FORMAT_VERSION:
            older = saved is None or (isinstance(saved, int) and saved < FORMAT_VERSION)
            which = 'an older' if older else 'another'
            raise SynthesizerInputError(
                f'This synthesizer was saved by {which} sdv_dpkme (file format {saved}; this '
                f'version reads format {FORMAT_VERSION}), whose options no longer load. Fit it '
                'again with this version (a refit spends a new privacy budget on the data).'
            )
        self.__dict__.update(state)
        # the models drop their RNG when pickled, so sampling restarts from SDV's fixed seed:
        # two loads of one file give the same rows, even if it was saved after sampling
        self._random_state_set = False
        saved = state.get('_fitted_sdv_dpkme_version')
        if saved is not None and saved.split('.')[:2] != __version__.split('.')[:2]:
            warnings.warn(
                f'This synthesizer was fitted with sdv_dpkme {saved}; you run {__version__}.'
            )


def outside_domain(present, domain):
    """(the non-missing ``present`` values outside ``domain``, a phrase naming the domain);
    (None, None) for datetimes, which are compared once parsed."""
    if domain.is_numeric:
        if domain.sdtype == 'datetime':
            return None, None
        numbers = pd.to_numeric(present, errors='coerce')
        outside = present[numbers.isna() | (numbers < domain.low) | (numbers > domain.high)]
        return outside, f'its public bounds [{domain.low:g}, {domain.high:g}]'
    return (present[~present.isin(domain.categories)],
            f'its public categories {list(domain.categories)}')


def _physical_memory():
    try:
        return os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
    except (ValueError, OSError, AttributeError):
        return None


def _domain_from_transformer(template, transformer):
    """A user's DP transformer for an undeclared column is a public declaration."""
    dom = ColumnDomain(name=template.name, sdtype=template.sdtype,
                       nullable=bool(transformer.nullable), nullable_declared=True)
    if isinstance(transformer, DPDiscreteTransformer):
        dom.low, dom.high = transformer.low, transformer.high
        dom.integer, dom.scale = True, 'discrete'
    elif isinstance(transformer, DPNumericalTransformer):
        dom.low, dom.high = transformer.low, transformer.high
        dom.integer = bool(transformer.integer)
        dom.decimal_places = transformer.decimal_places
        if isinstance(transformer, DPDatetimeTransformer):
            dom.datetime_format = transformer.datetime_format
    else:
        dom.categories = list(transformer.categories)
    return dom

