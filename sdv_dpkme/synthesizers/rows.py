"""Row sources on the SDV side: encoded rows in chunks, for the partial sums of the one pass.

- ``FrameRows``: the processed (encoded) pandas frame of an in-memory fit, turned into unit-box
  float64 chunks one at a time, so the whole float64 copy of the table is never held.
- ``PartitionEncoder``: what a worker needs to turn raw rows into partial sums: the fitted data
  processor (public-domain transformers only), the encoded layout and the feature maps (drawn on
  the driver with the model RNG). All of it is public; it is pickled to the workers.
"""

import warnings

from tqdm.auto import tqdm

from sdv_dpkme.engines.accumulate import ClassSums, chunk_rows, class_sums
from sdv_dpkme.synthesizers.public_state import unit_box

#: raw rows encoded at a time by a worker (the encoded block, not the features, is the bound)
MAX_BLOCK_FLOATS = 8_000_000


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


class PartitionEncoder:
    """Raw rows (a pandas chunk of the private table) -> their ``ClassSums``.

    Applies the same public transformers, the same unit-box check and clipping and the same
    feature maps as an in-memory fit; the same bad values raise the same errors. With
    ``record_warnings`` the warnings are returned in ``ClassSums.notes`` instead of shown (a
    worker process's warnings would not reach the user); sources that run encoders in threads
    (Dask) leave it off, since recording swaps the process-wide warning state.
    """

    record_warnings = False

    def __init__(self, processor, columns, encoded_columns, target, feature_maps, n_classes):
        self.processor = processor
        self.columns = list(columns)  # raw columns the processor reads
        self.encoded_columns = list(encoded_columns)
        self.target = target
        self.feature_maps = feature_maps
        self.n_classes = n_classes
        self.block = max(1024, MAX_BLOCK_FLOATS // max(len(self.encoded_columns), 1))

    def missing_columns(self, columns):
        return [c for c in self.columns if c not in set(columns)]

    def __call__(self, frame):
        missing = self.missing_columns(frame.columns)
        if missing:
            raise ValueError(f'The rows lack the column(s) {missing} of the metadata.')
        if not self.record_warnings:
            return self._encode(frame)
        with _Notes() as notes:
            total = self._encode(frame)
        total.notes = notes.messages
        return total

    def _encode(self, frame):
        total = ClassSums.zeros(self.n_classes, self.feature_maps)
        for start in range(0, len(frame), self.block):
            raw = frame.iloc[start : start + self.block][self.columns]
            encoded = self.processor.transform(raw)[self.encoded_columns]
            x = unit_box(encoded)
            class_sums(x, labels_of(x, self.target), self.n_classes, self.feature_maps,
                       into=total)
        return total
