"""DP-safe RDT transformers: every parameter comes from a public domain, nothing from the data.

``fit`` learns nothing from the column's values, and the RNG seed RDT would hash from the first five
values (leak L9 of the research notes) is replaced by a constant. Out-of-domain values are clipped
(numerical, datetime) or mapped to an explicit out-of-domain bucket (categorical). Whether a column
may be missing is a public declaration (``nullable``): then missing values are imputed with a constant
and their indicator is modelled (so missingness goes through the mechanism). Otherwise a missing value
is an error that says how to declare the column nullable (``missing='error'``), except on columns whose
domain was discovered under DP (``missing='absorb'``): there an error would reveal that a missing value
exists, so it is absorbed instead (numbers: imputed at the middle of the bounds; categories: put in
the out-of-domain bucket), and for the same reason no warning says that a value was clipped or fell
outside the discovered categories.

Date strings are parsed one value at a time: with the declared ``datetime_format``, or else each on
its own (pandas' ``format='mixed'``). pandas would otherwise guess one format from the first row and
apply it to all rows, so replacing that row could change how every other row is read.
"""

import warnings

import numpy as np
import pandas as pd
from rdt.transformers.base import BaseTransformer

from sdv_dpkme.domain.scales import MAX_DISCRETE_VALUES, discrete_bounds, is_discrete
from sdv_dpkme.privacy.diagnostics import with_private_detail

FIXED_SEED = 0
MISSING = '__missing__'
OTHER = '__other__'


MISSING_RULES = ('error', 'absorb')


def to_numbers(data, column):
    """Floats of a numerical column (NaN where missing); a clear error for non-numbers, which
    quotes no value unless the curator asked (``privacy.diagnostics``)."""
    try:
        return pd.to_numeric(pd.Series(data), errors='raise').astype(float).to_numpy()
    except (ValueError, TypeError) as err:
        detail = str(err)
    raise ValueError(with_private_detail(
        f"Column '{column}' is numerical but holds values that are not numbers; fix the data or "
        'declare the column categorical in the metadata', detail))


def bucket_codes(data):
    """The largest bucket of each row of a one-hot block (the first on ties), read in the
    block's own float dtype: sampled blocks are float32, and a float64 copy of them cost as
    much as the argmax."""
    scores = np.asarray(data)
    if scores.dtype.kind not in 'fiub':
        scores = scores.astype(float)
    if scores.ndim == 1:  # a one-bucket block handed over as a Series
        scores = scores[:, None]
    return scores.argmax(axis=1)


def to_timestamps_ns(data, column, datetime_format=None):
    """Nanosecond timestamps of a datetime column as floats (NaN where missing).

    Each value is parsed on its own (never with a format guessed from the first row).
    """
    series = pd.Series(data)
    try:
        if pd.api.types.is_datetime64_any_dtype(series):
            ts = series
        else:
            ts = pd.Series(pd.to_datetime(series, format=datetime_format or 'mixed'))
    except (ValueError, TypeError) as err:
        detail = str(err)  # pandas quotes the value (and its position)
    else:
        values = ts.astype('datetime64[ns]').astype('int64').astype(float).to_numpy()
        values[ts.isna().to_numpy()] = np.nan
        return values
    fix = (f' in format {datetime_format!r}; fix the data or the declared format'
           if datetime_format else "; fix the data, or declare their format: domain={'columns': "
           f"{{'{column}': {{'datetime_format': '%Y-%m-%d'}}}}}}")
    raise ValueError(with_private_detail(
        f"Column '{column}' holds values that are not dates{fix}", detail))


def warn_clipped(column, values, null, low, high, show, quiet=False):
    """Warn (without saying which or how many) when non-missing values fall outside the bounds.

    ``quiet`` for discovered domains: there the warning would be the one bit discovery hides.
    """
    if not quiet and ((~null) & ((values < low) | (values > high))).any():
        warnings.warn(
            f"Column '{column}': values outside the public bounds [{show(low)}, {show(high)}] "
            'are clipped to them.'
        )


class PublicDomainTransformer(BaseTransformer):
    """Base: constant seeds and no data-dependent state."""

    def _set_seed(self, data):
        self.random_seed = FIXED_SEED
        self.reset_randomization()

    def _fit(self, columns_data):
        pass  # the domain is public: nothing to learn

    @property
    def quiet(self):
        """A discovered domain ('absorb'): say nothing about the values it holds or misses."""
        return self.missing == 'absorb'

    def check_values(self, data):
        """The value checks of ``transform`` on a column (numbers, dates, undeclared missing
        values), keeping nothing: a fit runs them before its first release."""
        raise NotImplementedError

    def _check_missing(self, null):
        if self.missing not in MISSING_RULES:
            raise ValueError(f'missing must be one of {MISSING_RULES}, got {self.missing!r}')
        if null.any() and not self.nullable and self.missing == 'error':
            raise ValueError(
                f"Column '{self.get_input_column()}' has missing values but was not declared "
                f"nullable; declare it in domain={{'nullable_columns': [..., "
                f"'{self.get_input_column()}']}} (its missing rate is then learned under DP)."
            )


