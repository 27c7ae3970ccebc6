"""Adversarial privacy suite: every synthesizer (tests/conftest.py SYNTHESIZERS) must pass it.

It attacks the fitted object, not the author's idea of it:
- neighbouring tables (one row replaced by a rare category, huge or non-finite numbers, a NaN in an
  int column, a None in a bool column, a non-integer in an int column, unique datetimes, unique
  strings in every column that is not modelled, the extremes of constrained columns, another
  label) give identical fitted object graphs, walked in full, outside the mechanisms' outputs;
- every release moves by at most its stated sensitivity between those neighbours;
- a canary row is looked for in the saved bytes in every encoding (ASCII, float64/float32,
  int64, nanoseconds, strings, its encoded value) and in samples;
- noise seeds that agree in their low 32 bits give different noise;
- garbage processed rows up to +-1.7e308 go through ``fit_processed_data`` within the bounds;
- every constraint SDV accepts, and every PII sdtype with ``pii: True`` and ``pii: False``.
The distributed entry paths (Dask, a Parquet directory, Spark) are walked the same way in
tests/privacy/test_distributed.py.
"""

import copy
import inspect
import math
import pickle
import struct
import warnings

import cloudpickle
import numpy as np
import pandas as pd
import pytest
import sdv.cag
import torch
from sdv.errors import SynthesizerInputError
from sdv.metadata import Metadata

import sdv_dpkme
from sdv_dpkme.privacy import NotPrivateWarning
from sdv_dpkme.privacy.testing import fixed_noise
from tests.conftest import make, PUBLIC_ROWS, SYNTHESIZERS
from tests.privacy import attack
from tests.privacy.graph import diff, flatten

# The outputs of the mechanisms (and what is trained on them only): they may differ between
# neighbours. Everything else in the fitted synthesizer must not.
MECHANISM_OUTPUTS = ('._model.generator', '._model.class_weights', '._model.loss_values',
                     '._model.rows',  # DP-KIP's support rows, Balog's Algorithm 2 points
                     '._model.weights', '._model.probabilities',  # Balog's weights
                     '._model.labels',  # the labels of Algorithm 2's points
                     '._model.pools')  # generated rows reweighted to the releases
# Releases of a statistic chosen on earlier noisy releases (adaptive composition): the pairs
# that 'selected_pairs' measures are chosen on the noisy 'pairs' release.
ADAPTIVE = ('selected_pairs',)
# Set per instance whatever the data (a random id, the calendar day): not facts about the rows.
PER_INSTANCE = ('._synthesizer_id', '._fitted_date', '._creation_date')
# The generator's structure is public and compared; only its trained values are outputs, and
# the calibration of its heads and its numeric value maps, fitted to the releases after training
# (engines.calibration).
STRUCTURE = ('._parameters', '._buffers', '.calibration', '.value_maps')

# the fast subset (-m 'not slow') attacks each class's first mode; the full suite every mode
CASES = [pytest.param(cls, mode, id=f'{cls.__name__}-{mode}',
                      marks=() if mode == next(iter(spec['modes'])) else pytest.mark.slow)
         for cls, spec in SYNTHESIZERS.items() for mode in spec['modes']]
# ... and with the first two neighbours of the attack table; the full suite with all of them
NEIGHBOURS = [pytest.param(name, marks=() if i < 2 else pytest.mark.slow)
              for i, name in enumerate(attack.NEIGHBOURS)]


def build(cls, mode, **kwargs):
    spec = SYNTHESIZERS[cls]
    args = dict(epsilon=1.0, delta=1e-5, domain=attack.DOMAIN, target_column='label',
                random_state=0)
    args.update(spec['fast'])
    args.pop('nullable_columns', None)  # the attack table declares its own
    args.update(**spec['short'], **spec['modes'][mode])
    args.update(kwargs)
    if isinstance(args.get('public_data'), str) and args['public_data'] == PUBLIC_ROWS:
        args['public_data'] = public_rows()
    synth = make(cls, attack.metadata(), **args)
    synth.add_constraints(attack.constraints())
    return synth


@pytest.fixture(autouse=True)
def _known_noise():
    """Fixed noise (test only), so that fits of neighbouring tables can be compared."""
    with fixed_noise(11):
        yield


