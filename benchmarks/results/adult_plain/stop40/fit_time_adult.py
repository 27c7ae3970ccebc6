import sys, time, cProfile, pstats, torch
import os; torch.set_num_threads(int(os.environ.get("TT","1")))
sys.path.insert(0, 'benchmarks')  # run from the repository root
import adult
from sdv_dpkme import DPHPSynthesizer
train, test, metadata, domain = adult._load_split(False)
kw = adult._declaration(domain, 'plain', True)
s = DPHPSynthesizer(metadata, epsilon=1.0, delta=1e-5, random_state=0, verbose=False, **kw)
prof = len(sys.argv) > 1 and sys.argv[1] == 'prof'
t = time.perf_counter()
if prof:
    pr = cProfile.Profile(); pr.enable()
s.fit({'adult': train})
el = time.perf_counter() - t
if prof:
    pr.disable(); pstats.Stats(pr).sort_stats('cumulative').print_stats(45)
h = s._model.loss_values
print('fit', el, 'cal', h.attrs.get('calibration_seconds'), 'pairs', h.attrs.get('calibrated_pairs'))
