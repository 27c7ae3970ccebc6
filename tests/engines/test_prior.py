"""Issue 42: the collapse fallback's James-Stein shrinkage toward a public prior (engines.prior)."""

import numpy as np
import pytest
import torch

from sdv_dpkme.engines.generator import Objective
from sdv_dpkme.engines.prior import james_stein, prior_rows, shrunk_objectives
from sdv_dpkme.features import Block
from sdv_dpkme.features.one_way import OneWayMap


def test_james_stein_keeps_what_stands_out_of_the_noise_and_nothing_else():
    centre = torch.zeros(50, dtype=torch.float64)
    value = torch.full((50,), 0.1, dtype=torch.float64)  # ||t - m||^2 = 0.5
    same, factor = james_stein(value, centre, 0.0)
    assert factor == 1.0 and torch.equal(same, value)  # no noise: the release as it is
    gone, factor = james_stein(value, centre, 0.5 / 48)  # all of the gap is noise
    assert factor == 0.0 and torch.equal(gone, centre)
    part, factor = james_stein(value, centre, 0.25 / 48)  # half of it
    assert factor == pytest.approx(0.5)
    torch.testing.assert_close(part, centre + 0.5 * value)
    small, factor = james_stein(value[:2], centre[:2], 1.0)  # d <= 2: no shrinkage exists
    assert factor == 1.0 and torch.equal(small, value[:2])


def test_prior_rows_are_uniform_over_the_public_layout_and_of_one_class():
    blocks = [Block('a', 'numeric', (0, 1)), Block('b', 'categorical', (2, 3, 4))]

    class Target:
        columns, width = (5, 6), 2

    x = prior_rows(blocks, 7, Target, 1, 6000, torch.Generator().manual_seed(0))
    assert x[:, 0].min() >= 0 and x[:, 0].max() <= 1 and abs(float(x[:, 0].mean()) - 0.5) < 0.02
    assert torch.all(x[:, 1] == 0)  # nullable value present
    assert torch.all(x[:, 2:5].sum(1) == 1)
    np.testing.assert_allclose(x[:, 2:5].mean(0).numpy(), 1 / 3, atol=0.02)
    assert torch.all(x[:, 5] == 0) and torch.all(x[:, 6] == 1)


def _objective(target, std, pooled=False):
    blocks = [Block('b', 'categorical', (0, 1, 2, 3)), Block('c', 'categorical', (4, 5, 6))]
    return blocks, Objective('One-way', OneWayMap(blocks), target.float(),
                             noise_std=torch.tensor(std), pooled=pooled)


def test_a_noise_dominated_release_goes_to_the_prior_embedding():
    # the one-way map's prior embedding is every table of shares uniform, over sqrt(2) blocks
    prior = torch.tensor([1 / 4] * 4 + [1 / 3] * 3) / np.sqrt(2)
    released = prior + torch.tensor([0.3, -0.3, 0.0, 0.0, 0.2, 0.0, -0.2])
    blocks, objective = _objective(released[None], [10.0])  # noise far above the gap
    (out,), factors = shrunk_objectives([objective], blocks, 7, None, [1.0],
                                        torch.Generator().manual_seed(0))
    assert factors == {'One-way': [0.0]}
    torch.testing.assert_close(out.target[0].double(), prior.double(), atol=0.01, rtol=0)
    assert out.noise_std is objective.noise_std and out.feature_map is objective.feature_map


def test_a_clean_release_is_kept_and_untargeted_objectives_pass_through():
    prior = torch.tensor([1 / 4] * 4 + [1 / 3] * 3) / np.sqrt(2)
    released = prior + torch.tensor([0.3, -0.3, 0.0, 0.0, 0.2, 0.0, -0.2])
    blocks, clean = _objective(released[None], [1e-4])
    per_step = Objective('Per step', clean.feature_map, lambda step: released[None])
    unknown = Objective('No noise known', clean.feature_map, released[None].float())
    out, factors = shrunk_objectives([clean, per_step, unknown], blocks, 7, None, [1.0],
                                     torch.Generator().manual_seed(0))
    assert factors['One-way'][0] > 0.999
    torch.testing.assert_close(out[0].target, clean.target, atol=1e-4, rtol=0)
    assert out[1] is per_step and out[2] is unknown and set(factors) == {'One-way'}
