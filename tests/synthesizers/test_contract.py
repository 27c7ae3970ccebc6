"""SDV contract and privacy behaviour of the synthesizers (parametrised over classes)."""

import dataclasses
import inspect
import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sdv.cag import FixedCombinations, Inequality
from sdv.errors import InvalidDataError, SynthesizerInputError
from sdv.metadata import Metadata
from sdv.sampling import Condition
from sdv.utils import load_synthesizer

from sdv_dpkme import DPHPSynthesizer, DPKIPSynthesizer, DPMERFSynthesizer
from sdv_dpkme.privacy._autodp import mechanism_zoo
from sdv_dpkme.privacy.testing import fixed_noise
from sdv_dpkme.synthesizers.base import FORMAT_VERSION
from sdv_dpkme.domain import DPCategoricalTransformer
from tests.conftest import (
    make,
    BOUNDS,
    CATEGORIES,
    FAST_BY_CLASS,
    SYNTHESIZERS,
    make_metadata,
    make_table,
)
from tests.privacy.graph import flatten


def build(cls, metadata=None, **kwargs):
    args = dict(epsilon=1.0, known_min_max_values=BOUNDS, known_categories=CATEGORIES,
                random_state=0, **FAST_BY_CLASS[cls.__name__][0])
    args.update(kwargs)
    return make(cls, metadata or make_metadata(), **args)


def private_bytes(synth, blob):
    """The bytes a canary search reads: SDV's synthesizer id is a random uuid4 hex string, so a
    short digit canary turns up in it by chance (CI once found '98765' there)."""
    return blob.replace(synth._synthesizer_id.encode(), b'')


def test_importable_from_sdv_namespace():
    from sdv.single_table import DPHPSynthesizer as FromSDV
    from sdv.single_table import DPKIPSynthesizer as KIPFromSDV
    from sdv.single_table import DPMERFSynthesizer as MERFFromSDV

    assert FromSDV is DPHPSynthesizer
    assert MERFFromSDV is DPMERFSynthesizer
    assert KIPFromSDV is DPKIPSynthesizer


def test_fit_sample_and_report(cls, table):
    synth = build(cls, target_column='label')
    synth.fit({'t': table})
    out = synth.sample(150)['t']
    assert list(out.columns) == list(table.columns)
    assert len(out) == 150
    assert out['pk'].is_unique
    assert out['age'].between(18, 90).all()
    assert out['city'].dropna().isin(CATEGORIES['city']).all()
    assert set(out['label'].dropna()) <= {'no', 'yes'}
    assert out['when'].dropna().between('2020-01-01', '2021-12-31').all()
    assert not set(out['user']) & set(table['user'])  # non-key ids are generated (leak L6)
    assert not set(out['email']) & set(table['email'])
    report = synth.get_privacy_report()
    assert report.epsilon_spent <= 1.0 and report.epsilon_spent > 0.999
    names = set(report.to_frame()['name'])
    assert FAST_BY_CLASS[cls.__name__][1] <= names
    assert report.guarantee_holds
    frame = report.to_frame()
    if (frame['sampling'] == 'none').all():  # exact composition: recompute it
        sigmas = frame['noise_multiplier'].to_numpy()
        recomputed = mechanism_zoo.ExactGaussianMechanism(
            sigma=np.sum(sigmas**-2.0) ** -0.5).get_approxDP(report.delta)
        assert report.epsilon_spent == pytest.approx(recomputed, rel=1e-12)
    info = synth.get_info()
    assert info['epsilon'] == 1.0 and info['epsilon_spent'] == report.epsilon_spent
    losses = synth.get_loss_values()
    assert len(losses) == SYNTHESIZERS[cls]['steps']
    assert losses.drop(columns='Step').notna().all().all()


def test_get_parameters_returns_every_constructor_argument(cls):
    synth = build(cls, target_column='label', delta=1e-6)
    params = synth.get_parameters()
    assert params['epsilon'] == 1.0 and params['delta'] == 1e-6
    assert params['target_column'] == 'label'
    assert params['domain']['known_min_max_values'] == BOUNDS
    assert isinstance(params['kernel'], cls._kernel_class)
    assert isinstance(params['training'], cls._training_class)
    fast = FAST_BY_CLASS[cls.__name__][0]
    options = {**vars(params['kernel']), **vars(params['training']), **params}
    assert all(_same(options[name], value) for name, value in fast.items()
               if name != 'nullable_columns')
    missing = [p for p in inspect.signature(cls.__init__).parameters
               if p not in ('self', 'metadata') and p not in params]
    assert not missing
    assert len(inspect.signature(cls.__init__).parameters) - 1 <= 12  # without self


