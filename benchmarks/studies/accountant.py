"""New against old noise multipliers of the subsampled groups (issue 40): writes
benchmarks/results/accountant.md.

For each group kind (Poisson DP-SGD of DP-KIP, DP-MERF's minibatches without replacement) and
q in {0.01, 1/30, 0.1}, at (epsilon, delta) = (1, 1e-5) and 10 epochs (T = 10 / q steps): the
multiplier the accountant calibrates now and the one the accountant before issue 40 calibrated
(min of autodp's Theorem 9 RDP -- for Poisson groups, at each order, also the weak-triangle bound,
now the test oracle ``tests/privacy/oracles.py`` -- and the exact Gaussian bound).

Run: ``python benchmarks/studies/accountant.py``.
"""

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout: package and tests
from benchmarks import harness  # noqa: E402

from sdv_dpkme.privacy._autodp import Mechanism, approx_dp, transformer_zoo  # noqa: E402
from sdv_dpkme.privacy.subsampled import (  # noqa: E402
    SAMPLING_POISSON,
    SAMPLING_WOR,
    _amplified,
    calibrate_subsampled,
    epsilon_bounds,
    exact_gaussian_epsilon,
    subsampled_rdp,
    tighter_bound,
)
from tests.privacy.oracles import poisson_group_rdp  # noqa: E402

EPSILON, DELTA, EPOCHS = 1.0, 1e-5, 10
RATES = [(0.01, '0.01'), (1 / 30, '1/30'), (0.1, '0.1')]
OUT = harness.RESULTS / 'accountant.md'


def old_epsilon(sigma, q, steps, sampling):
    """The accountant before issue 40: min(RDP, exact Gaussian)."""
    if sampling == SAMPLING_POISSON and q < 1:
        mech = Mechanism()
        mech.name, mech.params = 'PoissonReplaceOneGroup', {}
        mech.propagate_updates(poisson_group_rdp(subsampled_rdp(sigma, q), q, sigma, steps), 'RDP')
        rdp = approx_dp(transformer_zoo.Composition()([mech], [1]), DELTA)
    else:
        rdp = approx_dp(transformer_zoo.Composition()([_amplified(sigma, q)], [steps]), DELTA)
    return min(rdp, exact_gaussian_epsilon(None, [(sigma, q, steps)], DELTA))


def old_multiplier(q, steps, sampling):
    """Smallest sigma with old_epsilon <= EPSILON (bisection in log space, 1e-4 relative)."""
    high = 1.0
    while old_epsilon(high, q, steps, sampling) > EPSILON:
        high *= 2
    low = high / 2
    while old_epsilon(low, q, steps, sampling) <= EPSILON:
        high, low = low, low / 2
    while high / low > 1 + 1e-4:
        mid = math.sqrt(low * high)
        if old_epsilon(mid, q, steps, sampling) > EPSILON:
            low = mid
        else:
            high = mid
    return high


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.split('\n\n')[0]).parse_args(argv)
    rows = []
    for kind, sampling in [('Poisson DP-SGD (DP-KIP)', SAMPLING_POISSON),
                           ('minibatch without replacement (DP-MERF)', SAMPLING_WOR)]:
        for q, label in RATES:
            steps = math.ceil(EPOCHS / q)
            start = time.perf_counter()
            new = calibrate_subsampled(EPSILON, DELTA, None, q, steps, sampling=sampling)
            seconds = time.perf_counter() - start
            bounds = epsilon_bounds(None, [(new, q, steps, sampling)], DELTA)
            old = old_multiplier(q, steps, sampling)
            rows.append((kind, label, steps, old, new, tighter_bound(bounds),
                         min(bounds.values()), seconds, sampling == SAMPLING_POISSON))
            print(rows[-1], flush=True)
    lines = [
        '# Noise multipliers of the subsampled groups: new accountant against the old one',
        '',
        f'(epsilon, delta) = ({EPSILON:g}, {DELTA:g}), {EPOCHS} epochs: '
        f'T = ceil({EPOCHS}/q) steps, '
        'no plain releases. Multiplier = noise std / replace-one sensitivity of the released '
        'statistic (2C for DP-SGD; DP-SGD papers\' s/C is twice it, in brackets). Old: the '
        'accountant before issue 40 (min of autodp Theorem 9 RDP, for Poisson groups also the '
        'weak-triangle RDP bound at each order, and the exact Gaussian bound). New: min of the '
        'valid bounds (docs/privacy.md); "bound" names the one that set it. Calibration time: '
        'one calibration on a 2-core machine shared with other jobs.',
        '',
        '| group | q | T | old multiplier | new multiplier | new / old | bound | '
        'epsilon spent | calibration s |',
        '|---|---|---|---|---|---|---|---|---|',
    ]
    for kind, label, steps, old, new, bound, spent, seconds, poisson in rows:
        def fmt(x):
            return f'{x:.4g} ({2 * x:.4g})' if poisson else f'{x:.4g}'
        lines.append(f'| {kind} | {label} | {steps} | {fmt(old)} | {fmt(new)} | '
                     f'{new / old:.3f} | {bound} | {spent:.5f} | {seconds:.2f} |')
    lines.append('')
    lines.append('Produced by `benchmarks/studies/accountant.py`.')
    OUT.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    print('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
