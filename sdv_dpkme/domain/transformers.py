"""DP-safe RDT transformers: every parameter comes from a public domain, nothing from the data.

``fit`` learns nothing from the column's values, and the RNG seed RDT would hash from the first five
values (leak L9 of the research notes) is replaced by a constant. Out-of-domain values are clipped
(numerical, datetime) or mapped to an explicit out-of-domain bucket (categorical). Whether a column
may be missing is a public declaration (``nullable``): then missing values are imputed with a constant
and their indicator is modelled (so missingness goes through the mechanism); otherwise a missing
value is an error that says how to declare the column nullable.
"""

import warnings

import numpy as np
import pandas as pd
from rdt.transformers.base import BaseTransformer

FIXED_SEED = 0
MISSING = '__missing__'
OTHER = '__other__'


class PublicDomainTransformer(BaseTransformer):
    """Base: constant seeds and no data-dependent state."""

    def _set_seed(self, data):
        self.random_seed = FIXED_SEED
        self.reset_randomization()

    def _fit(self, columns_data):
        pass  # the domain is public: nothing to learn

    def _check_missing(self, null):
        if null.any() and not self.nullable:
            raise ValueError(
                f"Column '{self.get_input_column()}' has missing values but was not declared "
                f"nullable; pass nullable_columns=[..., '{self.get_input_column()}'] (its missing "
                'rate is then learned under DP).'
            )


class DPNumericalTransformer(PublicDomainTransformer):
    """Clip to public [low, high], scale to [0, 1], impute 0.5, output a null indicator."""

    INPUT_SDTYPE = 'numerical'
    SUPPORTED_SDTYPES = ['numerical']

    def __init__(self, low, high, integer=False, decimal_places=None, nullable=False):
        super().__init__()
        self.low, self.high = float(low), float(high)
        self.integer = integer
        self.decimal_places = decimal_places
        self.nullable = nullable
        self.output_properties = {None: {'sdtype': 'float', 'next_transformer': None}}
        if nullable:
            self.output_properties['is_null'] = {'sdtype': 'float', 'next_transformer': None}

    def _to_float(self, data):
        try:
            return pd.to_numeric(data, errors='raise').astype(float)
        except (ValueError, TypeError):
            raise ValueError(
                f"Column '{self.get_input_column()}' is numerical but holds values that are not "
                'numbers; fix the data or declare the column categorical in the metadata.'
            ) from None

    def _transform(self, data):
        values = self._to_float(data).to_numpy()
        null = np.isnan(values)
        self._check_missing(null)
        outside = (~null) & ((values < self.low) | (values > self.high))
        if outside.any():
            warnings.warn(
                f"Column '{self.get_input_column()}': values outside the public bounds "
                f'[{self.low:g}, {self.high:g}] are clipped to them.'
            )
        scaled = (np.clip(values, self.low, self.high) - self.low) / (self.high - self.low)
        scaled[null] = 0.5
        if not self.nullable:
            return scaled
        return np.column_stack([scaled, null.astype(float)])

    def _decode(self, unit):
        return self.low + np.clip(unit, 0.0, 1.0) * (self.high - self.low)

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

    def __init__(self, low, high, datetime_format=None, nullable=False):
        super().__init__(low, high, integer=True, nullable=nullable)
        self.datetime_format = datetime_format

    def _to_float(self, data):
        try:
            ts = pd.to_datetime(data, format=self.datetime_format)
        except (ValueError, TypeError) as err:
            raise ValueError(
                f"Column '{self.get_input_column()}' holds values that are not dates in format "
                f"{self.datetime_format!r}: {err}"
            ) from None
        values = ts.astype('int64').astype(float)
        values[ts.isna()] = np.nan
        return values

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

    def __init__(self, categories, nullable=False):
        super().__init__()
        self.categories = list(categories)
        self.nullable = nullable
        self.buckets = [*self.categories, *([MISSING] if nullable else []), OTHER]
        self.output_properties = {
            f'value{i}': {'sdtype': 'float', 'next_transformer': None}
            for i in range(len(self.buckets))
        }

    def _codes(self, data):
        series = pd.Series(np.asarray(data, dtype=object))
        codes = np.full(len(series), len(self.buckets) - 1)  # OTHER
        for i, category in enumerate(self.categories):
            codes[(series == category).to_numpy()] = i
        null = series.isna().to_numpy()
        self._check_missing(null)
        codes[null] = len(self.categories)
        return codes

    def _transform(self, data):
        codes = self._codes(data)
        if (codes == len(self.buckets) - 1).any():
            warnings.warn(
                f"Column '{self.get_input_column()}': values outside the public categories are "
                'mapped to an out-of-domain bucket (sampled as missing).'
            )
        return np.eye(len(self.buckets))[codes]

    def _reverse_transform(self, data):
        codes = np.asarray(data, dtype=float).argmax(axis=1)
        decoded = np.array([*self.categories, None, None], dtype=object)
        return decoded[codes]


DP_TRANSFORMERS = (DPNumericalTransformer, DPCategoricalTransformer)


def transformer_for(domain):
    """The DP-safe transformer for a ColumnDomain."""
    if domain.sdtype == 'numerical':
        return DPNumericalTransformer(
            domain.low, domain.high, integer=domain.integer,
            decimal_places=domain.decimal_places, nullable=domain.nullable,
        )
    if domain.sdtype == 'datetime':
        return DPDatetimeTransformer(
            domain.low, domain.high, domain.datetime_format, nullable=domain.nullable
        )
    return DPCategoricalTransformer(domain.categories, nullable=domain.nullable)