def public_rows():
    """Another draw of the test table, without the rows that share a value with the canary
    (a public row may hold any value; the canary must be found only if a private row leaks)."""
    public = attack.table(seed=1)
    shared = np.zeros(len(public), dtype=bool)
    for column, value in CANARY.items():
        shared |= (public[column] == value).to_numpy()
    return public[~shared].reset_index(drop=True)


def fit(synth, data):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        with attack.captured_releases() as releases:
            synth.fit({attack.TABLE: data})
    return releases


def graph(synth):
    out = flatten(synth, exclude=PER_INSTANCE)
    return {path: leaf for path, leaf in out.items() if not _is_output(path)}


def _is_output(path):
    if not path.startswith(MECHANISM_OUTPUTS):
        return False
    if path.startswith('._model.generator'):
        return any(part in path for part in STRUCTURE)
    return True


_BASE = {}


def base_fit(cls, mode):
    if (cls, mode) not in _BASE:
        synth = build(cls, mode)
        releases = fit(synth, attack.table())
        _BASE[cls, mode] = (graph(synth), releases)
    return _BASE[cls, mode]


def model_values(synth):
    """The trained values of the fitted model (generator weights, DP-KIP's support rows, or
    Balog's points and weights)."""
    model = synth._model
    if hasattr(model, 'generator'):
        return torch.cat([p.detach().flatten() for p in model.generator.parameters()])
    values = [torch.as_tensor(model.rows, dtype=torch.float64).flatten()]
    if hasattr(model, 'weights'):  # Balog: public rows with DP weights
        values.append(torch.as_tensor(model.weights, dtype=torch.float64))
    return torch.cat(values)


def assert_within_sensitivity(first, second):
    assert [r[0] for r in first] == [r[0] for r in second], 'the release plan depends on the rows'
    # A DP-SGD step is computed at the support that the earlier noisy steps made; it differs
    # between the two fits after the first step, and the sensitivity holds given it (adaptive
    # composition). So only the first step is compared (tests/engines/test_kip.py checks the
    # bound at a common support for every step).
    later_steps = [i for i, r in enumerate(first) if r[0] == 'poisson'][1:]
    first = [r for i, r in enumerate(first) if i not in later_steps]
    second = [r for i, r in enumerate(second) if i not in later_steps]
    for (name, a, bound, details), (_, b, bound2, details2) in zip(first, second):
        assert bound == bound2, f'{name}: the sensitivity depends on the rows'
        if name in ADAPTIVE and details != details2:
            # what it measures was chosen on an earlier noisy release, which differs between
            # the fits; the bound holds given the choice (tests/features/test_pairwise.py
            # checks it for any subset of pairs, up to +-1e308)
            continue
        assert np.isfinite(a).all() and np.isfinite(b).all(), f'{name}: non-finite release'
        moved = float(np.linalg.norm((a - b).ravel()))
        assert moved <= bound * (1 + 1e-9) + 1e-15, f'{name} moved {moved:g} > {bound:g}'


# ---------------------------------------------------------------- every class is in the suite
def test_every_synthesizer_class_is_listed_in_the_suite():
    from sdv.single_table.base import BaseSynthesizer

    exported = {obj for name in sdv_dpkme.__all__
                for obj in [getattr(sdv_dpkme, name)]
                if inspect.isclass(obj) and issubclass(obj, BaseSynthesizer)}
    stack = list(exported)
    while stack:  # every concrete subclass, also those not exported
        for sub in stack.pop().__subclasses__():
            if sub.__module__.startswith('sdv_dpkme') and sub not in exported:
                exported.add(sub)
                stack.append(sub)
    concrete = {c for c in exported if not inspect.isabstract(c) and 'Base' not in c.__name__}
    assert concrete and concrete <= set(SYNTHESIZERS), concrete - set(SYNTHESIZERS)


# ------------------------------------------------------------- neighbouring-table graph diff
@pytest.mark.parametrize('cls,mode', CASES)
@pytest.mark.parametrize('name', NEIGHBOURS)
def test_neighbouring_tables_give_the_same_fitted_object(cls, mode, name):
    base_graph, base_releases = base_fit(cls, mode)
    synth = build(cls, mode)
    releases = fit(synth, attack.neighbour(name))
    other = graph(synth)
    differing = diff(base_graph, other)
    assert not differing, f'{name}: the fitted object depends on the row: {differing}'
    assert_within_sensitivity(base_releases, releases)


