"""Step 4b: the most associated categorical pairs released again with their own share (issue 16)."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from sdv_dpkme.engines import kme, kme_pairs
from sdv_dpkme.engines.kernel_terms import shared_terms
from sdv_dpkme.engines.link_structure import pair_scores, select_pairs
from sdv_dpkme.features import Block, PairwiseKernelMap
from sdv_dpkme.privacy import GaussianMechanism, Ledger, NoiseSource, PrivacyAccountant
from tests.engines.test_link_structure import BLOCKS, table

SHARES = {'pairs': 0.75, 'selected_pairs': 0.25}


def ledger(epsilon, seed=7):
    accountant = PrivacyAccountant(epsilon, 1e-5)
    noise = NoiseSource(seed)
    return Ledger(accountant, noise, GaussianMechanism(accountant, noise))


def released(x, epsilon, selection, seed=7):
    """(ledger, pairs map, objectives) of steps 1-4b for one class, no generator."""
    terms = shared_terms(BLOCKS, None, 1.0, 0.1, 1.0, 10**6)
    led = ledger(epsilon, seed)
    extra = ['selected_pairs'] if selection else []
    sigmas = led.accountant.calibrate(kme.plan_releases(terms, SHARES, False, extra))
    stats = kme.one_pass(x.numpy(), 1, terms, False)
    weights, divisor, objectives = kme.released_objectives(stats, None, terms, sigmas, led)
    if selection:
        kme.release_selected_pairs(stats, terms, objectives, weights, divisor, sigmas,
                                   selection, led)
    return led, terms[0].feature_map, objectives


def test_select_pairs_takes_the_strongest():
    scores = pd.DataFrame({'child': ['b', 'c', 'd'], 'parent': ['a', 'a', 'b'],
                           'signal': [0.1, -0.2, 0.3], 'noise': [0.01] * 3})
    assert select_pairs(scores, 2) == [('b', 'd'), ('a', 'b')]
    assert select_pairs(scores, 9) == [('b', 'd'), ('a', 'b'), ('a', 'c')]


def test_spanning_selection_joins_every_column_before_adding_strong_redundant_pairs():
    pairs = [('a', 'b', 0.5), ('a', 'c', 0.4), ('b', 'c', 0.3), ('c', 'd', 0.1), ('b', 'd', 0.05)]
    scores = pd.DataFrame([(child, parent, signal, 0.01) for parent, child, signal in pairs],
                          columns=['child', 'parent', 'signal', 'noise'])
    assert select_pairs(scores, 3) == [('a', 'b'), ('a', 'c'), ('b', 'c')]
    assert select_pairs(scores, 3, spanning=True) == [('a', 'b'), ('a', 'c'), ('c', 'd')]
    assert select_pairs(scores, 4, spanning=True) == [('a', 'b'), ('a', 'c'), ('c', 'd'),
                                                      ('b', 'c')]
    assert select_pairs(scores, 1, spanning=True) == [('a', 'b')]
    assert kme.PairSelection().size(4) == 3 and kme.PairSelection(5).size(4) == 5


def test_the_most_associated_pair_is_released_again_from_the_same_pass():
    x = table(4000)
    led, fmap, objectives = released(x, 1.0, kme.PairSelection(1, 2.0))
    releases = {r.name: r for r in led.accountant.releases}
    assert list(releases) == ['pairs', 'selected_pairs']
    chosen = releases['selected_pairs']
    assert chosen.details['pairs'] == ['a x b']  # b = 3 - a; c is independent of both
    # two categorical columns: sqrt(2)/n; the 'pairs' map, 3 of whose 6 pairs hold the numeric
    # x: sqrt((3 * 2 + 3 * 4) / 6)/n
    assert chosen.sensitivity == pytest.approx(math.sqrt(2) / 4000) and chosen.dimension == 25
    assert releases['pairs'].sensitivity == pytest.approx(math.sqrt(3) / 4000)
    assert led.accountant.epsilon_spent() == pytest.approx(1.0, rel=1e-6)
    # its precision share: (sigma_pairs / sigma_selected)^2 = 0.25 / 0.75
    ratio = (releases['pairs'].noise_multiplier / chosen.noise_multiplier) ** 2
    assert ratio == pytest.approx(1 / 3)
    extra = objectives[-1]
    assert (extra.name, extra.weight, extra.feature_map.pair_names()) == \
        ('Selected pairs', 2.0, [('a', 'b')])
    # the combined table's cell noise: inverse-variance over both copies, each with its own
    # sensitivity (cells of the 6-pair map are scaled by sqrt(6), of the 1-pair map by 1)
    cell_pairs = releases['pairs'].noise_multiplier * math.sqrt(3) / 4000 * math.sqrt(6)
    cell_chosen = chosen.noise_multiplier * math.sqrt(2) / 4000
    assert float(extra.noise_std[0]) == pytest.approx(
        (cell_pairs ** -2 + cell_chosen ** -2) ** -0.5, rel=1e-9)


def test_without_noise_both_targets_hold_the_exact_joint_table():
    x = table(3000)
    _, fmap, objectives = released(x, math.inf, kme.PairSelection(1))
    exact = (x[:, 0:5].T @ x[:, 10:15] / len(x))[None]
    torch.testing.assert_close(fmap.joint_tables(objectives[0].target, [('a', 'b')])['a', 'b'],
                               exact)
    sub = objectives[-1].feature_map
    torch.testing.assert_close(objectives[-1].target * sub.n_pairs ** 0.5, exact.reshape(1, -1))


def test_the_combined_table_is_closer_to_the_truth_than_the_pairs_release_alone():
    x = table(4000)
    exact = x[:, 0:5].T @ x[:, 10:15] / len(x)
    errors = []
    for selection in (None, kme.PairSelection(1)):
        # same seed: the 'pairs' release draws the same noise first in both fits
        _, fmap, objectives = released(x, 1.0, selection, seed=11)
        table_ab = fmap.joint_tables(objectives[0].target, [('a', 'b')])['a', 'b'][0]
        errors.append(float((table_ab - exact).norm()))
    # the selected copy has 1/3 of the precision but 1/6 of the pairs: 2x the precision per
    # cell, so the combination has 3x the precision: about 1/sqrt(3) of the error
    assert errors[1] < 0.8 * errors[0]


def test_no_selected_release_without_two_categorical_columns_in_the_pairs_term():
    blocks = [BLOCKS[0], BLOCKS[1]]  # one categorical, one numeric
    terms = shared_terms(blocks, None, 1.0, 0.1, 1.0, 10**6)
    assert kme_pairs.selectable(terms) == ['a']
    x = table(500)
    training = kme.Training(3, 64, 1e-2, 4, (8,), 0.0, torch.device('cpu'))
    led = ledger(1.0)
    model = kme.fit(x.numpy()[:, :6], None, blocks, None, [f'c{i}' for i in range(6)], led,
                    terms, SHARES, training, torch.Generator().manual_seed(0), False,
                    kme.PairSelection(4))
    assert [r.name for r in led.accountant.releases] == ['pairs']
    assert led.accountant.epsilon_spent() == pytest.approx(1.0, rel=1e-6)
    assert model.loss_values.attrs['selected_pairs'] is None
    assert 'Selected pairs loss' not in model.loss_values


def test_training_derives_the_selected_terms_moments_from_the_pairs_term(monkeypatch):
    from sdv_dpkme.engines.generator import TabularGenerator, train_generator

    _, fmap, objectives = released(table(2000), 1.0, kme.PairSelection(1, 2.0))
    sub = objectives[-1].feature_map

    def history(derive):
        if not derive:
            monkeypatch.setattr(sub, 'within', None)
        gen = TabularGenerator(BLOCKS, n_columns=15, n_classes=1, latent_dim=4, hidden=(8,))
        torch.manual_seed(0)
        gen.apply(lambda m: m.reset_parameters() if hasattr(m, 'reset_parameters') else None)
        calls = []
        own = PairwiseKernelMap.class_moments
        monkeypatch.setattr(PairwiseKernelMap, 'class_moments',
                            lambda self, x, y: calls.append(self) or own(self, x, y))
        out = train_generator(gen, objectives, [0], steps=3, batch_size=32, learning_rate=0.01,
                              device='cpu', torch_generator=torch.Generator().manual_seed(0),
                              verbose=False)
        monkeypatch.undo()
        return out, calls

    derived, derived_calls = history(True)
    direct, direct_calls = history(False)
    # one (n, W) x (W, W) pass per step instead of two, and the same losses
    assert all(m is fmap for m in derived_calls) and len(derived_calls) == 3
    assert len(direct_calls) == 6
    pd.testing.assert_frame_equal(derived.drop(columns='Step'), direct.drop(columns='Step'),
                                  rtol=1e-5)


def _hub_and_hierarchy(n=60000, seed=0):
    """h, d, m share a 'not in universe' category (60% of rows); otherwise h is independent of
    d, and m = d's group of 4 (a detailed / major hierarchy). One-hot with an out-of-domain
    bucket each, as the encoder lays them out."""
    rng = np.random.default_rng(seed)
    niu = rng.random(n) < 0.6
    h = np.where(niu, 0, rng.integers(1, 3, n))
    d = np.where(niu, 0, rng.integers(1, 17, n))
    m = np.where(d == 0, 0, (d - 1) // 4 + 1)
    widths = {'h': 4, 'd': 18, 'm': 6}
    x, blocks, at = [], [], 0
    for name, codes in (('h', h), ('d', d), ('m', m)):
        x.append(np.eye(widths[name])[codes])
        blocks.append(Block(name, 'categorical', tuple(range(at, at + widths[name]))))
        at += widths[name]
    return torch.as_tensor(np.hstack(x)), blocks


def test_tv_score_sees_a_hierarchy_that_association_energy_ranks_below_a_shared_category():
    x, blocks = _hub_and_hierarchy()
    fmap = PairwiseKernelMap(blocks, 0.1)
    y = torch.ones(len(x), 1, dtype=torch.float64)
    exact = fmap.class_sums(x, y) / len(x)
    scores = pair_scores(fmap, exact, torch.zeros(1), [1.0], ['h', 'd', 'm'])
    by_pair = scores.set_index(['parent', 'child'])
    # energy: the 'not in universe' cell rules it, the 12 hierarchy cells add little
    assert by_pair.signal['h', 'm'] > by_pair.signal['h', 'd'] > by_pair.signal['d', 'm']
    assert by_pair.tv['d', 'm'] > by_pair.tv['h', 'd'] + 0.08
    assert by_pair.tv['h', 'd'] == pytest.approx(0.48, abs=0.01)  # 2 * 0.6 * 0.4
    assert ('d', 'm') not in select_pairs(scores, 2, spanning=True)
    assert select_pairs(scores, 2, spanning=True, by='tv')[0] == ('d', 'm')


def test_tv_score_is_debiased_for_the_noise_of_many_cells():
    x, blocks = _hub_and_hierarchy(seed=1)
    rng = np.random.default_rng(2)
    x[:, 4:22] = torch.as_tensor(np.eye(18)[rng.integers(1, 17, len(x))])  # d independent
    fmap = PairwiseKernelMap(blocks, 0.1)
    y = torch.ones(len(x), 1, dtype=torch.float64)
    exact = fmap.class_sums(x, y) / len(x)
    cell = 0.003  # one cell's noise std in probability units, as on Census's 'pairs' release
    noisy = exact + cell / fmap.n_pairs ** 0.5 * torch.randn(
        exact.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    noisy_scores = pair_scores(fmap, noisy, torch.tensor([cell]), [1.0], ['h', 'd', 'm'])
    tv = noisy_scores.set_index(['parent', 'child']).tv
    # h x d: 72 cells of noise alone would read as 0.09 of total variation
    assert abs(tv['h', 'd']) < 0.02
    exact_tv = pair_scores(fmap, exact, torch.zeros(1), [1.0], ['h', 'd', 'm'])
    truth = exact_tv.set_index(['parent', 'child']).tv['h', 'm']
    # a cell far from independence reads |delta| unbiased, so the correction over-subtracts
    # there: at most cells * s * sqrt(2 / pi) / 2 (24 cells: 0.029)
    assert truth - 24 * cell * 0.4 - 0.005 <= tv['h', 'm'] <= truth + 0.005
