"""The generator's Adam: the same update as torch's on CPU, and a fit that never imports torch's
compiler stack (torch.optim's optimizers import torch._dynamo when built or stepped: seconds of
imports for one update rule, issue 42)."""

import subprocess
import sys

import pytest
import torch
from torch import nn

from sdv_dpkme.engines.adam import Adam
from tests.cli_helpers import cli_env

COMPILER = ('torch._dynamo', 'torch._inductor', 'sympy')


def _net(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))


def test_same_weights_as_torch_adam_with_a_changing_learning_rate():
    ours, theirs = _net(0), _net(0)
    unused = nn.Parameter(torch.ones(2))  # no gradient: skipped by both
    opt_ours = Adam([*ours.parameters(), unused], lr=0.05)
    opt_theirs = torch.optim.Adam([*theirs.parameters(), unused], lr=0.05)
    gen = torch.Generator().manual_seed(1)
    for step in range(30):
        x = torch.randn(16, 5, generator=gen)
        for net, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            net(x).pow(2).sum().backward()
            opt.step()
        opt_ours.lr = 0.05 * (1 - step / 30)
        for group in opt_theirs.param_groups:
            group['lr'] = 0.05 * (1 - step / 30)
    moved = False
    for a, b, start in zip(ours.parameters(), theirs.parameters(), _net(0).parameters()):
        assert torch.equal(a, b)
        moved |= not torch.equal(a, start)
    assert moved
    assert torch.equal(unused, torch.ones(2))


@pytest.mark.parametrize('name', ['DPHPSynthesizer', 'DPReweightingSynthesizer'])
def test_a_fit_imports_no_compiler_module(name):
    code = (
        'import sys, warnings\n'
        'warnings.simplefilter("ignore")\n'
        'from tests.conftest import FAST_BY_CLASS, make, make_metadata, make_table\n'
        f'from sdv_dpkme import {name} as cls\n'
        'from tests.conftest import BOUNDS, CATEGORIES\n'
        'synth = make(cls, make_metadata(), epsilon=1.0, target_column="label",\n'
        '             known_min_max_values=BOUNDS, known_categories=CATEGORIES,\n'
        f'             **FAST_BY_CLASS[{name!r}][0])\n'
        'synth.fit({"t": make_table()})\n'
        'synth.sample(20)\n'
        f'print([m for m in {COMPILER!r} if m in sys.modules])\n'
    )
    result = subprocess.run([sys.executable, '-c', code], env=cli_env(), capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == '[]'
