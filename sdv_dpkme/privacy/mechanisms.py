"""The Gaussian mechanism and the noise source it draws from."""

import hashlib
import math
import operator
import secrets
from fractions import Fraction

import numpy as np
import torch

from sdv_dpkme.privacy.recorder import active_recorder
from sdv_dpkme.privacy.report import Release

# Domain-separation tags: the keystream and the seed-to-key derivation never share an input.
_STREAM_TAG = b'sdv_dpkme.NoiseSource.stream.v1\x00'
_SEED_TAG = b'sdv_dpkme.NoiseSource.seed.v1\x00'
KEY_BYTES = 32


def _key_from_seed(seed):
    """256-bit key from any Python int (negative allowed): SHA-256 of a tag, the sign, the length
    and the magnitude, so seeds that differ in any bit (or only in sign) give different keys."""
    try:
        seed = operator.index(seed)
    except TypeError:
        raise TypeError(f'noise seed must be an integer, got {seed!r}') from None
    magnitude = abs(seed)
    body = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, 'big')
    sign = b'-' if seed < 0 else b'+'
    return hashlib.sha256(_SEED_TAG + sign + len(body).to_bytes(8, 'big') + body).digest()


def open_unit(words):
    """uint64 words -> floats in the open interval (0, 1): (top 52 bits + 1/2) / 2^52.

    Never 0 (the log stays finite) nor 1, and exact: m + 1/2 with m < 2^52 fits float64's 53-bit
    mantissa (with 53 bits, m + 1/2 would round, up to 1.0 for the largest m).
    """
    return ((words >> np.uint64(12)).astype(np.float64) + 0.5) * 2.0**-52


class NotPrivateWarning(UserWarning):
    """A fit is not differentially private: its noise comes from a test-only fixed seed."""


