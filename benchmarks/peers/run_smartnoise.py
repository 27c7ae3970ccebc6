"""Fit smartnoise-synth MST or AIM on a CSV and write a synthetic CSV (one run).

Runs under ``benchmarks/.venv-smartnoise/bin/python`` (see ``setup_smartnoise.sh``),
never under the project's venv: smartnoise-synth pins old packages. It imports nothing
from ``sdv_dpkme``; the harness (``benchmarks/harness/peers.py``) calls it as a subprocess.

DP-honest preprocessing. smartnoise's default ``TableTransformer.create`` learns the
category sets from the private data (``LabelTransformer._fit``) and, without bounds,
spends budget on DP bounds. Neither happens here: every column gets a transformer that
is *complete before it sees any data* (its ``_fit`` ignores values), built only from the
public domain file:

* categorical column -> ``PublicCategoryTransformer``: code = index in the public
  category list (a value outside the list raises, it is never added silently);
* numeric column -> ``PublicBinTransformer``: code = bin index on explicit public bin
  edges (``ADULT_BIN_EDGES``, or the domain file's ``bin_edges`` for another table) (values clipped to the public bounds first); the inverse draws a value
  uniformly inside the bin (integers for integer columns) from a seeded RNG, which is
  post-processing of the DP output.

Because the ``TableTransformer`` is already fit-complete, smartnoise skips its own fit
(``Synthesizer._get_train_data``) and spends no preprocessing budget; the whole ε, δ go
to the mechanism. The only data-dependent quantity smartnoise uses outside the
mechanism is the row count ``n`` (MST passes ``known_total=len(data)`` to Private-PGM,
AIM uses it implicitly through the unnormalised marginals), i.e. ``n`` is treated as
public, as in the replace-one neighbouring relation that DP-HP/DP-MERF also use.

Neighbouring relation (``--neighbours``). smartnoise calibrates MST and AIM for add/remove-one
neighbours: a marginal's L2 sensitivity 1, its exponential-mechanism scores' sensitivity 1 (the
L1 error of a marginal, times its weight). DP-HP and DP-MERF are private under replace-one
neighbours, where a row moves one unit of mass between two cells: the Gaussian measurements'
sensitivity is sqrt(2) (zCDP rho x 2) and the scores' is 2 (an eps-DP selection becomes
2 eps-DP; its rho = eps^2 / 8 x 4). ``--neighbours replace-one`` runs smartnoise at the rho that
gives the requested (epsilon, delta) under replace-one: MST spends 2/3 of its rho on
measurements and 1/3 on selection, so rho_replace = (2 x 2/3 + 4 x 1/3) rho = 8/3 rho; AIM
spends at most 0.1 of every round's rho on selection and its 1-way measurements are
measurements only, so rho_replace <= (2 x 0.9 + 4 x 0.1) rho = 2.2 rho. smartnoise is then
given the epsilon whose ``cdp_rho`` at delta is rho / that factor. The default, add-remove,
is what earlier rows were run at.

Seeding: ``--seed`` seeds NumPy's global RNG (MST/AIM selection via the exponential
mechanism, Private-PGM's sampling, the within-bin draws). The Gaussian noise comes from
OpenDP's ``make_gaussian`` (OS randomness) and is always fresh, so runs with the same
seed differ.

Output: the synthetic CSV (``--out``) and a JSON with timings, peak RSS (``VmHWM`` of
this process: imports + data + fit + sample), versions and the settings actually used
(``--info``).

Usage::

    benchmarks/.venv-smartnoise/bin/python benchmarks/peers/run_smartnoise.py \\
        --method mst --epsilon 1 --delta 1e-5 --train train.csv --domain domain.json \\
        --rows 39073 --seed 0 --out synthetic.csv --info info.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

# harness/system.py needs only the standard library, so this other venv can use it as is
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'harness'))
from system import vm_hwm_mb  # noqa: E402

#: Public bin edges for the numeric Adult columns, chosen a priori from the public bounds
#: in ``adult_domain.json`` and general knowledge, never from the data. Bins are
#: ``[e_i, e_{i+1})``; for integer columns the last edge is ``hi + 1``. Zero gets its own
#: bin for the two capital columns (most people have no capital income), 40 h for
#: ``hours-per-week`` (the standard full-time week); ``fnlwgt`` uses log-spaced edges.
ADULT_BIN_EDGES = {
    'age': [17, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 91],
    'fnlwgt': 'geomspace:16',
    'educational-num': 'integers',
    'capital-gain': [0, 1, 1000, 2000, 3000, 4000, 5000, 7500, 10000, 15000, 20000, 30000,
                     50000, 100000],
    'capital-loss': [0, 1, 500, 1000, 1500, 2000, 2500, 3000, 4357],
    'hours-per-week': [1, 10, 20, 25, 30, 35, 40, 41, 45, 50, 55, 60, 70, 80, 100],
}


def bin_edges(column, bounds, integer, spec):
    """Explicit public edges for ``column`` (see :data:`ADULT_BIN_EDGES`)."""
    lo, hi = bounds
    top = hi + 1 if integer else hi
    if spec is None:
        spec = 'linspace:10'
    if spec == 'integers':
        edges = np.arange(lo, hi + 2)
    elif isinstance(spec, str) and spec.startswith(('geomspace:', 'linspace:')):
        kind, count = spec.split(':')
        count = int(count)
        if kind == 'geomspace':
            edges = np.geomspace(max(lo, 1), top, count + 1)
            if lo < 1:
                edges = np.concatenate([[lo], edges])
        else:
            edges = np.linspace(lo, top, count + 1)
        edges = np.unique(np.round(edges)) if integer else edges
        edges[0], edges[-1] = lo, top
    else:
        edges = np.asarray(spec, dtype=float)
    edges = np.asarray(edges, dtype=float)
    if edges[0] != lo or edges[-1] != top or np.any(np.diff(edges) <= 0):
        raise ValueError(f'bad public edges for {column!r}: {edges} (bounds {bounds})')
    return edges


def make_transformers(columns, domain, rng):
    """Column transformers built only from the public domain (complete before any data)."""
    from snsynth.transform.base import ColumnTransformer
    from snsynth.transform.definitions import ColumnType

    class PublicTransformer(ColumnTransformer):
        """One categorical code per value; complete at construction, fitting ignores the data."""

        @property
        def output_type(self):
            return ColumnType.CATEGORICAL

        def _clear_fit(self):
            self._fit_complete = True
            self.output_width = 1

        def _fit(self, val):
            pass

        def _fit_finish(self):
            self._fit_complete = True

    class PublicCategoryTransformer(PublicTransformer):
        """Code = index in a public category list; fitting ignores the data."""

        def __init__(self, categories):
            self.categories = list(categories)
            self.labels = {value: index for index, value in enumerate(self.categories)}
            super().__init__()

        @property
        def cardinality(self):
            return [len(self.categories)]

        def _transform(self, val):
            try:
                return self.labels[val]
            except KeyError:
                raise ValueError(f'value {val!r} is not in the public category list') from None

        def _inverse_transform(self, val):
            return self.categories[int(val)]

    class PublicBinTransformer(PublicTransformer):
        """Code = bin on public edges; the inverse draws uniformly inside the bin."""

        def __init__(self, edges, bounds, integer):
            self.edges = np.asarray(edges, dtype=float)
            self.lo, self.hi = bounds
            self.integer = integer
            super().__init__()

        @property
        def cardinality(self):
            return [len(self.edges) - 1]

        def _transform(self, val):
            if val is None or (isinstance(val, float) and math.isnan(val)):
                raise ValueError('missing numeric value (Adult has none)')
            val = min(max(float(val), self.lo), self.hi)
            index = int(np.searchsorted(self.edges, val, side='right')) - 1
            return min(max(index, 0), len(self.edges) - 2)

        def _inverse_transform(self, val):
            left, right = self.edges[int(val)], self.edges[int(val) + 1]
            if self.integer:
                return int(min(rng.integers(int(left), int(right)), self.hi))
            return float(min(rng.uniform(left, right), self.hi))

    bounds = domain['known_min_max_values']
    categories = domain['known_categories']
    integers = set(domain.get('integer_columns', []))
    transformers, edges_used = [], {}
    for column in columns:
        if column in categories:
            transformers.append(PublicCategoryTransformer(categories[column]))
        elif column in bounds:
            spec = domain.get('bin_edges', {}).get(column, ADULT_BIN_EDGES.get(column))
            edges = bin_edges(column, bounds[column], column in integers, spec)
            edges_used[column] = [float(e) for e in edges]
            transformers.append(PublicBinTransformer(edges, bounds[column], column in integers))
        else:
            raise ValueError(f'column {column!r} has no public domain (categories or bounds)')
    return transformers, edges_used


def _versions():
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ('smartnoise-synth', 'mbi', 'opendp', 'jax', 'numpy', 'pandas'):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = 'not installed'
    return found


#: rho under replace-one neighbours over the rho smartnoise accounts (add/remove); see the
#: module docstring
REPLACE_ONE_FACTOR = {'mst': 8 / 3, 'aim': 2.2}


def add_remove_epsilon(method, epsilon, delta):
    """The epsilon to give smartnoise so that ``method`` is (epsilon, delta)-DP under replace-one
    neighbours: cdp_rho(result, delta) = cdp_rho(epsilon, delta) / the method's factor."""
    from snsynth.utils import cdp_rho

    target = cdp_rho(epsilon, delta) / REPLACE_ONE_FACTOR[method]
    low, high = 0.0, epsilon
    for _ in range(200):  # cdp_rho increases with epsilon
        middle = (low + high) / 2
        low, high = (middle, high) if cdp_rho(middle, delta) < target else (low, middle)
    return low


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--method', required=True, choices=('mst', 'aim'))
    parser.add_argument('--epsilon', type=float, required=True)
    parser.add_argument('--delta', type=float, default=1e-5)
    parser.add_argument('--train', required=True, help='training CSV (header row)')
    parser.add_argument('--domain', required=True,
                        help='JSON with known_min_max_values, known_categories, integer_columns')
    parser.add_argument('--rows', type=int, required=True, help='synthetic rows to sample')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--out', required=True, help='synthetic CSV to write')
    parser.add_argument('--info', required=True, help='JSON with timings and settings')
    parser.add_argument('--aim-rounds', type=int, default=None,
                        help='AIM rounds (default: smartnoise default 16 * n_columns)')
    parser.add_argument('--aim-max-model-size', type=float, default=None,
                        help='AIM max_model_size in MB (smartnoise default 80)')
    parser.add_argument('--aim-degree', type=int, default=None,
                        help='AIM workload degree (smartnoise default 2)')
    parser.add_argument('--neighbours', choices=('add-remove', 'replace-one'),
                        default='add-remove',
                        help="the relation under which --epsilon, --delta hold ('replace-one': "
                             "DP-HP's; module docstring)")
    args = parser.parse_args(argv)
    if not (args.epsilon > 0 and math.isfinite(args.epsilon)):
        parser.error('--epsilon must be a finite positive number')

    started = time.perf_counter()
    from snsynth import Synthesizer
    from snsynth.transform.table import TableTransformer

    import_s = time.perf_counter() - started
    np.random.seed(args.seed)
    rng = np.random.default_rng(args.seed)

    domain = json.loads(Path(args.domain).read_text(encoding='utf-8'))
    # '?' is a category in Adult: read every value as-is, nothing becomes NaN.
    train = pd.read_csv(args.train, keep_default_na=False, na_values=[])
    transformers, edges_used = make_transformers(list(train.columns), domain, rng)
    table_transformer = TableTransformer(transformers)
    assert table_transformer.fit_complete and not table_transformer.needs_epsilon

    kwargs = {}
    if args.method == 'aim':
        for key, value in (('rounds', args.aim_rounds), ('max_model_size', args.aim_max_model_size),
                           ('degree', args.aim_degree)):
            if value is not None:
                kwargs[key] = value
        # AIM first measures every 1-way marginal, each costing 0.9 * rho / rounds; with
        # rounds <= 0.9 * n_columns nothing is left for the selection rounds and smartnoise
        # crashes deep inside ('probabilities contain NaN'). Refuse that up front.
        if 'rounds' in kwargs and kwargs['rounds'] <= len(train.columns):
            parser.error(f'--aim-rounds must exceed the number of columns ({len(train.columns)}): '
                         'the 1-way measurements alone use 0.9 * n_columns / rounds of the '
                         'budget; about rounds - 0.9 * n_columns selection rounds follow')
    mechanism_epsilon = args.epsilon
    if args.neighbours == 'replace-one':
        mechanism_epsilon = add_remove_epsilon(args.method, args.epsilon, args.delta)
    # verbose=True only makes AIM print one 'Selected' line per round (captured, counted).
    synthesizer = Synthesizer.create(args.method, epsilon=mechanism_epsilon, delta=args.delta,
                                     verbose=args.method == 'aim', **kwargs)
    base_mb = vm_hwm_mb()
    log = io.StringIO()  # AIM prints its output width and initial sigma to stdout
    start = time.perf_counter()
    with contextlib.redirect_stdout(log):
        synthesizer.fit(train, transformer=table_transformer, preprocessor_eps=0.0)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    with contextlib.redirect_stdout(log):
        synthetic = synthesizer.sample(args.rows)
    sample_s = time.perf_counter() - start
    peak_mb = vm_hwm_mb()
    synthetic = pd.DataFrame(synthetic, columns=list(train.columns))
    synthetic.to_csv(args.out, index=False)

    info = {
        'method': args.method,
        'epsilon': args.epsilon,
        'delta': args.delta,
        'neighbours': args.neighbours,
        'mechanism_epsilon': mechanism_epsilon,  # what smartnoise was given (add/remove)
        # The transformers spend nothing, so everything goes to the mechanism.
        'epsilon_spent': args.epsilon if args.neighbours == 'replace-one' else float(
            getattr(synthesizer, 'epsilon', args.epsilon)),
        'preprocessor_epsilon': float(table_transformer.odometer.spent[0]),
        'seed': args.seed,
        'n_train': int(len(train)),
        'n_synthetic': int(len(synthetic)),
        'import_s': import_s,
        'fit_s': fit_s,
        'sample_s': sample_s,
        'base_mb': base_mb,
        'peak_mb': peak_mb,
        'cardinalities': [int(c) for c in table_transformer.cardinality],
        'bin_edges': edges_used,
        'model_kwargs': kwargs,
        'aim_rounds_effective': (kwargs.get('rounds') or 16 * len(train.columns))
        if args.method == 'aim' else None,
        'aim_selected_rounds': log.getvalue().count('Selected') if args.method == 'aim' else None,
        'stdout': log.getvalue()[-2000:],
        'versions': _versions(),
        'python': sys.version.split()[0],
    }
    Path(args.info).write_text(json.dumps(info, indent=2), encoding='utf-8')
    print(json.dumps({k: info[k] for k in ('method', 'epsilon', 'fit_s', 'sample_s', 'peak_mb')}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
