"""The argument parser. It imports nothing heavy (no torch, SDV or engines), so ``--help`` and a
refused argument answer at once; each command imports what it needs."""

import argparse

from sdv_dpkme.cli.common import SYNTHESIZERS, _delta, _epsilon, _rows, _share


def build_parser():
    parser = argparse.ArgumentParser(
        prog='sdv-dpkme',
        description='Differentially private synthetic tables from kernel mean embeddings. '
                    'Exit codes: 0 done, 1 failed while working, 2 bad argument or input '
                    '(found before any work). No command leaves a partial file.',
    )
    parser.add_argument('--debug', action='store_true',
                        help='show the traceback of a failure, and the private values that '
                             'error messages otherwise withhold (curator-side diagnostics: '
                             'do not share the output)')
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')

    f = sub.add_parser('fit', help='fit a DP synthesizer on a CSV or Parquet table',
                       description='Fit a DP synthesizer on a private table. Writes the '
                                   'synthesizer file (sdv.utils.load_synthesizer reads it) and '
                                   'the privacy report JSON. The table path is not stored.')
    f.add_argument('data', help='the private table: .csv, .parquet or .pq')
    f.add_argument('--metadata', '-m', default=None,
                   help='SDV metadata JSON file (required: write it by hand, or detect it with '
                        '`sdv-dpkme metadata` and check every sdtype)')
    f.add_argument('--domain', '-d', default=None,
                   help='domain spec JSON with the public bounds and categories (see '
                        'docs/domains.md; start from `sdv-dpkme domain-template`)')
    f.add_argument('--synthesizer', '-s', choices=sorted(SYNTHESIZERS), default='dphp')
    f.add_argument('--epsilon', type=_epsilon, required=True, help='privacy budget, > 0')
    f.add_argument('--delta', type=_delta, default=1e-5, help='in (0, 1); default 1e-5')
    f.add_argument('--target', default=None, help='categorical target column (required by '
                                                  'dpkip)')
    f.add_argument('--table', default=None, help='table name, if the metadata has several')
    f.add_argument('--public-data', default=None,
                   help='reweighting only: a table of PUBLIC rows (same columns) to reweight')
    f.add_argument('--seed', type=int, default=None,
                   help='model seed for reproducible training (never the privacy noise)')
    f.add_argument('--discovery-share', type=_share, default=0.1,
                   help='share of the budget spent discovering undeclared domains under DP '
                        '(default 0.1); 0 makes an undeclared column an error')
    f.add_argument('--metadata-is-public', action='store_true',
                   help='the metadata ranges were written from public knowledge, not detected')
    f.add_argument('--param', '-p', action='append', metavar='NAME=VALUE',
                   help="another synthesizer argument, value as JSON (e.g. -p steps=300 "
                        "-p 'generator_dims=[128,128]'); repeatable")
    f.add_argument('--na-value', action='append', metavar='TEXT',
                   help='a CSV field that means a missing value (default: only an empty field); '
                        'repeatable')
    f.add_argument('--out', '-o', required=True, help='synthesizer file to write, e.g. '
                                                      'synth.pkl')
    f.add_argument('--privacy-report', default=None,
                   help='privacy report JSON (default: the --out name with .privacy.json)')
    f.add_argument('--quiet', '-q', action='store_true', help='no progress bar')

    s = sub.add_parser('sample', help='sample a synthetic table from a synthesizer file',
                       description='Sample rows from a fitted synthesizer file (post-processing:'
                                   ' costs no privacy budget).')
    s.add_argument('synthesizer', help='synthesizer file written by `fit`')
    s.add_argument('--rows', '-n', type=_rows, required=True, help='rows to sample, >= 1')
    s.add_argument('--out', '-o', required=True, help='.csv or .parquet file to write')

    r = sub.add_parser('report', help='write an HTML report of a synthesizer file',
                       description='Write one self-contained HTML report. Without --real it '
                                   'holds only DP outputs (privacy ledger, training loss, '
                                   'synthetic rows). With --real it adds SDMetrics scores, plots '
                                   'of the worst columns and pairs and TSTR: that report shows '
                                   'real data and is NOT private.')
    r.add_argument('synthesizer', help='synthesizer file written by `fit`')
    r.add_argument('--real', default=None,
                   help='real table to compare with (.csv/.parquet); makes the report '
                        'non-private. Best a held-out table not used to fit.')
    r.add_argument('--rows', '-n', type=_rows, default=None,
                   help='synthetic rows to sample (default: as many as the real table, or 1000)')
    r.add_argument('--classifiers', default=None,
                   help='comma-separated TSTR classifiers (default: LogisticRegression,'
                        'GaussianNB,DecisionTreeClassifier,RandomForestClassifier)')
    r.add_argument('--na-value', action='append', metavar='TEXT',
                   help='a CSV field of --real that means a missing value (default: empty)')
    r.add_argument('--audit', default=None,
                   help='an audit JSON written by `sdv-dpkme audit`, shown next to the ledger')
    r.add_argument('--out', '-o', required=True, help='.html file to write')

    m = sub.add_parser(
        'metadata', help='detect SDV metadata from a CSV or Parquet table (NOT public: check it)',
        description='Detect SDV metadata from a table and write it as JSON, without the keys '
                    'SDV copies from the rows (ranges, category lists, formats). Detection reads '
                    'the private values, so the column types it picks are not public: check each '
                    'against public knowledge, then run `domain-template` on the file.')
    m.add_argument('data', help='the table: .csv, .parquet or .pq')
    m.add_argument('--out', '-o', required=True, help='metadata JSON file to write')
    m.add_argument('--table', default=None, help='table name (default: the file name)')
    m.add_argument('--na-value', action='append', metavar='TEXT',
                   help='a CSV field that means a missing value (default: only an empty field); '
                        'repeatable')

    t = sub.add_parser(
        'domain-template',
        help='write a domain spec skeleton from an SDV metadata JSON (never reads rows)',
        description='Write a domain spec skeleton from the metadata alone: it never reads a '
                    'row, and copies no data-derived metadata key. Fill each null with a public '
                    'fact, then pass the file to `fit --domain`.',
    )
    t.add_argument('metadata', help='SDV metadata JSON file')
    t.add_argument('--table', default=None, help='table name (needed if the metadata has several)')
    t.add_argument('--out', default=None, help='output JSON file (default: standard output)')

    p = sub.add_parser('demo', help='fit DP-HP on the bundled Adult sample and write the results')
    p.add_argument('--epsilon', type=_epsilon, default=1.0)
    p.add_argument('--delta', type=_delta, default=1e-5)
    p.add_argument('--rows', type=_rows, default=None, help='synthetic rows (default: as many)')
    p.add_argument('--seed', type=int, default=0, help='model seed (never the privacy noise)')
    p.add_argument('--out', default='out')

    a = sub.add_parser(
        'audit', help='measure a lower bound on epsilon on a PUBLIC stand-in table',
        description='Empirical privacy audit: fits the synthesizer with and without a canary row '
                    'on a PUBLIC stand-in table (default: the bundled Adult sample) and writes '
                    'the measured lower bound on epsilon next to the claimed one. NEVER give it '
                    'private rows: its output is not private. See docs/audit.md.')
    a.add_argument('--synthesizer', '-s', choices=sorted(SYNTHESIZERS), default='dphp')
    a.add_argument('--epsilon', type=_epsilon, default=1.0)
    a.add_argument('--delta', type=_delta, default=1e-5)
    a.add_argument('--data', default=None, help='a PUBLIC stand-in table (default: Adult sample)')
    a.add_argument('--metadata', '-m', default=None, help='SDV metadata JSON (with --data)')
    a.add_argument('--domain', '-d', default=None, help='public domain spec JSON (with --data)')
    a.add_argument('--table', default=None, help='table name, if the metadata has several')
    a.add_argument('--target', default=None, help='target column (default on Adult: income)')
    a.add_argument('--rows', type=_rows, default=None, help='use the first ROWS stand-in rows')
    a.add_argument('--trials', type=int, default=50,
                   help='white-box trials (fits stopped after their releases); default 50')
    a.add_argument('--black-box-fits', type=int, default=0,
                   help='full fits scored on samples (black-box); default 0')
    a.add_argument('--confidence', type=float, default=0.95)
    a.add_argument('--seed', type=int, default=0, help='model seed (never the privacy noise)')
    a.add_argument('--param', '-p', action='append', metavar='NAME=VALUE',
                   help='another synthesizer argument, value as JSON; repeatable')
    a.add_argument('--out', '-o', required=True, help='audit JSON file to write')
    a.add_argument('--html', default=None, help='also write an HTML page of the audit')
    a.add_argument('--quiet', '-q', action='store_true', help='no progress bar')
    return parser

