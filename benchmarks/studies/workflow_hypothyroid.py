"""The whole SDV workflow on a table never used for tuning: UCI hypothyroid (issue 21).

3,163 rows x 26 columns (flags, lab values with missing values, a rare class: 151 'hypothyroid').
Public facts only: the categories and flags of ``hypothyroid.names``, round clinical caps for the
lab values, and which columns can be missing (the file marks them '?'). Steps: fit DP-HP at
epsilon = 1 with a FixedIncrements constraint on age (not declared integer), sample, condition on
the rare class and on a flag, save and load, SDMetrics quality and diagnostic reports, the privacy
report, and train-synthetic-test-real ROC AUC against train-real-test-real.

    python benchmarks/studies/workflow_hypothyroid.py      # writes results/workflow_hypothyroid.md
"""

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness and package
from benchmarks import harness  # noqa: E402

TABLE = harness.heldout.HYPOTHYROID


def synthesizer(meta, declared, seed):
    from sdv.cag import FixedIncrements

    from sdv_dpkme import DPHPSynthesizer

    synth = harness.make(DPHPSynthesizer, meta, 1.0, target_column='class', random_state=seed,
                         verbose=False, **declared)
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


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.split('\n\n')[0]).parse_args(argv)
    from sdmetrics.reports.single_table import DiagnosticReport, QualityReport
    from sdv.sampling import Condition
    from sdv.utils import load_synthesizer
    from sklearn.model_selection import train_test_split

    data, meta, declared = harness.hypothyroid()
    train, test = train_test_split(data, test_size=0.25, stratify=data['class'], random_state=0)
    lines, seed = [], 0
    synth = synthesizer(meta, declared, seed)
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
    intro = ('Written by `benchmarks/studies/workflow_hypothyroid.py`: DP-HP, epsilon = 1, '
             'delta = 1e-5, defaults except public bounds, categories, nullable columns and the '
             f'target; {len(train)} training rows, {len(test)} test rows, seed {seed}.')
    harness.write_report(harness.RESULTS / 'workflow_hypothyroid.md',
                         'The SDV workflow on UCI hypothyroid (a table never tuned on)',
                         [(None, intro), (None, harness.markdown_table(['step', 'result'], lines))])


if __name__ == '__main__':
    sys.exit(main())
