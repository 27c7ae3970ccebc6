"""The Gaussian mechanism and the noise source it draws from."""

import secrets

import torch

from sdv_dpkme.privacy.report import Release


class NoiseSource:
    """Privacy noise RNG, separate from every RNG a user seeds.

    By default it is seeded from the OS's cryptographic source. ``seed`` is a TEST-ONLY option:
    with a known seed the noise is known and the guarantee is void; the report says so.
    The source is never pickled, so a saved synthesizer cannot replay its noise.
    """

    def __init__(self, seed=None):
        self.fixed = seed is not None
        self._generator = torch.Generator(device='cpu')
        self._generator.manual_seed(int(seed) if self.fixed else secrets.randbits(63))

    def describe(self):
        if self.fixed:
            return 'fixed noise seed (TEST ONLY: the noise is known, the DP guarantee is void)'
        return 'torch CPU generator seeded with 63 bits from the OS cryptographic source'

    def normal(self, shape, std):
        return torch.randn(shape, generator=self._generator, dtype=torch.float64) * std

    def permutation(self, n):
        return torch.randperm(n, generator=self._generator)

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
        if std == 0:
            return value.clone()
        return value + self.noise.normal(value.shape, std)