def _same(a, b):
    return tuple(a) == tuple(b) if isinstance(a, (list, tuple)) else a == b


def test_get_parameters_round_trips_every_option(cls):
    # every option away from its default, so a dropped one would come back different
    kernel, training = cls._kernel_class(), cls._training_class()
    changed = {}
    for option in (kernel, training):
        for field in dataclasses.fields(option):
            value = getattr(option, field.name)
            if isinstance(value, bool):
                changed[field.name] = not value
            elif isinstance(value, int) and field.name != 'ntk_depth':
                changed[field.name] = value + 2
            elif isinstance(value, float) and 0 < value < 0.5:
                changed[field.name] = value * 1.5
    if cls is DPKIPSynthesizer:
        changed.update(ntk_depth=2, support_per_class={'no': 2, 'yes': 3})
    synth = build(cls, target_column='label', random_state=7, **changed)
    params = synth.get_parameters()
    for name, value in changed.items():
        option = params['kernel'] if hasattr(params['kernel'], name) else params['training']
        assert getattr(option, name) == value, name
    again = cls(make_metadata(), **params)
    assert again.get_parameters() == params
    # the privacy report's options come from the same objects
    assert all(params[group] == again.get_parameters()[group] for group in ('kernel', 'training'))


def test_the_privacy_report_lists_every_option(cls, table):
    synth = build(cls, target_column='label')
    synth.fit({'t': table})
    report = synth.get_privacy_report()
    for group in ('kernel', 'training'):
        for field in dataclasses.fields(getattr(synth, group)):
            key = f'{group}.{field.name}'
            assert report.parameters[key] == getattr(getattr(synth, group), field.name)
            assert key in str(report)
    assert report.to_dict()['parameters']['target_column'] == 'label'


def test_a_synthesizer_saved_in_another_format_is_refused_with_what_to_do(tmp_path):
    synth = build(DPHPSynthesizer)
    synth.fit({'t': make_table()})
    assert synth._sdv_dpkme_format == FORMAT_VERSION
    state = synth.__dict__
    for old in (None, FORMAT_VERSION - 1):
        blob = pickle.dumps(synth)
        if old is None:
            del state['_sdv_dpkme_format']
        else:
            state['_sdv_dpkme_format'] = old
        stale = pickle.dumps(synth)
        state['_sdv_dpkme_format'] = FORMAT_VERSION
        with pytest.raises(SynthesizerInputError, match='older sdv_dpkme.*Fit it again'):
            pickle.loads(stale)
        assert pickle.loads(blob).get_parameters() == synth.get_parameters()
    path = tmp_path / 'old.pkl'
    state['_sdv_dpkme_format'] = FORMAT_VERSION - 1
    synth.save(path)
    with pytest.raises(SynthesizerInputError, match='refit|Fit it again'):
        load_synthesizer(str(path))


def test_save_load_and_reproducible_sampling(cls, table, tmp_path):
    synth = build(cls)
    synth.fit({'t': table})
    first = synth.sample(50)['t']
    synth.reset_sampling()
    again = synth.sample(50)['t']
    pd.testing.assert_frame_equal(first, again)
    path = tmp_path / 'synth.pkl'
    synth.save(path)
    loaded = load_synthesizer(str(path))
    loaded.reset_sampling()
    pd.testing.assert_frame_equal(loaded.sample(50)['t'], first)
    assert loaded.get_privacy_report().epsilon_spent == synth.get_privacy_report().epsilon_spent
    assert not any(isinstance(p, torch.optim.Optimizer) for p in vars(loaded._model).values())