def test_the_graph_walk_sees_a_planted_fact():
    # guard against a walk that compares nothing: one row's value hidden deep in a transformer
    cls = next(iter(SYNTHESIZERS))
    mode = next(iter(SYNTHESIZERS[cls]['modes']))
    base_graph = base_fit(cls, mode)[0]
    synth = build(cls, mode)
    fit(synth, attack.table())
    fields = synth._data_processor._hyper_transformer.field_transformers
    fields['city'].random_states['transform'].seed(1234)
    assert diff(base_graph, graph(synth))
    assert any(path.startswith('._model.generator') for path in base_graph)


# ------------------------------------------------------------------------ pickle canaries
CANARY = {
    'pk': 987_654_321, 'user': 'CANARY-U-7731', 'ticket': 'T731773', 'email': 'canary7731@x.io',
    'phone': 'CANARY-P-7731', 'code': 'CANARY-C-7731', 'city': 'Atlantis9931',
    'income': 187_654.321, 'big': 9_876_543_210_987, 'hi': 9_876_543_210.123,
    'steps': 987_654_320, 'when': pd.Timestamp('2021-03-04 05:06:07.891011121'),
    'day': '11/07/2020', 'seen': '07.11.2020',
}


def _tokens():
    """The canary row in every encoding a saved object or a sample could hold it."""
    tokens = {}
    for column, value in CANARY.items():
        if isinstance(value, str):
            tokens[f'{column} str'] = value.encode()
            tokens[f'{column} utf-16'] = value.encode('utf-16-le')
        elif isinstance(value, pd.Timestamp):
            tokens[f'{column} ns int64'] = struct.pack('<q', value.value)
            tokens[f'{column} ns float64'] = struct.pack('<d', float(value.value))
            tokens[f'{column} ns ascii'] = str(value.value).encode()
            tokens[f'{column} iso'] = str(value).encode()
        else:
            tokens[f'{column} ascii'] = repr(value).encode()
            tokens[f'{column} float64'] = struct.pack('<d', float(value))
            tokens[f'{column} float64 BE'] = struct.pack('>d', float(value))
            tokens[f'{column} float32'] = struct.pack('<f', float(value))
            if float(value).is_integer():
                tokens[f'{column} int64'] = struct.pack('<q', int(value))
    low, high = attack.DOMAIN['columns']['income']['min_value'], 200_000
    encoded = (CANARY['income'] - low) / (high - low)  # the row as the engine saw it
    tokens['income encoded float64'] = struct.pack('<d', encoded)
    tokens['big encoded float64'] = struct.pack('<d', CANARY['big'] / 10**13)
    return tokens


def test_canary_tokens_are_found_where_they_are_planted():
    # guard against a search that cannot match: the canary row's own pickle holds its tokens
    blob = pickle.dumps(pd.DataFrame([CANARY]))
    blob += pickle.dumps(np.array([CANARY['income']], dtype=np.float32))
    tokens = _tokens()
    expected = [name for name in tokens
                if name.endswith((' str', ' ns int64')) or name in (
                    'income float32', 'income float64', 'hi float64', 'pk int64', 'big int64',
                    'steps int64')]
    assert len(expected) >= 12
    assert not [name for name in expected if tokens[name] not in blob]


@pytest.mark.parametrize('cls,mode', CASES)
def test_canary_row_never_leaves(cls, mode, tmp_path):
    data = attack.table()
    for column, value in CANARY.items():
        if data[column].dtype != object and isinstance(value, str):
            data[column] = data[column].astype(object)
        data.loc[0, column] = value
    data.loc[0, ['lo', 'mid']] = [1.0, 2.0]  # valid for the constraints; hi holds the maximum
    synth = build(cls, mode)
    fit(synth, data)
    synth.save(tmp_path / 's.pkl')
    unconstrained = copy.deepcopy(synth)
    unconstrained._reject_sampling_constraints = []  # they only drop rows; spare the retries
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        out = unconstrained.sample(300)[attack.TABLE]
    blobs = {
        'pickle': pickle.dumps(synth),
        'cloudpickle': cloudpickle.dumps(synth),
        'saved file': (tmp_path / 's.pkl').read_bytes(),
        'report': synth.get_privacy_report().to_json().encode(),
        'info': repr(synth.get_info()).encode(),
        'parameters': repr(synth.get_parameters()).encode(),
        'metadata': repr(synth.get_metadata().to_dict()).encode(),
        'samples': pickle.dumps(out) + out.to_csv().encode(),
    }
    # a day-precision date ('day', 'seen') is no fingerprint in samples: 300 synthetic days
    # over the 6-year public range hit a given day by chance (a DP-HP fit whose training rows
    # lack '07.11.2020' still sampled it once); saved objects must still never hold it
    by_chance = {'day str', 'seen str'}
    found = [(where, name) for where, blob in blobs.items()
             for name, token in _tokens().items() if token in blob
             and not (where == 'samples' and name in by_chance)]
    assert not found


