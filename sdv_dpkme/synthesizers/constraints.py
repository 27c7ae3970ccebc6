"""Constraints a DP synthesizer accepts, and SDV's checks of the private rows.

Only constraints whose fit keeps no row-level facts are accepted; they are fitted on an empty
table of public dtypes and enforced by reject sampling. FixedIncrements columns are snapped to
their increment inside the public bounds before that check (post-processing).
"""

import math
import warnings

import numpy as np
import pandas as pd
from sdv.cag import FixedIncrements, Inequality, OneHotEncoding, Range
from sdv.errors import SynthesizerInputError

from sdv_dpkme.privacy.diagnostics import sanitised_errors
from sdv_dpkme.synthesizers.distributed import private_rows
from sdv_dpkme.synthesizers.public_state import fit_constraints_publicly

# Constraints whose fit keeps no row-level facts; they are enforced by reject sampling only, so no
# derived column is ever modelled without a public domain.
SAFE_CONSTRAINTS = (Inequality, Range, FixedIncrements, OneHotEncoding)


class SafeConstraints:
    """Mixin of ``BaseDPSynthesizer``: safe constraints, their public fit and snapping, and the
    checks of the private rows (SDV's ``validate``, the minimum table size)."""

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
        rows = private_rows(data)
        if rows is not None:
            return self._validate_private_rows(rows)
        with warnings.catch_warnings():
            # SDV's advice (a datetime_format in the metadata) does not apply: detected formats
            # are not public here; warn_undeclared_types says what to declare instead
            warnings.filterwarnings('ignore', message="No 'datetime_format' is present")
            super().validate(data)

    def _increments(self):
        """``{column: increment}`` of the FixedIncrements constraints (public facts)."""
        return {c.column_name: c.increment_value for c in self._reject_sampling_constraints
                if isinstance(c, FixedIncrements)}

    def _check_increments(self, domains=None):
        """Every FixedIncrements column needs a multiple of its increment inside its bounds.

        A declared domain that has none is an error (run before any release: public facts). A
        discovered one is widened to the nearest multiples outside it, with a warning: its
        release is spent by then, and widening is post-processing of it and the public step."""
        for column, step in self._increments().items():
            domain = (self._domains if domains is None else domains).get(column)
            if domain is None or not domain.is_numeric:
                continue
            if math.ceil(domain.low / step) <= math.floor(domain.high / step):
                continue
            if domain.discovered:
                low = math.floor(domain.low / step) * step
                high = math.ceil(domain.high / step) * step
                warnings.warn(
                    f"The discovered bounds of '{column}' hold no multiple of its FixedIncrements "
                    f'increment {step}, so they are widened to [{low:g}, {high:g}]. Declare its '
                    'bounds to choose them.'
                )
                domain.low, domain.high = float(low), float(high)
                continue
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