def test_same_seeds_same_model_only_with_fixed_noise(cls, table):
    a, b, c = build(cls), build(cls), build(cls)
    for s in (a, b):
        with fixed_noise(5):
            s.fit({'t': table})
    c.fit({'t': table})
    pa, pb, pc = (s.sample(40)['t'] for s in (a, b, c))
    pd.testing.assert_frame_equal(pa, pb)
    assert not pa[['age', 'income']].equals(pc[['age', 'income']])
    assert not a.get_privacy_report().guarantee_holds
    assert 'TEST ONLY' in a.get_privacy_report().noise_source


def test_conditional_sampling_falls_back_to_reject_sampling(cls, table):
    synth = build(cls, target_column='label', epsilon=math.inf)
    synth.fit({'t': table})
    out = synth.sample_from_conditions([Condition({'label': 'yes'}, num_rows=20)])['t']
    assert len(out) == 20 and (out['label'] == 'yes').all()


def test_constraints_keep_dp_transformers(cls, table):
    synth = build(cls)
    synth.add_constraints([Inequality(low_column_name='age', high_column_name='income')])
    with pytest.raises(SynthesizerInputError, match='FixedCombinations'):
        synth.add_constraints([FixedCombinations(column_names=['city', 'flag'])])
    synth.fit({'t': table})
    transformers = synth.get_transformers()
    assert isinstance(transformers['city'], DPCategoricalTransformer)
    out = synth.sample(30)['t']
    valid = out.dropna(subset=['income'])
    assert (valid['age'] <= valid['income']).all()


def test_leaky_transformers_are_refused(cls, table):
    from rdt.transformers import FloatFormatter, UniformEncoder

    synth = build(cls)
    for transformer in (UniformEncoder(), FloatFormatter()):
        with pytest.raises(SynthesizerInputError, match='refused'):
            synth.update_transformers({'city': transformer})
    from rdt.transformers.pii import AnonymizedFaker

    leaky_faker = AnonymizedFaker(provider_name='internet', function_name='email',
                                  cardinality_rule='match', missing_value_generation='random')
    synth.update_transformers({'city': DPCategoricalTransformer(['Lima', 'Oslo']),
                               'email': leaky_faker})
    synth.fit({'t': table})
    transformers = synth.get_transformers()
    assert transformers['city'].categories == ['Lima', 'Oslo']
    # generators keep no data statistics (cardinality, null rate)
    assert transformers['email'].cardinality_rule is None
    assert transformers['email'].missing_value_generation is None
    assert not hasattr(transformers['email'], '_data_cardinality') or (
        transformers['email']._data_cardinality is None)


def test_canary_values_never_leave(cls, table, tmp_path):
    canary = table.iloc[[0]].copy()
    canary[['user', 'city', 'age', 'email']] = ['CANARY-ID-7731', 'Atlantis9931', 987654, 'c@x.io']
    data = pd.concat([table, canary.assign(pk=10**6)], ignore_index=True)
    synth = build(cls, target_column='label')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': data})
    blob = pickle.dumps(synth)
    synth.save(tmp_path / 's.pkl')
    blob = private_bytes(synth, blob + (tmp_path / 's.pkl').read_bytes())
    for token in [b'CANARY-ID-7731', b'Atlantis9931', b'987654', b'c@x.io']:
        assert token not in blob
    out = synth.sample(500)['t']
    text = out.astype(str).to_numpy().ravel().tolist()
    assert not {'CANARY-ID-7731', 'Atlantis9931', 'c@x.io'} & set(text)
    assert out['age'].max() <= 90


def test_neighbouring_tables_get_identical_public_encoding(cls, table):
    other = table.copy()
    other.loc[0, ['age', 'city', 'income', 'user']] = [20, 'Oslo', np.nan, 'U99999']
    encoded, states = [], []
    for data in (table, other):
        synth = build(cls)
        synth.auto_assign_transformers({'t': data})
        enc = synth.preprocess({'t': data})['t']
        encoded.append(enc)
        fields = synth._data_processor._hyper_transformer.field_transformers
        states.append(flatten(fields))
    assert states[0] == states[1]  # no transformer state depends on the rows
    pd.testing.assert_frame_equal(encoded[0].iloc[1:], encoded[1].iloc[1:])
    assert not encoded[0].iloc[:1].equals(encoded[1].iloc[:1])


