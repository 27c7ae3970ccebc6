"""Issue 21 item 5: small tables (fit cost that follows n, collapse warnings, readable losses)."""

import warnings

import numpy as np
import pytest
import torch
from sdv.errors import SynthesizerInputError

from sdv_dpkme import CollapsedGeneratorWarning
from sdv_dpkme.engines import kme_plan, kme_training
from sdv_dpkme.engines.generator import TabularGenerator, collapsed_classes
from sdv_dpkme.features import Block
from tests.conftest import KME_CLASSES, make_table
from tests.synthesizers.test_contract import build


def _generator(seed=0):
    torch.manual_seed(seed)
    blocks = [Block('a', 'numeric', (0,)), Block('b', 'numeric', (1,)),
              Block('c', 'categorical', (2, 3, 4))]
    return TabularGenerator(blocks, 5, n_classes=2, latent_dim=4, hidden=(16,))


def test_collapsed_classes_flags_a_constant_generator_only_issue21():
    fresh = _generator()
    assert collapsed_classes(fresh, [0, 1]) == []
    dead = _generator()
    last = dead.net[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.zero_()
        last.bias[2] = 20.0  # one category always
    assert collapsed_classes(dead, [0, 1]) == [0, 1]
    with torch.no_grad():
        last.bias[2] = 0.0  # categories now uniform, the numeric part still one point
    assert collapsed_classes(dead, [0, 1]) == [0, 1]


def _numeric_part(stds, category_bias=0.0):
    """A generator whose numeric outputs have the given stds (of the unit range) and whose
    categorical head draws uniformly (category_bias 0) or one bucket."""
    blocks = [Block(f'x{i}', 'numeric', (i,)) for i in range(len(stds))]
    blocks.append(Block('c', 'categorical', tuple(range(len(stds), len(stds) + 3))))
    torch.manual_seed(0)
    gen = TabularGenerator(blocks, len(stds) + 3, n_classes=2, latent_dim=4, hidden=(8,),
                           numeric_noise=0.0)
    gen.forward = lambda z, y, noise=None, draws=None: torch.cat(
        [0.5 + torch.as_tensor(stds, dtype=torch.float32) * torch.randn(len(z), len(stds)),
         torch.softmax(torch.tensor([category_bias, 0.0, 0.0]), 0).expand(len(z), 3)], 1)
    return gen


@pytest.mark.parametrize('stds, collapsed', [
    ([0.02, 0.02], [0, 1]),  # every numeric column parked, heads spread: the stop 61 miss
    ([0.02, 0.2], []),  # one numeric column varies: rows differ
    ([0.02], []),  # a single numeric column may be concentrated in the data itself
    ([0.05, 0.05], []),
])
def test_a_numeric_part_that_is_one_point_counts_as_a_collapse_issue42(stds, collapsed):
    assert collapsed_classes(_numeric_part(stds), [0, 1]) == collapsed


def test_a_single_numeric_column_needs_the_whole_row_to_collapse_issue42():
    assert collapsed_classes(_numeric_part([0.005], category_bias=20.0), [0, 1]) == [0, 1]
    assert collapsed_classes(_numeric_part([0.02], category_bias=20.0), [0, 1]) == []


def test_a_collapsed_fit_warns_with_the_class_name_issue21(kme_cls, monkeypatch):
    monkeypatch.setattr(kme_training, 'collapsed_classes', lambda generator, classes: [1])
    synth = build(kme_cls, target_column='label')
    with pytest.warns(CollapsedGeneratorWarning, match=r"label = 'yes'.*random_state"):
        synth.fit({'t': make_table()})


def test_a_healthy_fit_gives_no_collapse_warning_issue21(kme_cls):
    synth = build(kme_cls, target_column='label')
    with warnings.catch_warnings():
        warnings.simplefilter('error', CollapsedGeneratorWarning)
        synth.fit({'t': make_table()})


def test_loss_values_show_each_term_above_its_public_noise_floor_issue21():
    cls = KME_CLASSES[0]
    synth = build(cls, target_column='label', epsilon=0.5)
    synth.fit({'t': make_table()})
    losses = synth.get_loss_values()
    floors = losses.attrs['noise_floor']
    report = synth.get_privacy_report().to_frame()
    weights = synth._model.class_weights
    sampled = weights > 0
    for name, floor in floors.items():
        group = {'Sum kernel': 'sum_kernel', 'Marginals': 'marginals', 'Pairs': 'pairs'}.get(name)
        if group is not None:  # floor = P * sum_c l_c (std / w_c)^2, P features per class,
            # l_c: each class's loss term is weighted by its public noise weight (issue 42)
            row = report[report['name'] == group].iloc[0]
            per_class = row['dimension'] / len(weights)
            lam = losses.attrs['class_loss_weights']
            expected = per_class * np.sum(lam * (row['noise_std'] / weights[sampled]) ** 2)
            assert floor == pytest.approx(expected, rel=1e-9), name
        above = losses[f'{name} above noise floor']
        np.testing.assert_allclose(losses[f'{name} loss'] - above, floor, rtol=1e-9)
    assert {'Sum kernel', 'Marginals', 'Pairs'} <= set(floors)


def test_steps_and_batch_size_auto_follow_the_number_of_rows_issue21(kme_cls, monkeypatch):
    synth = build(kme_cls, batch_size='auto', steps='auto')
    assert [synth._batch_size(n) for n in (10, 215, 600, 3000, 10**6)] == [
        256, 256, 600, 1024, 1024]
    cap = 800  # DP-HP's and DP-MERF's max_auto_steps (issue 42)
    assert synth.training.max_auto_steps == cap
    assert [synth._steps(n) for n in (10, 215, 600, 3000, 10**6)] == [
        200, 215, min(600, cap), cap, cap]
    seen = {}
    original = kme_training.train_generator

    def spy(generator, objectives, classes, steps, batch_size, *args, **kwargs):
        seen.update(steps=steps, batch=batch_size)
        return original(generator, objectives, classes, 3, batch_size, *args, **kwargs)

    monkeypatch.setattr(kme_training, 'train_generator', spy)
    synth.fit({'t': make_table(n=300)})
    assert seen == {'steps': 300, 'batch': 300}


@pytest.mark.parametrize('bad', ['big', 0, 1, 2.5, True, None])
def test_bad_batch_size_is_a_clear_error_issue21(kme_cls, bad):
    with pytest.raises(SynthesizerInputError, match="batch_size must be 'auto'"):
        build(kme_cls, batch_size=bad)


@pytest.mark.parametrize('bad', ['many', 0, 2.5, True, None])
def test_bad_steps_is_a_clear_error_issue21(kme_cls, bad):
    with pytest.raises(SynthesizerInputError, match="steps must be 'auto'"):
        build(kme_cls, steps=bad)


def test_class_proportions_all_swamped_by_noise_fall_back_to_uniform():
    # Seen in CI: a tiny table at epsilon 0.5 released every proportion <= 0 and the fit crashed
    # after its budget was spent. Any function of the release is post-processing.
    with pytest.warns(UserWarning, match='sampled uniformly'):
        weights = kme_plan.noisy_class_weights(np.array([-0.2, 0.0004, -1e-9]))
    np.testing.assert_allclose(weights, [1 / 3] * 3)
    np.testing.assert_allclose(kme_plan.noisy_class_weights(np.array([0.3, -0.1, 0.1])),
                               [0.75, 0, 0.25])


def test_a_fit_whose_class_release_is_all_noise_still_samples_every_class(monkeypatch):
    original = kme_plan.noisy_class_weights
    monkeypatch.setattr(kme_plan, 'noisy_class_weights',
                        lambda released, **kw: original(-np.abs(released)))
    synth = build(KME_CLASSES[0], target_column='label')
    with pytest.warns(UserWarning, match='sampled uniformly'):
        synth.fit({'t': make_table()})
    np.testing.assert_allclose(synth._model.class_weights[:-1], 0.5)
    assert synth._model.class_weights[-1] == 0  # the out-of-domain bucket is never sampled
    assert set(synth.sample(200)['t']['label']) == {'yes', 'no'}
