"""Issue 21, item 1: sampling streams in bounded chunks, and the faster decoding gives the same
rows as RDT's own reverse transform. No timings here: ``benchmarks/studies/sampling.py`` measures them."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import rdt
import torch
from sdv.metadata import Metadata
from sdv.sampling import Condition
from sdv.utils import load_synthesizer

from sdv_dpkme.domain.decoding import DPHyperTransformer
from sdv_dpkme.engines.generator import TabularGenerator
from sdv_dpkme.features import Block
from sdv_dpkme.synthesizers.base import BaseDPSynthesizer
from tests.conftest import (
    BOUNDS,
    CATEGORIES,
    FAST_BY_CLASS,
    SYNTHESIZERS,
    make,
    make_metadata,
    make_table,
)

MODELLED = ['age', 'income', 'city', 'flag', 'when', 'label']


def fit(cls, metadata=None, table=None, **kwargs):
    args = dict(epsilon=1.0, known_min_max_values=BOUNDS, known_categories=CATEGORIES,
                random_state=0, **FAST_BY_CLASS[cls.__name__][0])
    args.update(kwargs)
    synth = make(cls, metadata or make_metadata(), **args)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': make_table() if table is None else table})
    return synth


def spy_on_model(synth):
    """Record the number of rows of every call to the model's ``sample``."""
    calls = []
    original = synth._model.sample

    def sample(num_rows, **kwargs):
        calls.append(num_rows)
        return original(num_rows, **kwargs)

    synth._model.sample = sample
    return calls


def modelled_only_metadata():
    """The test table without id/PII columns (Faker would dominate a large sample)."""
    meta = make_metadata().to_dict()
    columns = meta['tables']['t']['columns']
    meta['tables']['t'] = {'columns': {c: columns[c] for c in MODELLED}}
    return Metadata.load_from_dict(meta)


def test_sample_streams_in_bounded_batches_issue21(cls):
    synth = fit(cls, target_column='label')
    expected = synth.sample(10)['t'].dtypes
    synth.sample_chunk_rows = 40
    calls = spy_on_model(synth)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # DP-KIP says that it repeats its rows
        out = synth.sample(250)['t']
    assert len(out) == 250 and out.index.equals(pd.RangeIndex(250))
    assert max(calls) <= 40 and sum(calls) == 250
    pd.testing.assert_series_equal(out.dtypes, expected)
    assert out['pk'].is_unique  # keys stay unique across chunks
    assert out['age'].between(*BOUNDS['age']).all()
    assert set(out['city'].dropna()) <= set(CATEGORIES['city'])


def test_default_sampling_is_bounded_without_a_batch_size_issue21():
    assert BaseDPSynthesizer.sample_chunk_rows <= 100_000
    cls = list(SYNTHESIZERS)[0]
    synth = fit(cls, metadata=modelled_only_metadata(), table=make_table()[MODELLED])
    calls = spy_on_model(synth)
    n = 2 * synth.sample_chunk_rows + 3
    out = synth.sample(n)['t']  # batch_size=None: SDV's one batch of n rows
    assert len(out) == n and list(out.columns) == MODELLED
    assert max(calls) <= synth.sample_chunk_rows and sum(calls) == n
    assert out['label'].isin(CATEGORIES['label']).all()


def test_conditional_sampling_streams_in_bounded_batches_issue21(cls):
    synth = fit(cls, target_column='label', epsilon=math.inf)
    synth.sample_chunk_rows = 16
    calls = spy_on_model(synth)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        out = synth.sample_from_conditions([Condition({'label': 'yes'}, num_rows=60)])['t']
    assert len(out) == 60 and (out['label'] == 'yes').all()
    assert max(calls) <= 16


def test_chunks_keep_sdv_batches_and_the_output_file_issue21(cls, tmp_path):
    synth = fit(cls)
    synth.sample_chunk_rows = 30
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        out = synth.sample(100, batch_size=50, output_folder_path=str(tmp_path / 'out'))['t']
    written = pd.read_csv(next((tmp_path / 'out').glob('*.csv')))
    assert len(out) == len(written) == 100
    assert list(written.columns) == list(out.columns)


