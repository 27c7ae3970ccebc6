"""The privacy noise source: a keyed SHAKE-256 stream that cannot be brute-forced."""

import copy
import hashlib
import itertools
import math
import pickle
import random

import numpy as np
import pytest
import torch
from scipy import stats

from sdv_dpkme.privacy import NoiseSource
from sdv_dpkme.privacy import mechanisms
from sdv_dpkme.privacy.mechanisms import open_unit


def _block(source, n=16):
    return source.normal((n,), 1.0)


@pytest.mark.parametrize('a,b', [
    (5, 5 + 2**32),  # torch kept only the low 32 bits of its seed: these gave the same noise
    (5, 5 + 2**64),
    (0, 2**32),
    (2**200, 2**200 + 1),
    (1, -1),
    (0, 2**63),
])
def test_seeds_that_differ_in_any_bit_give_different_noise(a, b):
    assert not torch.equal(_block(NoiseSource(seed=a)), _block(NoiseSource(seed=b)))


def test_default_key_is_256_bits_from_secrets(monkeypatch):
    a, b = NoiseSource(), NoiseSource()
    assert 8 * len(a._key) == 8 * len(b._key) == 256
    assert a._key != b._key
    assert not torch.equal(_block(a), _block(b))
    # one code path: a default source whose OS key happens to equal a seed's key is that stream
    calls = []

    def token_bytes(n):
        calls.append(n)
        return mechanisms._key_from_seed(7)

    monkeypatch.setattr(mechanisms.secrets, 'token_bytes', token_bytes)
    assert torch.equal(_block(NoiseSource()), _block(NoiseSource(seed=7)))
    assert calls == [32]


def test_stream_is_shake256_in_counter_mode():
    source = NoiseSource(seed=11)
    expected = [
        hashlib.shake_256(mechanisms._STREAM_TAG + source._key + c.to_bytes(8, 'big')).digest(40)
        for c in range(3)
    ]
    assert [source.random_bytes(40) for _ in range(3)] == expected
    assert len(set(expected)) == 3  # every call a fresh block


def test_source_holds_no_seeded_prng():
    for source in (NoiseSource(), NoiseSource(seed=1)):
        for value in vars(source).values():
            assert not isinstance(value, (torch.Generator, np.random.Generator,
                                          np.random.RandomState, random.Random))
        assert set(vars(source)) == {'fixed', '_key', '_counter'}


def test_same_seed_same_stream_and_calls_advance():
    a, b = NoiseSource(seed=3), NoiseSource(seed=3)
    first = [_block(a), a.sample_without_replacement(100, 10), _block(a)]
    second = [_block(b), b.sample_without_replacement(100, 10), _block(b)]
    assert all(torch.equal(x, y) for x, y in zip(first, second))
    assert not torch.equal(first[0], first[2])
    scaled = NoiseSource(seed=3).normal((4,), 2.5)
    assert torch.equal(scaled, 2.5 * NoiseSource(seed=3).normal(4, 1))
    assert torch.equal(_block(NoiseSource(seed=np.int64(9))), _block(NoiseSource(seed=9)))


@pytest.mark.parametrize('seed', [1.5, '3', b'x'])
def test_non_integer_seeds_are_refused(seed):
    with pytest.raises(TypeError, match='integer'):
        NoiseSource(seed=seed)


def test_normal_shape_dtype_and_scale():
    source = NoiseSource(seed=0)
    out = source.normal(torch.Size([3, 5]), 2.0)
    assert out.shape == (3, 5) and out.dtype == torch.float64 and out.device.type == 'cpu'
    assert source.normal((), 1.0).shape == () and source.normal((7,), 1.0).shape == (7,)
    assert source.normal((0, 4), 1.0).shape == (0, 4)