class DPNumericalTransformer(PublicDomainTransformer):
    """Clip to public [low, high], map to [0, 1], impute 0.5, output a null indicator.

    ``scale='log'`` maps v to log1p(v - low) / log1p(high - low): a kernel on that scale tells 0
    from 5,000 in a column bounded by 100,000 (on the linear scale both sit within 0.05).
    """

    INPUT_SDTYPE = 'numerical'
    SUPPORTED_SDTYPES = ['numerical']

    def __init__(self, low, high, integer=False, decimal_places=None, nullable=False,
                 missing='error', scale='linear'):
        super().__init__()
        if scale not in ('linear', 'log'):
            raise ValueError(f"scale must be 'linear' or 'log', got {scale!r}")
        if scale == 'log' and low < 0:
            raise ValueError(f'a log scale needs low >= 0, got {low!r}')
        self.scale = scale
        self.low, self.high = float(low), float(high)
        self.integer = integer
        self.decimal_places = decimal_places
        self.nullable = nullable
        self.missing = missing
        self.output_properties = {None: {'sdtype': 'float', 'next_transformer': None}}
        if nullable:
            self.output_properties['is_null'] = {'sdtype': 'float', 'next_transformer': None}

    def _to_float(self, data):
        return to_numbers(data, self.get_input_column())

    def check_values(self, data):
        self._check_missing(np.isnan(self._to_float(data)))

    def _transform(self, data):
        values = self._to_float(data)
        null = np.isnan(values)
        self._check_missing(null)
        warn_clipped(self.get_input_column(), values, null, self.low, self.high, self._show,
                     self.quiet)
        scaled = self._encode(np.clip(values, self.low, self.high))
        scaled[null] = 0.5
        if not self.nullable:
            return scaled
        return np.column_stack([scaled, null.astype(float)])

    def _show(self, value):
        return f'{value:g}'

    def _encode(self, values):
        if getattr(self, 'scale', 'linear') == 'log':
            return np.log1p(values - self.low) / np.log1p(self.high - self.low)
        return (values - self.low) / (self.high - self.low)

    def _decode(self, unit):
        unit = np.clip(unit, 0.0, 1.0)
        if getattr(self, 'scale', 'linear') == 'log':
            return self.low + np.expm1(unit * np.log1p(self.high - self.low))
        return self.low + unit * (self.high - self.low)

    def _split(self, data):
        data = np.asarray(data, dtype=float).reshape(len(data), -1)
        null = data[:, 1] >= 0.5 if self.nullable else np.zeros(len(data), dtype=bool)
        return self._decode(data[:, 0]), null

    def _reverse_transform(self, data):
        values, null = self._split(data)
        if self.integer:
            values = np.round(values)
        elif self.decimal_places is not None:
            values = np.round(values, self.decimal_places)
        values[null] = np.nan
        return values


class DPDatetimeTransformer(DPNumericalTransformer):
    """Datetimes as nanosecond timestamps between public bounds."""

    INPUT_SDTYPE = 'datetime'
    SUPPORTED_SDTYPES = ['datetime']

    def __init__(self, low, high, datetime_format=None, nullable=False, missing='error'):
        super().__init__(low, high, integer=True, nullable=nullable, missing=missing)
        self.datetime_format = datetime_format

    def _to_float(self, data):
        return to_timestamps_ns(data, self.get_input_column(), self.datetime_format)

    def _show(self, value):
        return str(pd.Timestamp(int(value)))

    def _reverse_transform(self, data):
        values, null = self._split(data)
        values = pd.Series(pd.to_datetime(np.round(values).astype('int64'))).where(~null)
        if self.datetime_format:
            return values.dt.strftime(self.datetime_format).to_numpy()
        return values.to_numpy()


class DPCategoricalTransformer(PublicDomainTransformer):
    """One-hot over the public categories, a missing bucket (if nullable) and an out-of-domain bucket.

    The extra buckets decode to a missing value; the out-of-domain bucket is modelled (real rows
    with unknown values stay bounded) but the engines never sample it, so no unknown value and no
    spurious missing value is produced.
    """

    INPUT_SDTYPE = 'categorical'
    SUPPORTED_SDTYPES = ['categorical', 'boolean', 'ordinal']

    def __init__(self, categories, nullable=False, missing='error'):
        super().__init__()
        self.categories = list(categories)
        self.nullable = nullable
        self.missing = missing
        self.buckets = [*self.categories, *([MISSING] if nullable else []), OTHER]
        self.output_properties = {
            f'value{i}': {'sdtype': 'float', 'next_transformer': None}
            for i in range(len(self.buckets))
        }

    def _codes(self, data):
        series = pd.Series(np.asarray(data, dtype=object))
        other = len(self.buckets) - 1
        # one dict lookup per row, not one comparison per row and category (10k zip codes);
        # later categories win on equal values (1 == True), as with ==
        lookup = {category: i for i, category in enumerate(self.categories)}
        try:
            codes = _string_codes(series, lookup, other)
            if codes is None:
                codes = np.fromiter((lookup.get(v, other) for v in series), dtype=np.int64,
                                    count=len(series))
        except TypeError:  # an unhashable value: compare one category at a time
            codes = np.full(len(series), other)
            for i, category in enumerate(self.categories):
                codes[(series == category).to_numpy()] = i
        null = series.isna().to_numpy()
        self._check_missing(null)
        if self.nullable:
            codes[null] = len(self.categories)  # else absorbed: they stay in OTHER
        return codes

    def check_values(self, data):
        self._codes(data)

    def _transform(self, data):
        codes = self._codes(data)
        if not self.quiet and (codes == len(self.buckets) - 1).any():
            warnings.warn(
                f"Column '{self.get_input_column()}': values outside the public categories are "
                'mapped to an out-of-domain bucket, which is modelled but never sampled: '
                'synthetic values are always public categories.'
            )
        return np.eye(len(self.buckets))[codes]

    def _reverse_transform(self, data):
        codes = bucket_codes(data)
        decoded = np.array([*self.categories, None, None], dtype=object)
        return decoded[codes]