def test_distilled_rows_are_the_same_in_chunks_or_at_once_issue21():
    cls = [c for c in SYNTHESIZERS if c.__name__ == 'DPKIPSynthesizer'][0]
    synth = fit(cls)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        whole = synth.sample(40)['t']
        synth.reset_sampling()
        synth.sample_chunk_rows = 7  # 6 distilled rows: chunks cut through the shuffled copies
        chunked = synth.sample(40)['t']
    pd.testing.assert_frame_equal(chunked.drop(columns=['pk']), whole.drop(columns=['pk']))


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_one_pass_decoding_equals_rdt_reverse_transform_issue21(cls, dtype):
    synth = fit(cls, target_column='label')
    hyper = synth._data_processor._hyper_transformer
    assert type(hyper) is DPHyperTransformer
    synth._set_random_state(3)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        raw = synth._sample(300).astype(dtype)
    raw.iloc[:5] = 0.5  # soft values and ties decode too, like RDT (the first bucket on ties)
    fast = hyper.reverse_transform_subset(raw)
    slow = rdt.HyperTransformer._reverse_transform(hyper, raw, prevent_subset=False)
    pd.testing.assert_frame_equal(fast, slow)
    pd.testing.assert_frame_equal(hyper.reverse_transform_subset(raw.iloc[:, ::-1]), slow)


def test_saved_synthesizers_load_with_the_one_pass_decoder_issue21(tmp_path):
    synth = fit(next(iter(SYNTHESIZERS)))
    synth.save(tmp_path / 's.pkl')
    loaded = load_synthesizer(str(tmp_path / 's.pkl'))
    assert type(loaded._data_processor._hyper_transformer) is DPHyperTransformer
    assert len(loaded.sample(20)['t']) == 20


def test_generator_draws_categories_and_nulls_from_its_heads_issue21():
    """Buckets at the released head probabilities, never the out-of-domain one; float32 rows."""
    blocks = [Block('c', 'categorical', (0, 1, 2, 3)), Block('x', 'numeric', (4, 5))]
    gen = TabularGenerator(blocks, n_columns=6, n_classes=1, latent_dim=2, hidden=(4,))
    probs = np.array([0.2, 0.5, 0.3])
    with torch.no_grad():
        for p in gen.parameters():
            p.zero_()
        last = gen.net[-1].bias
        last[:3] = torch.as_tensor(np.log(probs))
        last[3] = 20.0  # the out-of-domain bucket takes almost all the softmax mass
        last[4] = 0.0  # value 0.5
        last[5] = math.log(0.25 / 0.75)  # null with probability 0.25
    rows = gen.sample(torch.zeros(40_000, dtype=torch.long), torch.Generator().manual_seed(0))
    assert rows.dtype == np.float32 and rows.shape == (40_000, 6)
    onehot = rows[:, :4]
    assert (onehot.sum(axis=1) == 1).all() and (onehot[:, 3] == 0).all()
    np.testing.assert_allclose(onehot[:, :3].mean(axis=0), probs, atol=0.015)
    assert set(np.unique(rows[:, 5])) == {0.0, 1.0}
    assert abs(rows[:, 5].mean() - 0.25) < 0.015
    np.testing.assert_allclose(rows[:, 4], 0.5)


def test_non_finite_generator_outputs_are_an_error_issue21():
    blocks = [Block('c', 'categorical', (0, 1, 2))]
    gen = TabularGenerator(blocks, n_columns=3, n_classes=1, latent_dim=2, hidden=(4,))
    with torch.no_grad():
        gen.net[-1].bias[0] = float('nan')
    with pytest.raises(FloatingPointError, match='learning_rate'):
        gen.sample(torch.zeros(10, dtype=torch.long), torch.Generator().manual_seed(0))