def test_detected_metadata_ranges_are_not_used_or_kept(cls, table):
    from sdv.metadata import Metadata

    detected = Metadata.detect_from_dataframes({'t': table})
    detected.update_column('user', table_name='t', sdtype='id')
    detected.update_column('flag', table_name='t', sdtype='boolean')
    assert 'range_min' in str(detected.to_dict()) or 'range_values' in str(detected.to_dict())
    with pytest.raises(SynthesizerInputError, match="'age'"):
        make(cls, detected, epsilon=1.0, domain_budget_share=0, target_column='label')
    synth = build(cls, metadata=detected)
    assert 'range_min' not in str(synth.metadata.to_dict())
    assert 'range_values' not in str(synth._original_metadata.to_dict())


def test_detected_cardinality_flags_and_datetime_formats_are_not_kept(cls, table):
    # finding 5: detection writes high_cardinality (one bit of the rows) and a datetime_format
    # read off the rows' strings; neither may shape the model or travel with it
    data = table.assign(when=table['when'].dt.strftime('%Y-%m-%d'))
    detected = Metadata.detect_from_dataframes({'t': data})
    detected.update_column('user', table_name='t', sdtype='id')
    detected.update_column('flag', table_name='t', sdtype='boolean')
    detected.update_column('city', table_name='t', sdtype='categorical')
    columns = detected.to_dict()['tables']['t']['columns']
    assert 'high_cardinality' in columns['label'] and columns['when']['datetime_format']
    with pytest.warns(UserWarning, match=r"datetime_format of \['when'\]"):
        synth = build(cls, metadata=detected)
    for kept in (synth.metadata, synth._original_metadata, synth._data_processor.metadata):
        text = str(kept.to_dict())
        assert 'high_cardinality' not in text and '%Y-%m-%d' not in text
    with pytest.warns(UserWarning, match=r"\['when'\] hold strings but have no declared"):
        synth.fit({'t': data})
    assert synth._domains['when'].datetime_format is None
    assert b'%Y-%m-%d' not in pickle.dumps(synth)
    assert synth.sample(5)['t']['when'].dtype == 'datetime64[ns]'
    public = build(cls, metadata=detected, metadata_is_public=True)
    assert public._original_metadata.to_dict()['tables']['t']['columns']['when'][
        'datetime_format'] == '%Y-%m-%d'
    spec = {'columns': {'when': {'datetime_format': '%Y-%m-%d'}}}
    declared = build(cls, metadata=detected, domain=spec)
    declared.fit({'t': data})
    out = declared.sample(20)['t']['when']
    assert out.dtype == object and pd.to_datetime(out, format='%Y-%m-%d').notna().all()


def test_output_dtypes_follow_the_declared_domain_not_the_private_frame(cls, table):
    # finding 4: one NaN / None / 40.5 used to flip the stored dtype; now only declarations count
    spec = {'columns': {'age': {'integer': True}, 'income': {'integer': True}}}
    synth = build(cls, domain=spec, nullable_columns=['income', 'flag'])
    data = table.astype({'flag': object})
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth.fit({'t': data})
        out = synth.sample(30)['t']
    dtypes = out.dtypes.astype(str).to_dict()
    assert dtypes['age'] == 'int64'  # integer, not nullable
    assert dtypes['income'] == 'float64'  # integer but nullable: NaN needs floats
    assert dtypes['flag'] == 'object'  # nullable boolean
    assert dtypes['city'] == 'object' and dtypes['when'] == 'datetime64[ns]'
    assert dtypes['pk'] == 'int64' and dtypes['user'] == 'int64'  # ids without a regex
    assert dtypes['email'] == 'object'
    plain = build(cls)
    with pytest.warns(UserWarning, match=r"\['age'\] are stored as integers but not declared"):
        plain.fit({'t': table})
    assert plain.sample(10)['t']['age'].dtype == 'float64'


