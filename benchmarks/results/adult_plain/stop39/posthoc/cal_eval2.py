import sys, json, warnings, time, copy
sys.path.insert(0, '/work/main/benchmarks')
import adult, census_quality as cq
import numpy as np, torch, pandas as pd
from sdv.utils import load_synthesizer
from sdv_dpkme.engines import calibration
torch.set_num_threads(1)
base = sys.argv[1]; configs = json.loads(sys.argv[2]); clf = sys.argv[3].split(',') if len(sys.argv) > 3 and sys.argv[3] else []
train, test, metadata, domain = cq.load_split(0)
cap = torch.load(base + '.obj.pt', weights_only=False)
for cfg in configs:
    synth = load_synthesizer(base + '.pkl')
    gen = synth._model.generator
    t = time.time()
    pairs = []
    if cfg is not None:
        rng = torch.Generator().manual_seed(0)
        vals = calibration.calibrate_values(gen, cap["objectives"], cap["weights"], rng, **({"rows": cfg["rows"]} if "rows" in cfg else {})) if cfg.get("values") else []
        print("values", vals)
        pairs = calibration.calibrate(gen, cap["objectives"], cap["weights"], rng, **{k: v for k, v in cfg.items() if k not in ("show", "values")})
    ct = time.time() - t
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        synth._model.set_random_state(1)
        syn = synth.sample(len(train))[cq.TABLE]
    scores, details = cq.score(test, syn, metadata, domain, clf, ())
    print(json.dumps(dict(cfg=cfg, cal_s=round(ct,1), n_pairs=len(pairs), **{k: round(scores[k],4) for k in ('quality','column_shapes','column_pair_trends','tstr_roc_auc','tstr_pr_auc') if scores[k]==scores[k]}, worst=scores['worst_pairs'])), flush=True)
    json.dump(details, open(base + '.' + str(configs.index(cfg)) + '.details.json', 'w'))
    if cfg is not None and cfg.get('show'):
        print(pairs)
