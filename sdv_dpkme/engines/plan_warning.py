"""The warning before any spend when the plan carries little signal (public numbers only).

``weak_signal`` reads the plan (``noise_plan.PlanEntry``s): the method's own kernel, or where
that is subsampled per step the least noisy kept release, with expected noise above its signal
bound. ``warn_if_weak`` then says what to expect and what would help, and, when every kept
release is mostly noise, that the rows may match the data less well than random columns.
"""

import math
import warnings

from sdv_dpkme.engines.errors import NoiseDominatedWarning


def weak_signal(entries):
    """The method's own kernel (the plan's first entry) when its expected noise norm is above
    its signal bound (its noise can outweigh all its signal), else None. Where that release is
    not judged here (subsampled per step), the least noisy kept release stands in."""
    own = entries[0] if entries and math.isfinite(entries[0].ratio) else min(
        (e for e in entries if e.decision != 'dropped' and e.group != 'class_proportions'
         and math.isfinite(e.ratio)), key=lambda e: e.ratio, default=None)
    return own if own is not None and own.ratio > 1 else None


def warn_if_weak(entries, n, epsilon):
    """``NoiseDominatedWarning`` before any spend when ``weak_signal``; says what to expect and
    what would help. Quotes only public numbers (n is public in this package)."""
    best = weak_signal(entries)
    if best is None:
        return
    dropped = [e.group for e in entries if e.decision == 'dropped']
    left_out = f' (the plan already left out {dropped})' if dropped else ''
    kept = [e for e in entries if e.decision != 'dropped' and e.group != 'class_proportions'
            and math.isfinite(e.ratio)]
    least = min(kept, key=lambda e: e.ratio, default=None)
    # measured (benchmarks/results/small_marginals.md): with every release mostly noise, a fit
    # can score below columns drawn at random from the declared domain
    all_noise = '' if least is None or least.ratio <= 1 else (
        f" Every release of the plan is mostly noise (the least noisy, '{least.group}', at "
        f'{least.ratio:.2g} times its bound): the rows may match the data less well than '
        'columns drawn independently and uniformly from the declared domain would.')
    warnings.warn(
        f"At n={n} rows and epsilon={epsilon:g}, the plan's main release '{best.group}' "
        f'expects noise of norm {best.ratio:.2g} times the largest norm its signal can have'
        f'{left_out}. Expect synthetic rows that follow the data only roughly: blurred column '
        f'shapes, little of how columns move together, class shares off.{all_noise} More '
        'rows, a larger epsilon, or fewer or narrower columns (fewer categories, a coarser '
        'public grouping) would help. Nothing has been spent yet.',
        NoiseDominatedWarning, stacklevel=4,
    )