@pytest.mark.parametrize('kwargs,match', [
    (dict(epsilon=0), 'epsilon'),
    (dict(epsilon=-1), 'epsilon'),
    (dict(epsilon='1'), 'epsilon'),
    (dict(epsilon=1e4), r"epsilon=float\('inf'\)"),  # autodp overflowed deep in the fit
    (dict(delta=1.0), 'delta'),
    (dict(delta=0), 'delta'),
    (dict(known_min_max_values={'age': (90, 18)}), 'low < high'),
    (dict(known_min_max_values={'age': (18, 90)}, domain_budget_share=0), "'income'"),
    (dict(known_categories={'label': ['no', 'yes']}, domain_budget_share=0), "'city'"),
    (dict(target_column='nope'), 'target_column'),
    (dict(target_column='age'), 'target_column'),
])
def test_bad_arguments_get_clear_errors(cls, kwargs, match):
    with pytest.raises(SynthesizerInputError, match=match):
        build(cls, **kwargs)


@pytest.mark.parametrize('kwargs,match', [
    (dict(marginal_length_scale=0), 'marginal_length_scale'),
    (dict(marginal_length_scale=2.0), 'marginal_length_scale'),
    (dict(marginal_length_scale='0.02'), 'marginal_length_scale'),
    (dict(marginal_length_scale=True), 'marginal_length_scale'),
    (dict(marginal_weight=-1), 'marginal_weight'),
    (dict(marginal_weight=0), 'marginal_length_scale=None'),
    (dict(pair_length_scale=0), 'pair_length_scale'),
    (dict(pair_length_scale=1.5), 'pair_length_scale'),
    (dict(pair_length_scale=False), 'pair_length_scale'),
    (dict(pair_weight=float('inf')), 'pair_weight'),
    (dict(pair_weight=0), 'pair_length_scale=None'),
    (dict(learning_rate_schedule='linear'), 'learning_rate_schedule'),
    (dict(learning_rate_schedule=None), 'learning_rate_schedule'),
    (dict(category_smoothing=1.0), 'category_smoothing'),
    (dict(category_smoothing=-0.01), 'category_smoothing'),
    (dict(category_smoothing=float('nan')), 'category_smoothing'),
    (dict(category_smoothing=True), 'category_smoothing'),
    (dict(category_smoothing='0.01'), 'category_smoothing'),
    (dict(category_links=1), 'category_links'),
    (dict(category_links='yes'), 'category_links'),
    (dict(category_links=[True]), 'category_links'),
    (dict(category_links=None), 'category_links'),
])
def test_bad_kernel_term_arguments_get_clear_errors(kme_cls, kwargs, match):
    with pytest.raises(SynthesizerInputError, match=match):
        build(kme_cls, **kwargs)


def test_sum_kernel_release_is_charged_the_sensitivity_its_one_hot_blocks_prove(table):
    # replace-one moves a one-hot block's projected psi by at most sqrt(2), any other by 2
    synth = build(DPHPSynthesizer, target_column='label')
    synth.fit({'t': table})
    blocks = synth._model.generator.blocks
    m_cat = sum(b.kind == 'categorical' for b in blocks)
    bound = math.sqrt((2 * m_cat + 4 * (len(blocks) - m_cat)) / len(blocks))
    row = synth.get_privacy_report().to_frame().set_index('name').loc['sum_kernel']
    assert m_cat == 2 and len(blocks) == 5  # city, flag; age, income, when
    assert row['sensitivity'] == pytest.approx(bound / len(table), rel=1e-12)
    assert row['noise_std'] == pytest.approx(row['noise_multiplier'] * bound / len(table))


@pytest.mark.parametrize('group,label,switch', [
    ('marginals', 'Marginals', 'marginal_length_scale'),
    ('pairs', 'Pairs', 'pair_length_scale'),
])
def test_shared_terms_are_one_reported_release_each_and_can_be_turned_off(
        kme_cls, table, group, label, switch):
    cls = kme_cls
    synth = build(cls, target_column='label')
    synth.fit({'t': table})
    rows = synth.get_privacy_report().to_frame().set_index('name')
    assert rows.loc[group, 'count'] == 1
    # marginals: numeric columns only, 2/n; pairs: 1 of the 10 pairs of the 5 columns is
    # categorical x categorical (city, flag), sqrt((2 + 9 * 4) / 10)/n
    bound = 2.0 if group == 'marginals' else math.sqrt(3.8)
    assert rows.loc[group, 'sensitivity'] == pytest.approx(bound / len(table))
    assert f'{label} loss' in synth.get_loss_values()
    off = build(cls, target_column='label', **{switch: None})
    off.fit({'t': table})
    report = off.get_privacy_report()
    assert group not in set(report.to_frame()['name'])
    assert f'{label} loss' not in off.get_loss_values()
    assert 0.999 < report.epsilon_spent <= 1.0  # the other releases take the whole budget


