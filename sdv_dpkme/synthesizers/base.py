"""The SDV-facing base class of every DP synthesizer; it knows no method.

It owns the contract between SDV and the engines: construction, the fit's orchestration and its
ledger (one accountant and noise source), the privacy report, ``get_info`` and loading. Its other
jobs are mixins, one module each: the public schema (``schema``), the DP-safe data processor
(``processor``), constraints and row checks (``constraints``), sampling (``sampling``) and the
fit on rows that are not at hand (``distributed``).
A method's class only implements ``_fit_engine`` (encoded rows in the unit box -> a model with
``sample`` and ``loss_values``), handing the work to an engine under ``sdv_dpkme.engines``.
"""

import copy
import inspect
import warnings

import torch
from sdv.errors import SynthesizerInputError
from sdv.metadata import Metadata
from sdv.single_table.base import BaseSingleTableSynthesizer

from sdv_dpkme._version import __version__
from sdv_dpkme.domain.decoding import DPHyperTransformer
from sdv_dpkme.engines.errors import EngineInputError
from sdv_dpkme.engines.row_encoding import FrameRows
from sdv_dpkme.privacy import Ledger, validate_budget
from sdv_dpkme.privacy.diagnostics import sanitised_errors
from sdv_dpkme.scale.fit import EncodedRows, PrivateRows, open_rows
from sdv_dpkme.scale.sources import is_dask_frame, is_spark_frame
from sdv_dpkme.synthesizers.constraints import SafeConstraints
from sdv_dpkme.synthesizers.distributed import DistributedFit
from sdv_dpkme.synthesizers.entry_points import SanitisedEntryPoints
from sdv_dpkme.synthesizers.options import option_values, resolve_option, spec_flag
from sdv_dpkme.synthesizers.processor import DPProcessor
from sdv_dpkme.synthesizers.public_state import public_metadata
from sdv_dpkme.synthesizers.sampling import ChunkedSampling
from sdv_dpkme.synthesizers.schema import PublicSchema

#: the layout of a saved synthesizer; a file of another format is refused (refit instead)
FORMAT_VERSION = 1


class BaseDPSynthesizer(SanitisedEntryPoints, PublicSchema, DPProcessor, SafeConstraints,
                        ChunkedSampling, DistributedFit, BaseSingleTableSynthesizer):
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


    def _open_ledger(self):
        """One accountant and noise source per fit; every release of the fit goes through it."""
        self._ledger = Ledger.open(self.epsilon, self.delta)  # warns under fixed_noise (tests)
        return self._ledger

    # ------------------------------------------------------------------------- fit
    @sanitised_errors
    def fit(self, data):
        """SDV's fit. A Dask or Spark DataFrame (or Parquet, through ``sdv_dpkme.fit_distributed``)
        is fitted by the same code, as ``PrivateRows`` that the driver never reads whole."""
        name, table = (next(iter(data.items())) if isinstance(data, dict) and len(data) == 1
                       else (None, data))
        if is_dask_frame(table) or is_spark_frame(table):
            name, table = None, open_rows(table)  # its key unchecked, as for a DataFrame
        if isinstance(table, PrivateRows):
            self._check_private_rows(table, name)
            data = {self._table_name: table}
        super().fit(data)

    def _fit(self, processed_data):
        blocks, target = self._layout(processed_data)
        if not blocks:
            raise SynthesizerInputError('There is no modelled column besides the target.')
        # a chunked view: the one-pass engines never hold the whole float64 copy
        rows = (processed_data.rows(target) if isinstance(processed_data, EncodedRows)
                else FrameRows(processed_data, target))
        self._fit_rows(rows, blocks, target, list(processed_data.columns))

    def _fits_in_one_pass(self):
        """Whether ``_fit_engine`` takes a row source (one pass of partial sums, see
        ``sdv_dpkme.engines.accumulate``) instead of the encoded array: then it can also fit
        out-of-core or distributed rows (``sdv_dpkme.fit_distributed``)."""
        return False

    def _fit_rows(self, rows, blocks, target, columns):
        """Fit from a row source (``FrameRows`` in memory, ``EncodedRows.rows`` distributed)."""
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
