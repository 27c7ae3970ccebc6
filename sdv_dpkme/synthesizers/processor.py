"""The DP-safe data processor of a synthesizer: SDV's HyperTransformer on public facts only.

Every modelled column gets a transformer built from its public domain, every other column a
generator chosen from its metadata (never from the rows); SDV's formatters, which learn exact
min/max and rounding, are dropped. A user's transformer is accepted only if it is one of ours
(public parameters) or a generator. Before any budget is spent, the size of the encoded table is
checked against the machine's memory (from n and the domains, both public).
"""

import copy
import os
import warnings

from rdt.transformers.id import RegexGenerator
from rdt.transformers.pii.anonymizer import AnonymizedFaker
from sdv.errors import SynthesizerInputError

from sdv_dpkme.domain import DP_TRANSFORMERS, DomainError, integers, transformer_for
from sdv_dpkme.domain.decoding import DPHyperTransformer
from sdv_dpkme.domain.transformers import FIXED_SEED, DPCategoricalTransformer
from sdv_dpkme.features import Block
from sdv_dpkme.scale.fit import PrivateRows
from sdv_dpkme.scale.row_checks import ValueChecks
from sdv_dpkme.synthesizers.public_state import (
    column_dtypes,
    generated_column,
    public_frame,
    safe_generator,
    set_data_length,
    warn_undeclared_types,
)


class DPProcessor:
    """Mixin of ``BaseDPSynthesizer``: the configuration and fit of SDV's data processor, the
    encoded layout (blocks) read from it, and the transformer updates a user may make."""

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
        if isinstance(table_data, PrivateRows):  # not at hand: nothing held in memory
            return self._preprocess_private_rows(table_data)
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
        n = len(table_data if rows is None else rows)
        self._check_before_release(table_data, n)
        self._open_ledger()
        try:
            self._discover_domains(table_data, rows)
        except DomainError as err:
            raise SynthesizerInputError(str(err)) from None
        self._check_increments()  # discovered bounds: widened with a warning, never an error
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

    def _check_before_release(self, table_data, n):
        """What can fail, checked before the first release (discovery's, the integer vote's):
        after it, a failure would cost budget and return no model. Public facts (the modelled
        columns, the declared bounds, the method's options against n), and, for rows at hand,
        the declared columns' values as their transformers will read them (numbers, dates,
        undeclared missing values): errors to the curator, which release nothing."""
        declared, undeclared = self._resolve_domains()
        if not (set(declared) | set(undeclared)) - {self.target_column}:
            raise SynthesizerInputError('There is no modelled column besides the target.')
        self._check_increments(declared)
        self._check_parameters()  # options may have been replaced since construction
        self._check_method_before_release(n)
        if table_data is None:  # distributed: the workers check the rows in the engine's pass
            return
        if not undeclared and not any(integers.needs_vote(d) for d in declared.values()):
            return  # nothing is released before the processor's own transform checks them
        checks = self._value_checks(table_data.iloc[:0])
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # the transform warns, once
            checks(table_data)

    def _value_checks(self, empty):
        """The declared columns' value checks (``ValueChecks``), with the transformers the fit
        will use (a user's DP transformer, else the domain's), fitted on ``empty`` (no rows):
        run on the rows before the first release, in memory or by a distributed pass's workers."""
        declared, _ = self._resolve_domains()
        transformers = {}
        for column, domain in declared.items():
            if column not in empty.columns:
                continue
            user = self._user_transformers.get(column)
            transformer = (copy.deepcopy(user) if isinstance(user, DP_TRANSFORMERS)
                           else transformer_for(domain))
            transformer.fit(empty[[column]], column)
            transformers[column] = transformer
        return ValueChecks(transformers)

    def _check_method_before_release(self, n):
        """Hook: a method's checks of its options against n (public), before any release."""

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


def _physical_memory():
    try:
        return os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
    except (ValueError, OSError, AttributeError):
        return None