def test_pairwise_term_narrows_its_numeric_features_before_leaving_out_columns(kme_cls, table):
    cls = kme_cls
    # every pair does not fit at full width: the numeric features narrow, no column leaves
    synth = build(cls, target_column='label', max_pair_features=2000)
    synth.fit({'t': table})
    report = synth.get_privacy_report()
    assert 'pairs' in set(report.to_frame()['name'])
    (note,) = [n for n in report.notes if "'pairs'" in n]
    assert 'keeps every pair' in note and 'max_pair_features=2,000' in note
    # no pair fits: the columns leave with their reason, the term and its release are left out
    synth.kernel = dataclasses.replace(synth.kernel, max_pair_features=1)
    with pytest.warns(UserWarning, match='pair_length_scale=None'):
        synth.fit({'t': table})
    report = synth.get_privacy_report()
    assert 'pairs' not in set(report.to_frame()['name'])
    assert any('leaves out' in n and 'max_pair_features=1' in n for n in report.notes)
    assert len(synth.sample(10)['t']) == 10


def test_missing_domain_error_says_how_to_declare(cls):
    with pytest.raises(SynthesizerInputError) as err:
        make(cls, make_metadata(), epsilon=1.0, domain_budget_share=0, target_column='label')
    message = str(err.value)
    for column in ('age', 'income', 'when', 'city', 'label'):
        assert f"'{column}'" in message
    assert 'known_min_max_values' in message and 'never' in message


@pytest.mark.parametrize('rows', [0, 1])
def test_empty_and_one_row_tables(cls, rows):
    synth = build(cls)
    with pytest.raises((InvalidDataError, ValueError)):
        synth.fit({'t': make_table(5).iloc[:rows]})


def test_wrong_types_and_bare_dataframe(cls, table):
    synth = build(cls)
    bad = table.astype({'age': object})
    bad.loc[3, 'age'] = 'forty'
    with pytest.raises((ValueError, InvalidDataError), match='age'):
        synth.fit({'t': bad})
    with pytest.raises(Exception, match='dict'):
        synth.fit(table)


def test_nan_and_out_of_domain_values_are_handled(cls, table):
    data = table.copy()
    data.loc[:30, 'city'] = None
    data.loc[31:35, 'city'] = 'Paris'
    data.loc[36:40, 'age'] = 150
    synth = build(cls, epsilon=math.inf, nullable_columns=['income', 'city'])
    with pytest.warns(UserWarning):
        synth.fit({'t': data})
    out = synth.sample(200)['t']
    assert out['age'].max() <= 90
    assert 'Paris' not in set(out['city'])
    assert synth.get_privacy_report().epsilon_spent == math.inf


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')
def test_cuda_fit(cls, table):
    synth = build(cls, device='cuda')
    synth.fit({'t': table})
    assert len(synth.sample(10)['t']) == 10


def test_unknown_columns_are_generated_from_a_fixed_pattern(cls, table):
    metadata = make_metadata()
    metadata.add_column('code', table_name='t', sdtype='unknown')
    data = table.assign(code=np.arange(len(table)) + 987_650_000)
    synth = build(cls, metadata=metadata, epsilon=math.inf)
    synth.fit({'t': data})
    out = synth.sample(20)['t']
    assert out['code'].astype(str).str.startswith('sdv-pii-').all()
    assert b'98765' not in private_bytes(synth, pickle.dumps(synth))


def test_canary_search_skips_only_the_random_synthesizer_id():
    synth = build(DPHPSynthesizer)
    synth._synthesizer_id = 'DPHPSynthesizer_2.0.0_98765' + '0' * 27  # a uuid4 can read so
    blob = pickle.dumps(synth)
    assert b'98765' in blob and b'98765' not in private_bytes(synth, blob)
    synth._synthesizer_id = 'DPHPSynthesizer_2.0.0_' + '0' * 32
    blob = pickle.dumps(synth)
    assert b'98765' not in private_bytes(synth, blob)
    assert b'98765' in private_bytes(synth, blob + b'code 98765')  # found anywhere else
