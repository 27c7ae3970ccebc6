"""Issue 42 item 7: the generator's training rows are put in layout order by slices, not by a
column gather; the rows and their gradients are exactly the gather's."""

import copy

import pytest
import torch

import sdv_dpkme.engines.generator as module
from sdv_dpkme.engines.generator import TabularGenerator, _column_runs, _take_columns
from sdv_dpkme.features import Block

BLOCKS = [Block('a', 'numeric', (0,)), Block('b', 'categorical', (1, 2, 3)),
          Block('c', 'numeric', (4, 5)), Block('d', 'categorical', (6, 7, 8, 9))]


def test_column_runs_take_what_a_gather_takes_issue42():
    x = torch.arange(30.0).reshape(3, 10)
    for index in ([0, 1, 2], [4, 5, 0, 6, 7, 1, 9], [9, 8, 7], [3]):
        assert torch.equal(_take_columns(x, _column_runs(index)), x[:, index])


@pytest.mark.parametrize('links', [(), ('b', 'd')])
def test_training_rows_and_gradients_equal_the_gather_issue42(links):
    torch.manual_seed(0)
    # columns 10-11 belong to no block (the target's): zeros
    gen = TabularGenerator(BLOCKS, 12, 2, latent_dim=4, hidden=(8,), numeric_noise=0.1,
                           category_smoothing=0.05, category_links=links)
    z, y = torch.randn(6, 4), torch.eye(2)[[0, 1, 0, 1, 1, 0]]
    noise, draws = torch.randn(6, 3), torch.rand(6, 2)
    reference = copy.deepcopy(gen)  # before any call: no runs cached
    rows, additive = gen.training_rows(z, y, noise, draws)
    assert all(runs is not None for runs in gen._column_runs.values())  # sliced, here
    (rows.square().sum() + additive.sum()).backward()
    with pytest.MonkeyPatch.context() as patch:  # the reference: the plain column gathers
        patch.setattr(module, 'MAX_COLUMN_RUNS', 0)
        ref_rows, ref_additive = reference.training_rows(z, y, noise, draws)
    assert all(runs is None for runs in reference._column_runs.values())
    (ref_rows.square().sum() + ref_additive.sum()).backward()
    assert torch.equal(rows, ref_rows) and torch.equal(additive, ref_additive)
    for mine, ref in zip(gen.parameters(), reference.parameters()):
        assert (mine.grad is None and ref.grad is None) or torch.equal(mine.grad, ref.grad)
