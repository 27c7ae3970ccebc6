"""The benchmarks' shared harness: tables and declarations, synthesizer construction from flat
settings, process isolation and memory, timing, and report writing. Each study in
``benchmarks/studies/`` is a short script on top of it (benchmarks/README.md)."""
from . import plots
from .heldout import hypothyroid, wheel_member
from .make import epsilon_spent, fixed_noise, make
from .peers import SMARTNOISE_PYTHON, check_smartnoise, run_smartnoise
from .report import (append_jsonl, columns, fmt, largest, machine_line, markdown_table, mean_std,
                     parse_floats, parse_ints, read_jsonl, write_report)
from .stages import stage_times
from .system import (BENCH, RESULTS, ROOT, attempt, check_import, cpu_model, git_commit, machine,
                     memory_gb, run_isolated, shutdown_loky, usable_cores, versions, vm_hwm_mb)
from .tables import (DELTA, DOMAIN_ARMS, TARGET, adult_split, census_split, declaration,
                     fit_sample, score)

__all__ = [
    'BENCH', 'DELTA', 'attempt', 'SMARTNOISE_PYTHON', 'check_smartnoise', 'run_smartnoise', 'DOMAIN_ARMS', 'RESULTS', 'ROOT', 'TARGET', 'adult_split', 'append_jsonl',
    'census_split', 'check_import', 'columns', 'cpu_model', 'declaration', 'epsilon_spent', 'fit_sample',
    'fixed_noise', 'fmt', 'git_commit', 'hypothyroid', 'largest', 'machine', 'machine_line', 'make',
    'markdown_table', 'mean_std', 'plots', 'memory_gb', 'parse_floats', 'parse_ints', 'read_jsonl',
    'run_isolated', 'score', 'shutdown_loky', 'stage_times', 'usable_cores', 'versions',
    'vm_hwm_mb', 'wheel_member', 'write_report',
]