def test_gaussians_pass_mean_std_ks_and_tail_checks():
    z = NoiseSource(seed=2024).normal((200_000,), 1.0).numpy()
    assert abs(z.mean()) < 5 / math.sqrt(len(z))
    assert z.std() == pytest.approx(1.0, abs=0.01)
    assert stats.kstest(z, 'norm').pvalue > 1e-3
    assert (z > 0).mean() == pytest.approx(0.5, abs=0.005)
    assert np.abs(z).max() < 9 and z.min() < -3.5 and z.max() > 3.5
    # both Box-Muller outputs are used and independent: lag-1 correlation is ~0
    assert abs(np.corrcoef(z[:-1], z[1:])[0, 1]) < 0.01


def test_uniforms_are_never_zero_or_one_and_the_tail_is_bounded():
    extremes = np.array([0, 1, 2**63, 2**64 - 1], dtype=np.uint64)
    u = open_unit(extremes)
    assert u[0] == 2.0**-53 and u[-1] == 1 - 2.0**-53 and u[2] == 0.5 + 2.0**-53
    assert u[0] + u[-1] == 1  # symmetric grid: exact, no rounding at the top
    assert np.all((u > 0) & (u < 1))
    for word in (0, 2**64 - 1):
        source = NoiseSource(seed=0)
        source.random_words = lambda n, w=word: np.full(n, w, dtype=np.uint64)
        z = source.normal((6,), 1.0)
        assert torch.isfinite(z).all() and z.abs().max() <= math.sqrt(106 * math.log(2)) + 1e-12


def test_sample_without_replacement_is_exact_and_distinct():
    source = NoiseSource(seed=5)
    for n, k in [(50, 7), (1000, 999), (10, 10), (10, 0), (1, 1), (0, 0)]:
        idx = source.sample_without_replacement(n, k)
        assert idx.dtype == torch.int64 and len(idx) == k
        assert len(set(idx.tolist())) == k and all(0 <= i < n for i in idx.tolist())
    assert sorted(source.sample_without_replacement(20, 20).tolist()) == list(range(20))
    idx = source.sample_without_replacement(30, 4)
    assert torch.equal((torch.arange(30.0) * 2)[idx], idx.double() * 2)  # indexes a tensor
    for n, k in [(3, 4), (-1, 0), (5, -1)]:
        with pytest.raises(ValueError):
            source.sample_without_replacement(n, k)


def test_every_ordered_subset_is_equally_likely():
    source = NoiseSource(seed=17)
    draws = 20_000
    counts = dict.fromkeys(itertools.permutations(range(5), 2), 0)
    for _ in range(draws):
        counts[tuple(source.sample_without_replacement(5, 2).tolist())] += 1
    assert len(counts) == 20
    observed = np.array(list(counts.values()))
    assert stats.chisquare(observed).pvalue > 1e-3
    perms = dict.fromkeys(itertools.permutations(range(3)), 0)
    for _ in range(6000):
        perms[tuple(source.sample_without_replacement(3, 3).tolist())] += 1
    assert len(perms) == 6 and stats.chisquare(list(perms.values())).pvalue > 1e-3


def test_ties_among_the_selected_keys_redraw_everything():
    source = NoiseSource(seed=0)
    draws = iter([
        np.array([5, 5, 9], dtype=np.uint64),  # the two smallest tie: the choice would be biased
        np.array([7, 3, 9], dtype=np.uint64),
    ])
    source.random_words = lambda n: next(draws)
    assert source.sample_without_replacement(3, 1).tolist() == [1]
    # a tie above the (k+1)-th smallest key cannot change the answer: no redraw
    source.random_words = lambda n: np.array([1, 9, 9], dtype=np.uint64)
    assert source.sample_without_replacement(3, 1).tolist() == [0]


def test_noise_source_cannot_be_saved_or_copied():
    for source in (NoiseSource(), NoiseSource(seed=1)):
        with pytest.raises(TypeError):
            pickle.dumps(source)
        with pytest.raises(TypeError):
            copy.deepcopy(source)


def test_descriptions():
    assert NoiseSource(seed=1).describe().startswith('fixed noise seed (TEST ONLY: ')
    text = NoiseSource().describe()
    assert 'SHAKE-256' in text and '256-bit' in text and not text.startswith('fixed')
