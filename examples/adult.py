"""Walk-through: a DP-HP synthesizer on the Adult table, checked with SDMetrics and TSTR.

Run: python examples/adult.py [--full]   (--full uses the whole Adult train split; needs pyarrow)
"""

import sys

from sdv.utils import load_synthesizer

from sdv_dpkme import DPHPSynthesizer
from sdv_dpkme.datasets import adult_train_test_split, load_adult, load_adult_sample
from sdv_dpkme.evaluation import evaluate, plot_worst_columns, quality_summary

# 1. Data, hand-written metadata and the PUBLIC domain (from the data set's documentation).
sample, metadata, domain = load_adult_sample()
data = load_adult() if '--full' in sys.argv else sample
train, test = adult_train_test_split(data)

# 2. A synthesizer with a privacy budget. The domain is declared, never read from the data.
synth = DPHPSynthesizer(
    metadata,
    epsilon=1.0,
    delta=1e-5,
    domain=domain,  # bounds, categories, integer columns, log scale for the money columns
    target_column='income',
    random_state=0,
)
synth.fit({'adult': train})

# 3. What was spent, release by release.
report = synth.get_privacy_report()
print(report)
report.to_json('adult_privacy_report.json')

# 4. Synthetic rows and their quality against held-out real rows.
synthetic = synth.sample(num_rows=len(train))['adult']
scores = evaluate(
    train, synthetic, metadata, target_column='income', real_test=test,
    categories=domain['known_categories'], bounds=domain['known_min_max_values'],
    classifiers=['LogisticRegression', 'RandomForestClassifier'],
)
print({k: round(v, 3) for k, v in scores.items() if isinstance(v, float)})
# Column shapes and pair trends, the worst named; their marginals real (grey) vs synthetic (blue).
print(quality_summary(scores, worst=3))
plot_worst_columns(test, synthetic, metadata, scores, 'adult_worst_columns.png', worst=4,
                   bounds=domain['known_min_max_values'], categories=domain['known_categories'])

# 5. Share the synthesizer: it holds only public facts and DP outputs.
synth.save('adult_dphp.pkl')
again = load_synthesizer('adult_dphp.pkl').sample(num_rows=5)['adult']
print(again)