# --------------------------------------------------------------------------- noise entropy
@pytest.mark.parametrize('cls,mode', CASES)
def test_noise_seeds_equal_in_their_low_32_bits_give_different_fits(cls, mode):
    # a 32-bit-seeded generator (torch's CPU Generator) gives the same noise for both
    statistics, models = [], []
    for seed in (7, 7 + 2**32):
        synth = build(cls, mode)
        with fixed_noise(seed):
            statistics.append(fit(synth, attack.table()))
        models.append(model_values(synth))
    # releases of the whole table are the same (batches are drawn from the noise, so
    # subsampled ones differ; so does what an adaptive release measures) ...
    full = [(a, b) for a, b in zip(*statistics)
            if a[0] not in ('subsampled', 'poisson', *ADAPTIVE)]
    assert full or all(a[0] == 'poisson' for a in statistics[0])
    assert all(np.array_equal(a[1], b[1]) for a, b in full)
    assert not torch.equal(*models)  # ... the noise is not


# -------------------------------------------------------------------- garbage processed rows
GARBAGE = [1.7e308, -1.7e308, np.inf, -np.inf, 5e-324, -0.0, 1e100, -1e100]


@pytest.mark.parametrize('cls,mode', CASES)
def test_garbage_processed_rows_stay_within_the_sensitivity(cls, mode):
    synth = build(cls, mode)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        processed = synth.preprocess({attack.TABLE: attack.table()})[attack.TABLE]
    clean = build(cls, mode)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        clean.preprocess({attack.TABLE: attack.table()})
        with attack.captured_releases() as base:
            clean.fit_processed_data({attack.TABLE: processed})
    for shift in range(2):
        garbage = processed.copy()
        garbage.iloc[0] = [GARBAGE[(i + shift) % len(GARBAGE)] for i in range(processed.shape[1])]
        with pytest.warns(UserWarning, match=r'outside \[0, 1\]'):
            with attack.captured_releases() as releases:
                synth.fit_processed_data({attack.TABLE: garbage})
        assert_within_sensitivity(base, releases)
        assert torch.isfinite(model_values(synth)).all()
        assert np.isfinite(synth._model.sample(10).to_numpy()).all()
    garbage.iloc[1, 0] = np.nan
    with pytest.raises(SynthesizerInputError, match='NaN'):
        synth.fit_processed_data({attack.TABLE: garbage})


# ------------------------------------------------------------------------------ constraints
def _constraint_classes():
    return {obj for obj in vars(sdv.cag).values()
            if inspect.isclass(obj) and obj.__module__.startswith('sdv.cag')}


@pytest.mark.parametrize('cls,mode', CASES)
def test_every_constraint_sdv_offers_is_enforced_or_refused(cls, mode):
    enforced = {type(c) for c in attack.constraints()}
    # one of each enforced constraint; noiseless and trained, so reject sampling finds rows
    synth = build(cls, mode, epsilon=math.inf, **SYNTHESIZERS[cls]['long'])
    fit(synth, attack.table())
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        out = synth.sample(30)[attack.TABLE]
    # a generator gives new rows until 30 pass; DP-KIP can only drop those of its few distilled
    # rows that break a constraint
    assert len(out) == 30 if SYNTHESIZERS[cls]['kme'] else len(out) <= 30
    valid = out.dropna(subset=['lo', 'mid', 'hi'])
    assert (valid['lo'] <= valid['mid']).all() and (valid['mid'] <= valid['hi']).all()
    assert (out['steps'].dropna() % 5 == 0).all()
    assert ((out['oh_a'] + out['oh_b']) == 1).all()
    refused = {
        sdv.cag.FixedCombinations: lambda: sdv.cag.FixedCombinations(column_names=['city', 'flag']),
        sdv.cag.ProgrammableConstraint: None,
        sdv.cag.SingleTableProgrammableConstraint: None,
    }
    assert _constraint_classes() == enforced | set(refused), 'a new SDV constraint: decide on it'
    with pytest.raises(SynthesizerInputError, match='not supported by DP'):
        build(cls, mode).add_constraints([refused[sdv.cag.FixedCombinations]()])

    class Custom(sdv.cag.SingleTableProgrammableConstraint):
        def transform(self, data):
            return data

        def reverse_transform(self, data):
            return data

        def is_valid(self, data):
            return pd.Series(True, index=data.index)

    with pytest.raises(SynthesizerInputError, match='not supported by DP'):
        build(cls, mode).add_constraints([Custom()])


