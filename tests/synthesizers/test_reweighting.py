"""DPReweightingSynthesizer (Balog et al.): public rows weighted by a DP release, bad inputs,
and what the weights estimate. The adversarial suite (tests/privacy) runs it in both modes."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sdv.errors import SynthesizerInputError
from sdv.utils import load_synthesizer

from sdv_dpkme import DPReweightingSynthesizer
from sdv_dpkme.privacy.testing import fixed_noise
from tests.conftest import make, BOUNDS, CATEGORIES, FAST_BY_CLASS, NULLABLE, make_metadata, make_table

MODELLED = ['age', 'income', 'city', 'flag', 'when', 'label']


def build(public=None, **kwargs):
    args = dict(epsilon=1.0, known_min_max_values=BOUNDS, known_categories=CATEGORIES,
                random_state=0, **FAST_BY_CLASS['DPReweightingSynthesizer'][0])
    args.update(kwargs)
    return make(DPReweightingSynthesizer, make_metadata(), public_data=public, **args)


def fit(synth, table):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': table})
    return synth


def biased_public(n=150, seed=7):
    """Public rows from the same population, but 'yes' rows three times as likely."""
    pool = make_table(2000, seed=seed)
    rng = np.random.default_rng(seed)
    p = np.where(pool['label'] == 'yes', 3.0, 1.0)
    pick = rng.choice(len(pool), size=n, replace=False, p=p / p.sum())
    return pool.iloc[pick].reset_index(drop=True)


def test_it_is_an_sdv_single_table_synthesizer():
    from sdv.single_table import DPReweightingSynthesizer as FromSDV

    assert FromSDV is DPReweightingSynthesizer


def test_samples_are_public_rows_and_a_private_canary_never_appears(tmp_path):
    private = make_table(400, seed=1)
    private.loc[0, ['age', 'income', 'city']] = [77, 123_456.78, 'Oslo']
    public = biased_public()
    public = public[public['income'].ne(123_456.78)].reset_index(drop=True)
    synth = fit(build(public), private)
    out = synth.sample(500)['t']
    assert 123_456.78 not in set(out['income'].dropna().round(2))
    # every sampled row is a public row (numbers decoded from [0, 1] and back: equal up to
    # float rounding, as 'age' is not declared integer here)
    key = ['age', 'income', 'city', 'flag', 'when', 'label']

    def rows(frame):
        frame = frame[key].copy()
        frame[['age', 'income']] = frame[['age', 'income']].astype(float).round(6)
        return set(map(tuple, frame.astype(str).to_numpy()))

    assert rows(out) <= rows(public)
    synth.save(tmp_path / 's.pkl')
    assert b'123456.78' not in (tmp_path / 's.pkl').read_bytes()
    loaded = load_synthesizer(str(tmp_path / 's.pkl'))
    pd.testing.assert_frame_equal(loaded.sample(50)['t'], load_synthesizer(
        str(tmp_path / 's.pkl')).sample(50)['t'])


@pytest.mark.slow
def test_weights_correct_a_biased_public_sample():
    """A weighted estimate from the public rows lands nearer the private share of 'yes' than
    the public rows' own share (epsilon = 10: the noise is small against the bias)."""
    private = make_table(3000, seed=2)
    public = biased_public(300)
    truth = (private['label'] == 'yes').mean()
    errors = []
    for seed in range(3):
        with fixed_noise(seed):
            synth = fit(build(public, epsilon=10.0), private)
        weights = synth.get_weights()
        assert weights.index.equals(public.index)
        yes = (public['label'] == 'yes').to_numpy()
        estimate = float(weights[yes].sum() / weights.sum())
        sampled = (synth.sample(3000)['t']['label'] == 'yes').mean()
        errors.append((abs(estimate - truth), abs(sampled - truth)))
    naive = abs((public['label'] == 'yes').mean() - truth)
    assert naive > 0.1
    assert np.mean([e for e, _ in errors]) < naive / 3
    assert np.mean([s for _, s in errors]) < naive / 3


def test_weighted_public_data_holds_both_weights():
    public = biased_public()
    public = public.rename(columns={})  # the user's frame is not changed
    synth = fit(build(public, l1_bound=1.0), make_table(300, seed=3))
    rows = synth.weighted_public_data()
    assert list(rows.columns) == [*public.columns, 'weight', 'sampling_probability']
    assert rows['weight'].abs().sum() <= 1.0 + 1e-9
    assert (rows['sampling_probability'] >= 0).all()
    assert rows['sampling_probability'].sum() == pytest.approx(1.0)
    assert 'weight' not in public.columns
    report = synth.get_privacy_report()
    (release,) = report.releases
    assert release.name == 'public_basis_embedding'
    assert release.sensitivity == pytest.approx(2 / 300)
    assert report.epsilon_spent == pytest.approx(1.0, rel=1e-6)
    assert any('public_data' in item for item in report.public_inputs)


def test_algorithm_2_points_are_weighted_and_decoded():
    synth = fit(build(None, steps=5), make_table(300, seed=3))
    rows = synth.weighted_public_data()
    assert set(MODELLED) <= set(rows.columns)
    assert rows['sampling_probability'].sum() == pytest.approx(1.0)
    assert len(synth.get_weights()) == len(rows)
    assert set(rows['city']) <= set(CATEGORIES['city'])
    assert synth.get_privacy_report().releases[0].name == 'random_feature_embedding'