def _string_codes(series, lookup, other):
    """``lookup.get(v, other)`` for every value, in one hash join, when every present value is
    a string and no category is a missing value (a string equals only a string, and a missing
    value then matches no category); None otherwise (the caller looks values up one by one)."""
    if pd.api.types.infer_dtype(series, skipna=True) != 'string' or any(
        pd.api.types.is_scalar(c) and pd.isna(c) for c in lookup
    ):
        return None
    strings = {c: i for c, i in lookup.items() if isinstance(c, str)}
    found = pd.Index(list(strings), dtype=object).get_indexer(series.to_numpy())
    return np.array([*strings.values(), other], dtype=np.int64)[found]  # -1: not found


class DPDiscreteTransformer(DPCategoricalTransformer):
    """An integer column one-hot over every integer in [low, high] (``scale='discrete'``).

    The kernels then match each value's frequency (and its pairs with other columns) exactly,
    instead of through a length scale that blurs neighbouring values (educational-num takes 16
    values 0.067 apart on the [0, 1] scale, below the length of the papers' kernels). Values are
    clipped to the bounds (with a warning) and rounded, like a numerical column.
    """

    INPUT_SDTYPE = 'numerical'
    SUPPORTED_SDTYPES = ['numerical']

    def __init__(self, low, high, nullable=False, missing='error'):
        low, high = float(low), float(high)
        if not discrete_bounds(low, high):
            raise ValueError(
                f'a discrete column needs integer bounds with at most {MAX_DISCRETE_VALUES} '
                f'values between them, got [{low:g}, {high:g}]'
            )
        self.low, self.high = low, high
        super().__init__(range(int(low), int(high) + 1), nullable=nullable, missing=missing)

    def _codes(self, data):
        values = to_numbers(data, self.get_input_column())
        null = np.isnan(values)
        self._check_missing(null)
        warn_clipped(self.get_input_column(), values, null, self.low, self.high, '{:g}'.format,
                     self.quiet)
        codes = np.round(np.clip(np.nan_to_num(values, nan=self.low), self.low, self.high))
        codes = (codes - self.low).astype(int)
        if self.nullable:
            codes[null] = len(self.categories)
        else:  # absorbed (discovered bounds): imputed at the middle, as a numerical column
            codes[null] = len(self.categories) // 2
        return codes

    def _reverse_transform(self, data):
        codes = bucket_codes(data)
        values = self.low + codes.astype(float)
        values[codes >= len(self.categories)] = np.nan
        return values


class DPMissingTransformer(DPCategoricalTransformer):
    """A column about which discovery released nothing (``ColumnDomain.empty``), of any sdtype:
    its missing bucket and the out-of-domain bucket, so every synthetic value is missing."""

    SUPPORTED_SDTYPES = ['categorical', 'boolean', 'ordinal', 'numerical', 'datetime']

    def __init__(self):
        super().__init__([], nullable=True, missing='absorb')


DP_TRANSFORMERS = (DPNumericalTransformer, DPCategoricalTransformer)


def transformer_for(domain):
    """The DP-safe transformer for a ColumnDomain."""
    if getattr(domain, 'empty', False):
        return DPMissingTransformer()
    missing = 'absorb' if domain.discovered else 'error'
    if is_discrete(domain):
        return DPDiscreteTransformer(domain.low, domain.high, nullable=domain.nullable,
                                     missing=missing)
    if domain.sdtype == 'numerical':
        return DPNumericalTransformer(
            domain.low, domain.high, integer=domain.integer,
            decimal_places=domain.decimal_places, nullable=domain.nullable, missing=missing,
            scale=domain.scale or 'linear',
        )
    if domain.sdtype == 'datetime':
        return DPDatetimeTransformer(
            domain.low, domain.high, domain.datetime_format, nullable=domain.nullable,
            missing=missing,
        )
    return DPCategoricalTransformer(domain.categories, nullable=domain.nullable, missing=missing)