# -------------------------------------------------------------------------- every sdtype
PII_SDTYPES = ['address', 'email', 'ipv4_address', 'ipv6_address', 'mac_address', 'name',
               'phone_number', 'ssn', 'user_agent_string', 'country_code', 'unknown']


@pytest.mark.parametrize('pii', [True, False])
@pytest.mark.parametrize('sdtype', PII_SDTYPES)
def test_columns_of_every_pii_sdtype_are_generated_never_copied(sdtype, pii):
    cls = next(iter(SYNTHESIZERS))
    meta = {'tables': {'t': {'columns': {
        'x': {'sdtype': sdtype, 'pii': pii},
        'age': {'sdtype': 'numerical'},
    }}}}
    rng = np.random.default_rng(0)
    data = pd.DataFrame({'x': [f'real-{i}' for i in range(60)],
                         'age': rng.integers(18, 90, 60)})
    data.loc[0, 'x'] = 'CANARY-7731'
    args = {k: v for k, v in SYNTHESIZERS[cls]['fast'].items() if k != 'nullable_columns'}
    synth = make(cls, Metadata.load_from_dict(meta), epsilon=1.0,
                known_min_max_values={'age': (0, 120)}, random_state=0, **{**args, 'steps': 2})
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': data})
        out = synth.sample(50)['t']
    assert b'CANARY-7731' not in cloudpickle.dumps(synth)
    assert b'real-1' not in cloudpickle.dumps(synth)
    assert not set(out['x'].astype(str)) & set(data['x'])
    assert out['x'].nunique() > 1  # SDV's fallback repeated row 0's value in every sample


def test_pii_false_column_faker_cannot_generate_is_refused_clearly():
    cls = next(iter(SYNTHESIZERS))
    meta = Metadata.load_from_dict({'tables': {'t': {'columns': {
        'x': {'sdtype': 'ein', 'pii': False}, 'age': {'sdtype': 'numerical'},
    }}}})
    synth = make(cls, meta, epsilon=1.0, known_min_max_values={'age': (0, 120)}, verbose=False,
                locales=['fr_FR'])  # Faker's 'ein' exists for en_US only
    data = pd.DataFrame({'x': ['a', 'b', 'c'], 'age': [20, 30, 40]})
    with pytest.raises(SynthesizerInputError, match="sdtype 'unknown'"):
        synth.fit({'t': data})


# ------------------------------------------------------------------- test-only noise seed
@pytest.mark.parametrize('cls,mode', CASES)
def test_fixed_noise_voids_the_report_and_never_reaches_the_parameters(cls, mode):
    synth = build(cls, mode)
    with fixed_noise(3), pytest.warns(NotPrivateWarning, match='NOT differentially private'):
        synth.fit({attack.TABLE: attack.table()})
    report = synth.get_privacy_report()
    assert report.epsilon_spent == math.inf and not report.guarantee_holds
    assert synth.get_info()['epsilon_spent'] == math.inf
    params = synth.get_parameters()
    params.pop('metadata', None)
    assert 'noise_seed' not in repr(params) and 'noise_seed' not in repr(report.parameters)
    # the seed is not a setting: a copy made from the parameters has the same options
    copied = make(cls, attack.metadata(), **params)
    assert copied.get_parameters() == synth.get_parameters()
    # secret noise (a large epsilon and no class release, so 80 rows always fit)
    honest = build(cls, mode, epsilon=10.0,
                   target_column=None if SYNTHESIZERS[cls]['kme'] else 'label')
    with fixed_noise(None), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        honest.fit({attack.TABLE: attack.table()})
    assert not [w for w in caught if issubclass(w.category, NotPrivateWarning)]
    report = honest.get_privacy_report()
    # (a subsampled group is calibrated by bisection to 0.1% of its noise; at eps = 10 a 0.1%
    # change of the multiplier moves eps by about 0.3-0.6%, so the spend is within 0.5% of eps)
    assert report.guarantee_holds and 9.95 < report.epsilon_spent <= 10.0