class NoiseSource:
    """Privacy noise RNG, separate from every RNG a user seeds.

    A SHAKE-256 keystream in counter mode: draw number c is
    ``shake_256(tag || key || c).digest(nbytes)`` with a 256-bit key. By default the key comes from
    the OS CSPRNG (``secrets``), so the noise cannot be brute-forced from released outputs (as a
    generator seeded with 32 or 64 bits can be). ``seed`` (any int, negative allowed) is a TEST-ONLY
    option: the key is then SHA-256 of the seed, the noise is known and the guarantee is void; the
    report says so. Both cases run the same generator. The source is never pickled, so a saved
    synthesizer cannot replay its noise.
    """

    def __init__(self, seed=None):
        self.fixed = seed is not None
        self._key = _key_from_seed(seed) if self.fixed else secrets.token_bytes(KEY_BYTES)
        self._counter = 0

    def describe(self):
        if self.fixed:
            return 'fixed noise seed (TEST ONLY: the noise is known, the DP guarantee is void)'
        return 'SHAKE-256 keystream, 256-bit key from the OS CSPRNG (secrets), never saved'

    def random_bytes(self, nbytes):
        """The next ``nbytes`` of the keystream (each call uses a fresh counter value)."""
        counter = self._counter
        self._counter += 1
        return hashlib.shake_256(_STREAM_TAG + self._key + counter.to_bytes(8, 'big')).digest(
            int(nbytes)
        )

    def random_words(self, n):
        """``n`` independent uniform 64-bit words (numpy uint64, fixed little-endian decoding)."""
        return np.frombuffer(self.random_bytes(8 * n), dtype='<u8').astype(np.uint64)

    def uniform(self, n):
        """``n`` uniforms in the open interval (0, 1) (see ``open_unit``)."""
        return open_unit(self.random_words(n))

    def normal(self, shape, std):
        """Tensor (float64, CPU) of N(0, std^2) entries: Box-Muller on keystream uniforms.

        |z| <= sqrt(-2 ln(2^-53)) ~ 8.57 since a uniform is never below 2^-53.
        """
        size = torch.Size((shape,) if isinstance(shape, int) else shape)
        n = size.numel()
        pairs = (n + 1) // 2
        u = self.uniform(2 * pairs)
        radius = np.sqrt(-2.0 * np.log(u[:pairs]))
        angle = (2.0 * math.pi) * u[pairs:]
        z = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])[:n]
        return torch.from_numpy(z).reshape(size) * std

    def sample_without_replacement(self, n, k):
        """Indices (LongTensor) of a uniformly random ordered subset of k of range(n).

        Every row gets an independent 64-bit key; the answer is the k rows with the smallest keys,
        smallest first. If any of the k + 1 smallest keys tie, all keys are redrawn: that event is
        symmetric in the rows, so conditioning on it keeps every ordered k-subset equally likely.
        """
        n, k = operator.index(n), operator.index(k)
        if not 0 <= k <= n:
            raise ValueError(f'need 0 <= k <= n, got k={k}, n={n}')
        while True:
            keys = self.random_words(n)
            if k == n:
                order = np.argsort(keys)
            else:
                smallest = np.argpartition(keys, k)[: k + 1]
                order = smallest[np.argsort(keys[smallest])]
            ranked = keys[order]
            if not np.any(ranked[1:] == ranked[:-1]):
                return torch.from_numpy(order[:k].astype(np.int64))

    def bernoulli(self, n, q):
        """Bool tensor of ``n`` independent Bernoulli(q) draws, 0 < q <= 1 (Poisson subsampling).

        Exact: row i is selected iff U_i < q, where U_i = 0.w1 w2 ... is a uniform real whose
        64-bit digits w1, w2, ... come from the keystream. w1 < floor(q 2^64) selects and
        w1 > floor(q 2^64) rejects; on equality (only if q 2^64 is not an integer) the next digit
        is compared with the fractional part, and so on. q is a float, a dyadic rational, so this
        ends after at most 17 digits.
        """
        n = operator.index(n)
        if n < 0:
            raise ValueError(f'need n >= 0, got {n}')
        if isinstance(q, bool) or not 0 < q <= 1:  # NaN fails too
            raise ValueError(f'selection probability must be in (0, 1], got {q!r}')
        if q == 1:
            return torch.ones(n, dtype=torch.bool)
        selected = np.zeros(n, dtype=bool)
        undecided = np.arange(n)
        rest = Fraction(float(q))  # exact; in (0, 1)
        while len(undecided) and rest > 0:
            scaled = rest * 2**64
            whole = int(scaled)  # floor, < 2^64
            words = self.random_words(len(undecided))
            selected[undecided[words < np.uint64(whole)]] = True
            undecided = undecided[words == np.uint64(whole)]
            rest = scaled - whole
        return torch.from_numpy(selected)

    def __getstate__(self):
        raise TypeError('the privacy noise source must never be saved')


class GaussianMechanism:
    """Adds N(0, (multiplier * sensitivity)^2) to every entry and records the release."""

    def __init__(self, accountant, noise):
        self.accountant = accountant
        self.noise = noise

    def release(self, value, *, name, description, sensitivity, noise_multiplier,
                dimension=None, details=None):
        """Noisy copy of ``value``.

        ``dimension`` overrides the reported size when the true size is itself private (a
        histogram over the values present in the data reports only its public part).
        """
        value = torch.as_tensor(value, dtype=torch.float64).cpu()
        std = noise_multiplier * sensitivity
        self.accountant.record(
            Release(
                name=name,
                description=description,
                mechanism='gaussian',
                sensitivity=float(sensitivity),
                noise_multiplier=float(noise_multiplier),
                noise_std=float(std),
                dimension=int(value.numel() if dimension is None else dimension),
                details=dict(details or {}),
            )
        )
        noisy = value.clone() if std == 0 else value + self.noise.normal(value.shape, std)
        recorder = active_recorder()  # None outside a privacy audit
        if recorder is not None:
            recorder.add(name, value, noisy, std, details)
        return noisy
