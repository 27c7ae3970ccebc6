import json, glob, os
import numpy as np
rows = []
for arm in ['old', 'new', 'both']:
    for s in range(3):
        f = f'benchmarks/results/adult_plain/stop40/census_paired/{arm}_s{s}/runs.jsonl'
        if not os.path.exists(f): continue
        d = [json.loads(l) for l in open(f)][-1]
        rows.append((arm, s, d['quality'], d['column_shapes'], d['column_pair_trends'], d['tstr_roc_auc'], d['tstr_pr_auc'], d['tv_alpha3'] if 'tv_alpha3' in d else d.get('tv3'), d['fit_s']))
print('| arm | seed (noise_seed) | quality | shapes | pair trends | ROC | PR | TV3 | fit s* |')
print('|---|---|---|---|---|---|---|---|---|')
for r in rows:
    print(f'| {r[0]} | {r[1]} ({40 + r[1]}) | {r[2]:.4f} | {r[3]:.4f} | {r[4]:.4f} | {r[5]:.3f} | {r[6]:.3f} | {r[7]:.4f} | {r[8]:.0f} |')
for arm in ['old', 'new', 'both']:
    a = np.array([r[2:8] for r in rows if r[0] == arm])
    if len(a): print(arm, len(a), 'mean', np.round(a.mean(0), 4), 'std q', np.round(a[:, 0].std(ddof=1), 4) if len(a) > 1 else '')
