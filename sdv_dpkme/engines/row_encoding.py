"""Row encoding for the one pass: encoded rows in unit-box chunks, for their partial sums.

It sits below both ``scale`` (the distributed pass) and ``synthesizers`` (the in-memory fit),
which share it.

- ``FrameRows``: the processed (encoded) pandas frame of an in-memory fit, turned into unit-box
  float64 chunks one at a time, so the whole float64 copy of the table is never held.
- ``PartitionEncoder``: what a worker needs to turn raw rows into partial sums: the fitted data
  processor (public-domain transformers only), the encoded layout and the feature maps (drawn on
  the driver with the model RNG). All of it is public; it is pickled to the workers.
"""

import warnings

from tqdm.auto import tqdm

import numpy as np

from sdv_dpkme.domain.transformers import PublicDomainTransformer
from sdv_dpkme.domain.unit_box import unit_box, unit_box_array
from sdv_dpkme.engines.accumulate import ClassSums, chunk_rows, class_sums, row_floats

#: raw rows encoded at a time by a worker (the encoded block, not the features, is the bound)
MAX_BLOCK_FLOATS = 8_000_000
#: feature chunks of the distributed pass: at most this many rows and floats of the widest map.
#: Larger than the in-memory fit's, whose chunking is kept so its releases stay bit-identical;
#: larger still was slower (the random features' cos/sin leave the cache).
PASS_CHUNK_ROWS = 320
PASS_CHUNK_FLOATS = 16_000_000


def labels_of(x, target):
    """Class of every encoded row: the hot bucket of the target's one-hot block."""
    return None if target is None else x[:, list(target.columns)].argmax(axis=1)


class _Notes:
    """Record the warnings of a block of work, to repeat each distinct one once."""

    def __enter__(self):
        self._catcher = warnings.catch_warnings(record=True)
        self.caught = self._catcher.__enter__()
        warnings.simplefilter('always')
        return self

    def __exit__(self, *exc):
        self._catcher.__exit__(*exc)
        self.messages = frozenset((w.category, str(w.message)) for w in self.caught)


def repeat_notes(notes):
    """Re-emit, once each, the warnings recorded while the rows were encoded."""
    for category, message in sorted(notes, key=lambda item: item[1]):
        warnings.warn(message, category, stacklevel=3)


class FrameRows:
    """The processed frame of an in-memory fit as a row source (chunks of the unit box)."""

    def __init__(self, processed, target):
        self.frame = processed
        self.target = target

    def __len__(self):
        return len(self.frame)

    def to_numpy(self):
        """The whole encoded table (for engines that need every row at hand: DP-SGD, minibatch)."""
        x = unit_box(self.frame)
        return x, labels_of(x, self.target)

    def accumulate(self, feature_maps, n_classes, verbose=False):
        n = len(self.frame)
        if n == 0:
            raise ValueError('cannot embed an empty table')
        # the chunks of the in-memory pass, so the sums (and releases) are those of one array
        chunk = chunk_rows(feature_maps, n)
        total = ClassSums.zeros(n_classes, feature_maps)
        with _Notes() as notes:
            starts = range(0, n, chunk)
            for start in tqdm(starts, desc='Embedding private rows', disable=not verbose,
                              leave=False):
                x = unit_box(self.frame.iloc[start : start + chunk])
                class_sums(x, labels_of(x, self.target), n_classes, feature_maps, chunk=chunk,
                           into=total)
        repeat_notes(notes.messages)
        return total


