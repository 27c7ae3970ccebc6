"""Behaviour guard: a fixed-noise fit of the bundled Adult sample releases what it did before.

``data/adult_releases_ref.json`` holds, per release of DP-HP and DP-MERF (epsilon 1, the bundled
domain, target 'income', random_state 0, noise seed 0), summary statistics of the noisy output
(sum, sum of squares, a position-weighted sum, the first and last 16 values) and its noise std,
recorded before the constructor moved its options into ``kernel`` / ``training`` objects. The
same fit through the new API must release the same values (within 1e-12).
"""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer
from sdv_dpkme.datasets import load_adult_sample
from sdv_dpkme.privacy.recorder import recording
from sdv_dpkme.privacy.testing import fixed_noise

REFERENCE = json.loads((Path(__file__).parent / 'data' / 'adult_releases_ref.json').read_text())


def _stats(noisy, std):
    v = noisy.ravel()
    return {'shape': list(noisy.shape), 'std': std, 'sum': float(v.sum()),
            'sumsq': float((v * v).sum()),
            'abs_weighted': float((np.abs(v) * np.arange(1, v.size + 1) / v.size).sum()),
            'head': [float(x) for x in v[:16]], 'tail': [float(x) for x in v[-16:]]}


@pytest.mark.parametrize('cls', [DPHPSynthesizer, DPMERFSynthesizer], ids=lambda c: c.__name__)
def test_fixed_noise_releases_match_the_reference(cls):
    data, metadata, domain = load_adult_sample()
    synth = cls(metadata, epsilon=1.0, delta=1e-5, domain=domain, target_column='income',
                random_state=0, verbose=False)
    with warnings.catch_warnings(), fixed_noise(0), recording(stop_when_done=True) as recorder:
        warnings.simplefilter('ignore')
        synth.fit({'adult': data})
    expected = REFERENCE[cls.__name__]
    assert [r.name for r in recorder.releases] == [r['name'] for r in expected]
    for release, reference in zip(recorder.releases, expected):
        got = _stats(release.noisy, release.std)
        assert got['shape'] == reference['shape'], release.name
        for key in ('std', 'sum', 'sumsq', 'abs_weighted', 'head', 'tail'):
            assert np.allclose(got[key], reference[key], rtol=1e-12, atol=1e-12), \
                (release.name, key)
