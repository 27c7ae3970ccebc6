"""Where the time of a call goes, by function name, without touching the package: the call runs
under cProfile and the cumulative time of the named functions is read off its statistics."""
from __future__ import annotations

import cProfile
import pstats
import time


def stage_times(call, stages):
    """Run ``call()``; return ``(result, seconds)``, ``seconds[name]`` = cumulative wall time of
    the functions that ``stages[name] = (path part, function name)`` names (summed over calls;
    0.0 when none ran in this thread), plus ``'total'``.

    Only the calling thread is profiled, and profiling slows pure-Python code a little: use
    the shares of the total, not the absolute values, where that matters.
    """
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    try:
        result = call()
    finally:
        profiler.disable()
    seconds = {'total': time.perf_counter() - start}
    stats = pstats.Stats(profiler).stats
    for name, (path_part, function) in stages.items():
        seconds[name] = sum(entry[3] for (path, _, func), entry in stats.items()
                            if func == function and path_part in path.replace('\\', '/'))
    return result, seconds