def pass_chunk_rows(feature_maps):
    """Rows per feature chunk of the distributed pass (at least 64)."""
    widest = max((row_floats(fm) for fm in feature_maps), default=1)
    return max(64, min(PASS_CHUNK_ROWS, PASS_CHUNK_FLOATS // max(widest, 1)))


class PartitionEncoder:
    """Raw rows (a pandas chunk of the private table) -> their ``ClassSums``.

    Applies the same public transformers, the same unit-box check and clipping and the same
    feature maps as an in-memory fit; the same bad values raise the same errors. With
    ``record_warnings`` the warnings are returned in ``ClassSums.notes`` instead of shown (a
    worker process's warnings would not reach the user); sources that run encoders in threads
    (Dask) leave it off, since recording swaps the process-wide warning state.
    """

    record_warnings = False

    def __init__(self, processor, columns, encoded_columns, target, feature_maps, n_classes,
                 checks=None):
        self.processor = processor
        self.checks = checks  # a ``TableChecks``: SDV's checks of the rows, before encoding
        self.columns = list(columns)  # raw columns the processor reads
        self.encoded_columns = list(encoded_columns)
        self.target = target
        self.feature_maps = feature_maps
        self.n_classes = n_classes
        self.block = max(1024, MAX_BLOCK_FLOATS // max(len(self.encoded_columns), 1))
        self.array_encoder = ArrayEncoder.build(processor, self.columns, self.encoded_columns)
        self.chunk = pass_chunk_rows(feature_maps)

    def missing_columns(self, columns):
        return [c for c in self.columns if c not in set(columns)]

    def __call__(self, frame):
        missing = self.missing_columns(frame.columns)
        if missing:
            raise ValueError(f'The rows lack the column(s) {missing} of the metadata.')
        if self.checks is not None:
            self.checks(frame[self.columns])
        if not self.record_warnings:
            return self._encode(frame)
        with _Notes() as notes:
            total = self._encode(frame)
        total.notes = notes.messages
        return total

    def encode(self, raw):
        """The raw rows' encoded unit-box array (the processor's transform, then ``unit_box``)."""
        if self.array_encoder is not None:
            return unit_box_array(self.array_encoder(raw))
        return unit_box(self.processor.transform(raw)[self.encoded_columns])

    def _encode(self, frame):
        total = ClassSums.zeros(self.n_classes, self.feature_maps)
        for start in range(0, len(frame), self.block):
            x = self.encode(frame.iloc[start : start + self.block][self.columns])
            class_sums(x, labels_of(x, self.target), self.n_classes, self.feature_maps,
                       chunk=min(self.chunk, len(x)), into=total)
        return total


class ArrayEncoder:
    """The data processor's ``transform`` of raw rows, written straight into one float64 array.

    Only for a processor whose transformers with outputs are all public-domain DP transformers,
    each reading one raw column, that together write every encoded column once (``build`` gives
    None otherwise, and the processor's own transform runs); generators (ids, PII), which write
    nothing, are skipped as in the fast reverse transform (``domain.decoding``). It calls each
    transformer's own ``_transform`` on a copy of its column, as RDT's ``transform`` does, so the
    values, warnings and errors are the same; what it skips is RDT's frame assembly (a copy and a
    concat of the whole frame per column), which took most of the encoding time. Our
    transformers draw no randomness, so RDT's random-state bracket around ``_transform`` changes
    nothing either.
    """

    def __init__(self, steps, width):
        self.steps = steps  # (transformer, raw column, positions of its outputs)
        self.width = width

    @classmethod
    def build(cls, processor, columns, encoded_columns):
        hyper = getattr(processor, '_hyper_transformer', None)
        sequence = getattr(hyper, '_transformers_sequence', None)
        if not sequence:
            return None
        position = {c: i for i, c in enumerate(encoded_columns)}
        if len(position) != len(encoded_columns):
            return None
        steps, written = [], []
        for transformer in sequence:
            inputs = list(getattr(transformer, 'columns', None) or [])
            outputs = list(transformer.get_output_columns())
            if not outputs:  # a generator (ids, PII): its transform only drops the column
                continue
            if (not isinstance(transformer, PublicDomainTransformer) or len(inputs) != 1
                    or inputs[0] not in columns or not all(o in position for o in outputs)):
                return None
            steps.append((transformer, inputs[0], np.array([position[o] for o in outputs])))
            written += outputs
        if sorted(written) != sorted(encoded_columns):
            return None
        return cls(steps, len(encoded_columns))

    def __call__(self, raw):
        x = np.empty((len(raw), self.width), dtype=np.float64)
        for transformer, column, positions in self.steps:
            out = np.asarray(transformer._transform(raw[column].copy()), dtype=np.float64)
            x[:, positions] = out.reshape(len(raw), len(positions))
        return x
