"""Sampling of a DP synthesizer: chunked generation, conditions and why one cannot be met.

All of it is post-processing of the fitted model: no private row is read.
"""

import contextlib

import numpy as np
import pandas as pd
from sdv.errors import SynthesizerInputError


class ChunkedSampling:
    """Mixin of ``BaseDPSynthesizer``: SDV's sampling in bounded chunks, the target drawn
    directly by a class-conditional model, and conditions checked against the public domain."""

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
