"""Shared helpers of the command-line tests: a tiny Adult table on disk, the CLI as a subprocess,
and an HTML parser for the report."""

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# few steps and small kernels: a fit of 300 rows takes about a second
FAST_PARAMS = ['-p', 'steps=5', '-p', 'sum_order=10', '-p', 'product_redraws=2',
               '-p', 'batch_size=64', '-p', 'generator_dims=[32]', '-p', 'latent_dim=8',
               '-p', 'calibration_rows=2000', '-p', 'plan=fixed']


def write_adult_files(folder, train_rows=300, holdout_rows=200):
    """The bundled sample's first rows as a CSV (and a held-out CSV), its metadata and domain."""
    from sdv_dpkme.datasets import load_adult_sample

    data, metadata, domain = load_adult_sample()
    folder = Path(folder)
    paths = {name: folder / f'adult_{name}' for name in
             ('train.csv', 'holdout.csv', 'metadata.json', 'domain.json')}
    data.iloc[:train_rows].to_csv(paths['train.csv'], index=False)
    data.iloc[train_rows:train_rows + holdout_rows].to_csv(paths['holdout.csv'], index=False)
    paths['metadata.json'].write_text(json.dumps(metadata.to_dict()))
    paths['domain.json'].write_text(json.dumps(domain))
    return {k.split('.')[0]: v for k, v in paths.items()}


def cli_command(*args):
    return [sys.executable, '-m', 'sdv_dpkme', *map(str, args)]


def cli_env():
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))
    env['PYTHONWARNINGS'] = 'ignore'  # the tests read stderr for our messages
    return env


def run_cli(*args, cwd=None, timeout=180):
    """``python -m sdv_dpkme ARGS`` in a subprocess that imports this checkout."""
    return subprocess.run(cli_command(*args), cwd=cwd, env=cli_env(), capture_output=True,
                          text=True, timeout=timeout)


def run_cli_together(commands, cwd=None, timeout=180):
    """Several CLI runs at once (each pays the torch/SDV import); results in order."""
    procs = [subprocess.Popen(cli_command(*args), cwd=cwd, env=cli_env(), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for args in commands]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return results


class ReportParser(HTMLParser):
    """Ids, sections, figures, images, links and the score values of each table."""

    def __init__(self):
        super().__init__()
        self.ids, self.sections, self.figures, self.images = set(), [], [], []
        self.links, self.scripts, self.tables = [], 0, []
        self._section, self._in_value, self._texts = None, False, []
        self.section_text = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if 'id' in attrs:
            self.ids.add(attrs['id'])
        if tag == 'section':
            self._section = attrs.get('id')
            self.sections.append(self._section)
            self.section_text[self._section] = ''
        elif tag == 'figure':
            self.figures.append((self._section, attrs.get('class', '').split(),
                                 attrs.get('data-columns')))
        elif tag == 'img':
            self.images.append(attrs.get('src', ''))
        elif tag in ('a', 'link'):
            self.links.append(attrs.get('href', ''))
        elif tag == 'script':
            self.scripts += 1
        elif tag == 'table':
            self.tables.append((self._section, []))
        elif tag == 'span' and attrs.get('class') == 'value':
            self._in_value = True

    def handle_endtag(self, tag):
        if tag == 'section':
            self._section = None
        elif tag == 'span':
            self._in_value = False

    def handle_data(self, data):
        if self._section is not None:
            self.section_text[self._section] += data
        if self._in_value and self.tables:
            self.tables[-1][1].append(float(data))

    def scores(self, section):
        """The score columns of each table of a section, in page order."""
        return [values for where, values in self.tables if where == section]


def parse_report(path):
    parser = ReportParser()
    parser.feed(Path(path).read_text(encoding='utf-8'))
    return parser
