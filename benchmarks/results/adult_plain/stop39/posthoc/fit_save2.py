import sys, json, warnings, pickle, time
sys.path.insert(0, '/work/main/benchmarks')
import adult, census_quality as cq
import numpy as np, torch
from sdv_dpkme import DPHPSynthesizer
from sdv_dpkme.engines import kme
torch.set_num_threads(1)
eps = float(sys.argv[1]); out = sys.argv[2]; kwargs = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
train, test, metadata, domain = cq.load_split(0)
decl = adult._declaration(domain, 'plain', target=True)
captured = {}
orig = kme.train
def spy(blocks, columns, target, weights, objectives, *args):
    captured['weights'] = np.asarray(weights, dtype=float).reshape(-1)
    captured['objectives'] = objectives
    return orig(blocks, columns, target, weights, objectives, *args)
kme.train = spy
attrs = kwargs.pop('attributes', {})
synth = DPHPSynthesizer(metadata, epsilon=eps, delta=cq.DELTA, random_state=int(__import__("os").environ.get("SEED", "0")), verbose=False, **decl, **kwargs)
for k, v in attrs.items(): setattr(synth, k, v)
t = time.time()
with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    synth.fit({cq.TABLE: train})
print('fit', time.time() - t)
synth.save(out + '.pkl')
torch.save(captured, out + '.obj.pt')
