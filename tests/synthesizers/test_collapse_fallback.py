"""Issue 42: a generator that collapsed on noise-dominated releases is trained again on the
releases shrunk toward a public prior (training.collapse_fallback), and the reports say so."""

import dataclasses
import warnings

import pytest
import torch

from sdv_dpkme import CollapsedGeneratorWarning
from sdv_dpkme.engines import kme, kme_training, prior
from sdv_dpkme.engines.prior import james_stein
from tests.conftest import make_table
from tests.synthesizers.test_contract import build


def _trainings(monkeypatch, collapses):
    """Record the objectives of every training; the collapse check answers from ``collapses``."""
    answers = iter(collapses)
    monkeypatch.setattr(kme_training, 'collapsed_classes',
                        lambda generator, classes: next(answers))
    seen = []
    original = kme.trained_generator

    def recorded(blocks, columns, target, weights, objectives, training, rng, verbose):
        seen.append(objectives)
        return original(blocks, columns, target, weights, objectives, training, rng, verbose)

    monkeypatch.setattr(kme, 'trained_generator', recorded)
    return seen


def test_a_collapsed_generator_is_trained_again_on_shrunk_releases_issue42(kme_cls, monkeypatch):
    seen = _trainings(monkeypatch, [[1], []])
    priors = []
    embeddings = prior.prior_embeddings
    monkeypatch.setattr(prior, 'prior_embeddings',
                        lambda *a, **k: priors.append(embeddings(*a, **k)) or priors[-1])
    synth = build(kme_cls, target_column='label', epsilon=0.3)
    with pytest.warns(CollapsedGeneratorWarning, match=r"label = 'yes'.*trained again.*prior"):
        synth.fit({'t': make_table()})
    assert len(seen) == 2 and len(priors) == 1
    fallback = synth.get_loss_values().attrs['collapse_fallback']
    assert fallback['collapsed'] == [1] and synth._model.collapsed_classes == []
    first, second = seen
    fixed = [o.name for o in first if isinstance(o.target, torch.Tensor)
             and o.noise_std is not None]
    assert fixed and set(fallback['factors']) == set(fixed)
    factors = {name: list(values) for name, values in fallback['factors'].items()}
    for before, after, centres in zip(first, second, priors[0]):
        if before.name not in fixed:
            assert after is before and centres is None
            continue
        assert after.feature_map is before.feature_map and after.noise_std is before.noise_std
        if before.pooled:
            weights = torch.as_tensor(synth._model.class_weights, dtype=torch.float64)
            centres = (weights[:, None] / weights.sum() * centres).sum(0, keepdim=True)
        for c in range(before.target.shape[0]):
            factor = factors[before.name].pop(0)
            t = before.target[c].double()
            shrunk, f = james_stein(t, centres[c], float(before.noise_std[c].double() ** 2))
            assert 0.0 <= factor <= 1.0 and f == pytest.approx(factor, abs=1e-4)
            torch.testing.assert_close(after.target[c].double(), shrunk, atol=1e-5, rtol=1e-5)
    assert not any(factors.values())  # one factor per class of every shrunk objective
    notes = synth.get_privacy_report().notes
    assert any('trained again on the releases shrunk toward a prior' in n for n in notes)
    assert 'collapse_fallback=True' in repr(synth.get_parameters()['training'])
    assert len(synth.sample(50)['t']) == 50


def test_the_fallback_can_be_turned_off_issue42(kme_cls, monkeypatch):
    seen = _trainings(monkeypatch, [[1]])
    synth = build(kme_cls, target_column='label', epsilon=0.3)
    synth.training = dataclasses.replace(synth.training, collapse_fallback=False)
    with pytest.warns(CollapsedGeneratorWarning, match=r'Refit with another random_state'):
        synth.fit({'t': make_table()})
    assert len(seen) == 1 and synth._model.collapsed_classes == [1]
    assert synth.get_loss_values().attrs['collapse_fallback'] is None
    assert not any('shrunk' in n for n in synth.get_privacy_report().notes)


def test_a_healthy_fit_trains_once_issue42(kme_cls, monkeypatch):
    seen = _trainings(monkeypatch, [[]])
    synth = build(kme_cls, target_column='label')
    with warnings.catch_warnings():
        warnings.simplefilter('error', CollapsedGeneratorWarning)
        synth.fit({'t': make_table()})
    assert len(seen) == 1 and synth.get_loss_values().attrs['collapse_fallback'] is None


def test_collapse_fallback_must_be_a_bool_issue42(kme_cls):
    from sdv.errors import SynthesizerInputError

    synth = build(kme_cls)
    with pytest.raises((SynthesizerInputError, ValueError), match='collapse_fallback'):
        synth.training = dataclasses.replace(synth.training, collapse_fallback='yes')


def test_minibatch_mode_keeps_its_one_training_after_a_collapse_issue42(monkeypatch):
    # each step's release is accounted once: a second training would need fresh releases
    from sdv_dpkme import DPMERFSynthesizer

    seen = _trainings(monkeypatch, [[1], []])
    synth = build(DPMERFSynthesizer, target_column='label', releases='minibatch',
                  minibatch_size=32)
    with pytest.warns(CollapsedGeneratorWarning, match=r'Refit with another random_state'):
        synth.fit({'t': make_table()})
    assert len(seen) == 1 and synth._model.collapsed_classes == [1]
    assert synth.get_loss_values().attrs['collapse_fallback'] is None
    assert len(synth.sample(20)['t']) == 20
