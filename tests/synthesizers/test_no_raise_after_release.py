"""Issue 42 item 3: no fit raises after a release.

What can fail is checked before the first release (discovery's, the integer vote's), from public
facts or as the curator's own value errors; what can only be known after a release (discovered
domains) warns and the fit finishes with a usable model. The discovery cases (one category left,
nothing released) are in test_discovery.py.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sdv.cag import FixedIncrements
from sdv.errors import SynthesizerInputError
from sdv.metadata import Metadata

from sdv_dpkme import DPHPSynthesizer, DPMERFSynthesizer, DPReweightingSynthesizer
from sdv_dpkme.domain import ColumnDomain
from sdv_dpkme.privacy.testing import fixed_noise
from sdv_dpkme.synthesizers import base
from tests.conftest import (
    BOUNDS,
    CATEGORIES,
    FAST,
    FAST_BY_CLASS,
    FAST_MERF,
    make,
    make_metadata,
    make_table,
)

FAST_HP = {k: v for k, v in FAST.items() if k != 'nullable_columns'}


def _metadata(**columns):
    return Metadata.load_from_dict({'tables': {'t': {'columns': {
        name: {'sdtype': sdtype} for name, sdtype in columns.items()}}}})


def _table(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({'age': rng.integers(18, 90, n).astype(float),
                         'city': rng.choice(['Lima', 'Oslo', 'Rome'], n),
                         'label': rng.choice(['no', 'yes'], n)})


@pytest.fixture
def ledgers(monkeypatch):
    """Every ledger a fit opens (the fit drops its own when it ends, even by an error)."""
    opened = []
    original = base.Ledger.open

    def spy(*args, **kwargs):
        opened.append(original(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(base.Ledger, 'open', spy)
    return opened


def _nothing_released(ledgers):
    return not any(ledger.accountant.releases for ledger in ledgers)


@pytest.mark.parametrize('bad', ['missing', 'not a number'])
def test_a_bad_declared_value_stops_the_fit_before_discovery_spends(bad, ledgers):
    """A declared column's values are checked before discovery's release: the error (the
    curator's own data) used to come from the transform, after the release."""
    table = _table()
    table['age'] = table['age'].astype(object)
    table.loc[7, 'age'] = None if bad == 'missing' else 'forty'
    synth = make(DPHPSynthesizer, _metadata(age='numerical', city='categorical',
                                            label='categorical'),
                 epsilon=1.0, known_min_max_values={'age': (18, 90)}, integer_columns=['age'],
                 **FAST_HP)
    with fixed_noise(0), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        with pytest.raises(Exception) as err:
            synth.fit({'t': table})
    assert 'age' in str(err.value)
    assert _nothing_released(ledgers)
    assert not synth._fitted


def test_minibatch_larger_than_the_table_is_refused_before_discovery_spends(ledgers):
    synth = make(DPMERFSynthesizer, _metadata(age='numerical', city='categorical'),
                 epsilon=1.0, releases='minibatch', minibatch_size=5000,
                 known_min_max_values={'age': (18, 90)}, integer_columns=['age'],
                 **{k: v for k, v in FAST_MERF.items() if k != 'nullable_columns'})
    with fixed_noise(0), pytest.raises(SynthesizerInputError, match='minibatch_size'):
        synth.fit({'t': _table()[['age', 'city']]})
    assert _nothing_released(ledgers)


def test_a_table_with_only_its_target_is_refused_before_discovery_spends(ledgers):
    synth = make(DPHPSynthesizer, _metadata(label='categorical'), epsilon=1.0,
                 target_column='label', **FAST_HP)
    with fixed_noise(0), pytest.raises(SynthesizerInputError, match='no modelled column'):
        synth.fit({'t': _table()[['label']]})
    assert _nothing_released(ledgers)


def test_discovered_bounds_without_a_multiple_of_the_increment_widen_and_warn():
    """FixedIncrements on a discovered column whose bounds hold no multiple (only when a bin
    cleared by noise alone: the rows are multiples) used to be an error after the release; the
    bounds are widened (post-processing of the release and the public step), with a warning.
    A declared column is still an error, before any release."""
    synth = make(DPHPSynthesizer, _metadata(age='numerical', dose='numerical'), epsilon=1.0,
                 known_min_max_values={'age': (18, 90)}, **FAST_HP)
    synth.add_constraints([FixedIncrements(column_name='dose', increment_value=1)])
    synth._domains['dose'] = ColumnDomain(name='dose', sdtype='numerical', low=0.3, high=0.5,
                                          discovered=True)
    with pytest.warns(UserWarning, match="The discovered bounds of 'dose' hold no multiple"):
        synth._check_increments()
    assert (synth._domains['dose'].low, synth._domains['dose'].high) == (0.0, 1.0)
    declared = {'dose': ColumnDomain(name='dose', sdtype='numerical', low=0.3, high=0.5)}
    with pytest.raises(SynthesizerInputError, match='cannot be met'):
        synth._check_increments(declared)


def _reweighting(public, **kwargs):
    bounds = dict(BOUNDS)
    categories = {'label': CATEGORIES['label']}  # 'city' is discovered
    args = dict(epsilon=1.0, known_min_max_values=bounds, known_categories=categories,
                random_state=0, **FAST_BY_CLASS['DPReweightingSynthesizer'][0])
    args.update(kwargs)
    return make(DPReweightingSynthesizer, make_metadata(), public_data=public, **args)


def test_public_rows_outside_a_discovered_domain_warn_and_the_fit_finishes():
    """DP reweighting of public rows: a public value outside a *discovered* domain (known only
    after its release) used to stop the fit; now the rows are kept as they are, with a warning.
    Outside a declared domain it is still an error, raised before any release."""
    public = make_table(60, seed=9)
    public.loc[0, 'city'] = 'Paris'  # a public row; discovery never releases 'Paris'
    synth = _reweighting(public)
    with fixed_noise(0), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter('always')
        synth.fit({'t': make_table(3000, seed=1)})
    messages = [str(w.message) for w in record]
    assert any("public_data has values of ['city'] outside their discovered domains" in m
               for m in messages)
    assert 'domain_discovery' in set(synth.get_privacy_report().to_frame()['name'])
    assert len(synth.sample(20)['t']) == 20


def test_public_rows_outside_a_declared_domain_stop_the_fit_before_discovery(ledgers):
    public = make_table(60, seed=9)
    public.loc[0, 'age'] = 500
    synth = _reweighting(public)
    with fixed_noise(0), pytest.raises(SynthesizerInputError, match="'age' outside"):
        synth.fit({'t': make_table(3000, seed=1)})
    assert _nothing_released(ledgers)


def test_non_finite_training_steps_are_skipped_and_the_fit_finishes(monkeypatch):
    """A training step with a non-finite loss (after every release) used to turn the generator
    into NaNs, so the fit's post-processing (calibration) or sampling raised. The step is now
    skipped with a warning and the generator kept finite. Every step failing still says so."""
    from sdv_dpkme.engines import generator_training as generator

    original, calls = generator.mmd_to_target, []

    def sometimes_nan(*args, **kwargs):
        calls.append(1)
        loss = original(*args, **kwargs)
        return loss * float('nan') if 10 <= len(calls) < 20 else loss

    monkeypatch.setattr(generator, 'mmd_to_target', sometimes_nan)
    synth = make(DPHPSynthesizer, make_metadata(), epsilon=1.0, known_min_max_values=BOUNDS,
                 known_categories=CATEGORIES, random_state=0, target_column='label',
                 calibration_parents=2, **FAST)
    with fixed_noise(0), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter('always')
        synth.fit({'t': make_table(300)})
    (message,) = [str(w.message) for w in record if 'non-finite loss' in str(w.message)]
    assert 'training steps had a non-finite loss or gradient and were skipped' in message
    skipped = synth.get_loss_values().attrs['skipped_steps']
    assert 1 <= skipped < FAST['steps']
    rows = synth.sample(50)['t']
    assert rows['age'].notna().all() and rows['city'].notna().all()


def test_options_replaced_after_construction_are_refused_before_discovery_spends(ledgers):
    synth = make(DPHPSynthesizer, _metadata(age='numerical', city='categorical'), epsilon=1.0,
                 known_min_max_values={'age': (18, 90)}, integer_columns=['age'], **FAST_HP)
    synth.training = {'steps': 3}  # not a DPHPTraining
    with fixed_noise(0), pytest.raises(SynthesizerInputError, match='training must be'):
        synth.fit({'t': _table()[['age', 'city']]})
    assert _nothing_released(ledgers)


def test_the_early_value_check_reads_a_column_as_the_users_transformer_will():
    """The check before the release uses the transformer the fit will use: a user's nullable
    DP transformer accepts the missing values the declared domain alone would refuse."""
    from sdv_dpkme.domain import DPNumericalTransformer

    table = _table()
    table.loc[7, 'age'] = np.nan
    synth = make(DPHPSynthesizer, _metadata(age='numerical', city='categorical'), epsilon=1.0,
                 known_min_max_values={'age': (18, 90)}, integer_columns=['age'], **FAST_HP)
    synth.update_transformers({'age': DPNumericalTransformer(18, 90, nullable=True)})
    with fixed_noise(0), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': table[['age', 'city']]})
    assert synth._fitted


def test_dpkip_support_plan_naming_a_class_discovery_did_not_release_warns():
    """DP-KIP's support_per_class is checked against a declared target before any release;
    against a discovered one (known only after its release) it warns: the class discovery did
    not release gets no rows, and the fit finishes."""
    from sdv_dpkme import DPKIPSynthesizer
    from tests.synthesizers.test_discovery import _flags_metadata, _flags_table

    fast = {k: v for k, v in FAST_BY_CLASS['DPKIPSynthesizer'][0].items()
            if k not in ('nullable_columns', 'target_column', 'support_per_class')}
    synth = make(DPKIPSynthesizer, _flags_metadata(), epsilon=1.0, target_column='target',
                 support_per_class={'negative': 2, 'hypothyroid': 3}, random_state=0, **fast)
    with fixed_noise(0), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter('always')
        synth.fit({'t': _flags_table()})
    messages = [str(w.message) for w in record]
    assert any("support_per_class names ['hypothyroid'], which domain discovery did not "
               'release' in m for m in messages)
    assert list(synth.get_distilled_data()['target']) == ['negative'] * 2


@pytest.mark.parametrize('cls', [DPHPSynthesizer, DPMERFSynthesizer])
def test_budget_shares_are_checked_before_any_release(cls, ledgers):
    """A zero share used to pass construction and fail in the plan, after discovery had spent
    its budget; a misspelt group was silently ignored. Both are refused when the synthesizer is
    built, and before any release if the kernel was replaced since."""
    import dataclasses

    fast = FAST_BY_CLASS[cls.__name__][0]
    with pytest.raises(SynthesizerInputError, match=r"share > 0.*pair_length_scale=None"):
        make(cls, make_metadata(), epsilon=1.0, budget_shares={'pairs': 0}, **fast)
    with pytest.raises(SynthesizerInputError, match=r"no release group \['pair'\]"):
        make(cls, make_metadata(), epsilon=1.0, budget_shares={'pair': 0.5}, **fast)
    synth = make(cls, make_metadata(), epsilon=1.0, **fast)  # nothing declared: discovery
    synth.kernel = dataclasses.replace(synth.kernel, budget_shares={'pair': 0.5})
    with pytest.raises(SynthesizerInputError, match='no release group'):
        synth.fit({'t': make_table()})
    assert _nothing_released(ledgers)
