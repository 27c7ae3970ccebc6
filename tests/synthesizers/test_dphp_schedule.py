"""When DP-HP's product-kernel releases are matched during training (``product_schedule``)."""

import pytest
import torch
from sdv.errors import SynthesizerInputError

from sdv_dpkme import DPHPSynthesizer
from sdv_dpkme.engines.generator import Objective
from sdv_dpkme.features import Block
from tests.conftest import BOUNDS, CATEGORIES, FAST, make, make_metadata, make_table

BLOCKS = [Block('a', 'numeric', (0,)), Block('b', 'numeric', (1,)),
          Block('c', 'categorical', (2, 3, 4)), Block('d', 'numeric', (5,))]


def build(**kwargs):
    args = dict(FAST, epsilon=1.0, known_min_max_values=BOUNDS, known_categories=CATEGORIES,
                random_state=0)
    args.update(kwargs)
    return make(DPHPSynthesizer, make_metadata(), **args)


def active_products(synth, steps):
    terms = synth._kernel_terms(BLOCKS, torch.Generator().manual_seed(0), steps)
    products = [t for t in terms if t.group == 'product_kernel']
    objectives = [Objective(t.label, t.feature_map, None, first_step=t.first_step,
                            last_step=t.last_step, period=t.period, phase=t.phase)
                  for t in products]
    return len(products), [[i for i, o in enumerate(objectives) if o.active(s)]
                           for s in range(steps)]


def test_objective_period_and_phase():
    o = Objective('x', None, None, first_step=2, last_step=9, period=3, phase=1)
    assert [s for s in range(12) if o.active(s)] == [4, 7]


def test_cycle_matches_every_subset_until_the_end():
    steps = 12
    count, active = active_products(
        build(product_schedule='cycle', product_redraws=4, product_columns=2, steps=steps), steps
    )
    assert count == 4
    assert all(len(a) == 1 for a in active)  # one product map per step: same cost as 'blocks'
    assert [a[0] for a in active] == [s % 4 for s in range(steps)]


def test_cycle_is_the_default():
    assert make(DPHPSynthesizer, make_metadata(), epsilon=1.0).training.product_schedule == 'cycle'


def test_blocks_ends_on_the_last_subset_alone():
    steps = 12
    count, active = active_products(
        build(product_schedule='blocks', product_redraws=4, product_columns=2, steps=steps), steps
    )
    assert count == 4
    assert [a[0] for a in active] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]


def test_cycle_fits_and_releases_the_same_plan():
    table = make_table()
    reports = {}
    for schedule in ('blocks', 'cycle'):
        synth = build(product_schedule=schedule, target_column='label')
        synth.fit({'t': table})
        reports[schedule] = synth.get_privacy_report().to_frame()
        assert synth.get_loss_values()['Product kernel loss'].notna().all()
    columns = ['name', 'noise_multiplier']
    assert reports['blocks'][columns].equals(reports['cycle'][columns])


def test_unknown_schedule_is_a_clear_error():
    with pytest.raises(SynthesizerInputError, match="product_schedule must be 'blocks' or"):
        build(product_schedule='random')