@pytest.mark.parametrize('change,match', [
    (lambda p: p.assign(extra=1), r"unknown \['extra'\]"),
    (lambda p: p.drop(columns=['city']), r"missing \['city'\]"),
    (lambda p: p.iloc[:0], 'no rows'),
    (lambda p: p.assign(age=p['age'].astype(float).where(p.index != 0, np.nan)),
     "missing values in 'age'"),
    (lambda p: p.assign(city=p['city'].where(p.index != 0, 'Paris')),
     r"value\(s\) of 'city' outside its public categories.*'Paris'"),
    (lambda p: p.assign(age=p['age'].where(p.index != 0, 500)),
     r"'age' outside its public bounds \[18, 90\].*500"),
    (lambda p: p.to_numpy(), 'must be a pandas DataFrame'),
    (lambda p: {'other': p}, "without the table 't'"),
])
def test_bad_public_data_is_a_clear_error(change, match):
    public = change(biased_public(40))
    with pytest.raises(SynthesizerInputError, match=match):
        synth = build(public)
        fit(synth, make_table(100))
    if not isinstance(public, pd.DataFrame) or len(public) == 0:
        return


def test_missing_values_are_fine_where_the_domain_allows_them():
    public = biased_public(60)
    assert public['income'].isna().any() and 'income' in NULLABLE
    fit(build(public), make_table(100))


@pytest.mark.parametrize('arguments,match', [
    ({'l1_bound': 0.5}, 'l1_bound must be >= 1'),
    ({'n_features': 63}, 'n_features must be even'),
    ({'basis_tolerance': 2}, 'basis_tolerance'),
    ({'length_scale': 0}, 'length_scale must be a number > 0'),
    ({'max_basis_rows': 2.5}, 'max_basis_rows must be an integer'),
])
def test_bad_arguments_are_refused_at_construction(arguments, match):
    with pytest.raises(SynthesizerInputError, match=match):
        build(biased_public(40), **arguments)


def test_a_large_public_table_is_spanned_by_a_public_subset():
    public = biased_public(300)
    synth = fit(build(public, max_basis_rows=50), make_table(200, seed=5))
    (release,) = synth.get_privacy_report().releases
    assert release.dimension <= 50
    assert len(synth.get_weights()) == 300
    assert any('random subset of the 300' in note for note in synth.get_privacy_report().notes)


# ------------------------------------------- issue 18 scope 4: DP-HP / DP-MERF generated rows
def test_generated_rows_reweighted_to_the_releases_cost_no_epsilon(kme_cls):
    from tests.conftest import SYNTHESIZERS

    args = dict(epsilon=1.0, known_min_max_values=BOUNDS, known_categories=CATEGORIES,
                target_column='label', random_state=0, **SYNTHESIZERS[kme_cls]['fast'])
    with fixed_noise(3):
        plain = fit(make(kme_cls, make_metadata(), **args), make_table())
        pooled = fit(make(kme_cls, make_metadata(), reweight_generated_rows=60, **args),
                     make_table())
    assert pooled.get_privacy_report().releases == plain.get_privacy_report().releases
    pools = pooled._model.pools
    assert set(pools) == set(np.flatnonzero(pooled._model.class_weights > 0))
    for rows, weights in pools.values():
        assert rows.shape == (60, len(pooled._model.columns))
        assert weights.min() >= 0 and weights.sum() == pytest.approx(1.0)
        assert weights.max() > 1.5 / 60  # not uniform: the weights did something
    encoded = pooled._model.sample(200)
    stacked = np.vstack([rows for rows, _ in pools.values()])
    assert {tuple(r) for r in encoded.to_numpy()} <= {tuple(r) for r in stacked}
    assert len(pooled.sample(50)['t']) == 50


def test_reweighted_generated_rows_match_the_releases_better(tmp_path):
    """The pool's weighted embedding is closer to each released target than its uniform mean."""
    import torch

    from sdv_dpkme import DPHPSynthesizer
    from sdv_dpkme.engines import kme_training

    captured = []
    original = kme_training.reweighted_pools

    def spy(model, objectives, rows, rng, verbose=False):
        # the per-class targets: a pooled one ('one_way') is of the class mixture, not used
        captured.extend(o for o in objectives
                        if isinstance(o.target, torch.Tensor) and not o.pooled)
        return original(model, objectives, rows, rng, verbose)

    kme_training.reweighted_pools = spy
    try:
        synth = fit(make(
            DPHPSynthesizer, make_metadata(), epsilon=10.0, known_min_max_values=BOUNDS,
            known_categories=CATEGORIES, target_column='label', random_state=0,
            reweight_generated_rows=80, **FAST_BY_CLASS['DPHPSynthesizer'][0]), make_table(600))
    finally:
        kme_training.reweighted_pools = original
    total = {'uniform': 0.0, 'weighted': 0.0}
    for c, (rows, weights) in synth._model.pools.items():
        x = torch.as_tensor(rows, dtype=torch.float64)
        for o in captured:
            phi = o.feature_map(x).double()
            target = o.target[c].double()
            total['uniform'] += o.weight * float(((phi.mean(0) - target) ** 2).sum())
            total['weighted'] += o.weight * float(
                ((torch.as_tensor(weights) @ phi - target) ** 2).sum())
    assert total['weighted'] < total['uniform']
    synth.save(tmp_path / 's.pkl')
    loaded = load_synthesizer(str(tmp_path / 's.pkl'))
    pd.testing.assert_frame_equal(loaded.sample(30)['t'], load_synthesizer(
        str(tmp_path / 's.pkl')).sample(30)['t'])


def test_reweight_generated_rows_must_be_an_integer(kme_cls):
    with pytest.raises(SynthesizerInputError, match='reweight_generated_rows must be None'):
        make(kme_cls, make_metadata(), epsilon=1.0, reweight_generated_rows=0.5)
