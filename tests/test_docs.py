"""Every code block of README.md and docs/*.md runs, and the API reference builds.

Python blocks of one file run in order in one namespace (a page reads top to bottom), in a
temporary folder. ``bash`` / ``console`` blocks may hold only ``sdv-dpkme`` commands, variable
assignments and comments; each command runs through the CLI's ``main``. A block that cannot run
here (an install, a benchmark, a Spark session) is preceded by ``<!-- no-run: reason -->``.
Training is cut to a few steps and the bundled Adult sample to a few hundred rows, so the blocks
check that the code runs, not the scores.
"""

import dataclasses
import functools
import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / 'README.md', *sorted((REPO / 'docs').glob('*.md'))]
RUN_LANGUAGES = {'python', 'bash', 'console', 'sh', 'shell'}
NO_RUN = re.compile(r'<!--\s*no-run:\s*(\S.*?)\s*-->')
FENCE = re.compile(r'^```\s*([\w-]*)\s*$')
SAMPLE_ROWS = 600
# few steps and small kernels, for whichever of them a synthesizer has
FAST = {'steps': 5, 'batch_size': 64, 'generator_dims': (32,), 'latent_dim': 8, 'sum_order': 10,
        'product_redraws': 2, 'n_features': 200, 'max_basis_rows': 300, 'n_points': 100,
        'minibatch_size': 200, 'calibration_parents': 0}


@dataclasses.dataclass
class Block:
    page: Path
    line: int
    language: str
    code: str
    no_run: str = None

    def __str__(self):
        return f'{self.page.relative_to(REPO)}:{self.line}'


def code_blocks(page):
    """The fenced blocks of a markdown page, with the no-run reason that precedes each."""
    blocks, lines = [], page.read_text(encoding='utf-8').splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        start, language = i, match.group(1).lower()
        i += 1
        while i < len(lines) and not lines[i].startswith('```'):
            i += 1
        before = [text for text in lines[max(0, start - 3):start] if text.strip()]
        reason = NO_RUN.search(before[-1]) if before else None
        blocks.append(Block(page, start + 1, language, '\n'.join(lines[start + 1:i]) + '\n',
                            reason.group(1) if reason else None))
        i += 1
    return blocks


ALL_BLOCKS = [block for page in PAGES for block in code_blocks(page)]


def _pages_with(languages):
    return [page for page in PAGES
            if any(b.language in languages and not b.no_run for b in code_blocks(page))]


def test_pages_have_blocks_and_markers_are_sparing():
    assert len(ALL_BLOCKS) >= 10
    for block in ALL_BLOCKS:
        assert block.language, f'{block}: give the block a language (python, bash, json, ...)'
    skipped = [b for b in ALL_BLOCKS if b.no_run]
    assert len(skipped) <= len(ALL_BLOCKS) // 2, [str(b) for b in skipped]


# ----------------------------------------------------------------------------- fast fits
def _fast_init(original):
    parameters = inspect.signature(original).parameters

    @functools.wraps(original)  # SDV's get_parameters reads the signature
    def init(self, *args, **kwargs):
        if 'training' in parameters:  # options objects: shrink the fields they have
            for group in ('kernel', 'training'):
                option_class = getattr(type(self), f'_{group}_class', None)
                if option_class is None:
                    continue
                value = kwargs.get(group)
                if value is None:
                    value = option_class()
                elif isinstance(value, dict):
                    value = option_class(**value)
                names = {f.name for f in dataclasses.fields(option_class)}
                kwargs[group] = dataclasses.replace(
                    value, **{k: v for k, v in FAST.items() if k in names})
        else:
            kwargs.update({k: v for k, v in FAST.items() if k in parameters})
        kwargs['verbose'] = False
        original(self, *args, **kwargs)

    return init


@pytest.fixture
def fast(monkeypatch, tmp_path):
    """Few training steps, a few hundred Adult rows, a temporary working folder holding the
    bundled data files at their checkout paths."""
    import sdv_dpkme
    import sdv_dpkme.datasets as datasets

    for name in ('DPHPSynthesizer', 'DPMERFSynthesizer', 'DPKIPSynthesizer',
                 'DPReweightingSynthesizer'):
        cls = getattr(sdv_dpkme, name)
        parameters = inspect.signature(cls.__init__).parameters
        if 'training' not in parameters:  # before the options objects: class attributes too
            for key, value in FAST.items():
                if key not in parameters and hasattr(cls, key):
                    monkeypatch.setattr(cls, key, value)
        monkeypatch.setattr(cls, '__init__', _fast_init(cls.__init__))
    load = datasets.load_adult_sample

    def small_sample(*args, **kwargs):
        data, metadata, domain = load(*args, **kwargs)
        return data.head(SAMPLE_ROWS).reset_index(drop=True), metadata, domain

    monkeypatch.setattr(datasets, 'load_adult_sample', small_sample)
    folder = tmp_path / 'sdv_dpkme' / 'datasets' / 'data'
    folder.mkdir(parents=True)
    source = REPO / 'sdv_dpkme' / 'datasets' / 'data'
    for name in ('adult_metadata.json', 'adult_domain.json', 'ATTRIBUTION.md'):
        shutil.copy(source / name, folder / name)
    lines = (source / 'adult_sample.csv').read_text(encoding='utf-8').splitlines(True)
    (folder / 'adult_sample.csv').write_text(''.join(lines[:SAMPLE_ROWS + 1]), encoding='utf-8')
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -------------------------------------------------------------------------- python blocks
@pytest.mark.parametrize('page', _pages_with({'python'}), ids=lambda p: p.name)
def test_python_blocks_run(page, fast):
    namespace = {'__name__': '__docs__'}
    for block in code_blocks(page):
        if block.language != 'python' or block.no_run:
            continue
        try:
            exec(compile(block.code, str(block), 'exec'), namespace)  # noqa: S102
        except Exception as err:  # noqa: BLE001 - name the block, then fail
            pytest.fail(f'{block} failed: {type(err).__name__}: {err}')


# --------------------------------------------------------------------------- shell blocks
def shell_commands(block):
    """The ``sdv-dpkme`` argument lists of a bash/console block, with $VARIABLES expanded;
    anything else in the block (other than assignments and comments) is an error."""
    text = block.code
    if block.language == 'console':
        text = '\n'.join(line[2:] for line in text.splitlines() if line.startswith('$ '))
    text = text.replace('\\\n', ' ')
    variables, commands = {}, []
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        assignment = re.fullmatch(r'([A-Za-z_]\w*)=(.*)', words[0])
        if assignment and len(words) == 1:
            variables[assignment.group(1)] = assignment.group(2)
            continue
        assert words[0] == 'sdv-dpkme', (
            f'{block}: only sdv-dpkme commands run here; mark the block '
            f'<!-- no-run: reason --> if it cannot run in CI ({line.strip()!r})')
        expand = re.compile(r'\$\{?([A-Za-z_]\w*)\}?')
        commands.append([expand.sub(lambda m: variables[m.group(1)], w) for w in words[1:]])
    return commands


@pytest.mark.parametrize('page', _pages_with({'bash', 'console', 'sh', 'shell'}),
                         ids=lambda p: p.name)
def test_shell_blocks_run(page, fast, capsys):
    from sdv_dpkme.cli import main

    for block in code_blocks(page):
        if block.language not in RUN_LANGUAGES - {'python'} or block.no_run:
            continue
        for argv in shell_commands(block):
            try:
                main(argv)
            except SystemExit as exit_:
                err = capsys.readouterr().err
                pytest.fail(f'{block}: sdv-dpkme {shlex.join(argv)} exited {exit_.code}:\n{err}')


def test_shell_block_parser_refuses_other_commands():
    block = Block(REPO / 'README.md', 1, 'bash', 'D=x\nsdv-dpkme sample $D/a.pkl -n 5 \\\n'
                  '    --out o.csv  # rows\npip install foo\n')
    with pytest.raises(AssertionError, match='no-run'):
        shell_commands(block)
    block.code = 'D=x\nsdv-dpkme sample ${D}/a.pkl -n 5 \\\n    --out o.csv  # rows\n'
    assert shell_commands(block) == [['sample', 'x/a.pkl', '-n', '5', '--out', 'o.csv']]


def test_readme_front_page_shape():
    lines = (REPO / 'README.md').read_text(encoding='utf-8').splitlines()
    assert len(lines) <= 150
    first_code = next(i for i, line in enumerate(lines, 1) if line.startswith('```'))
    assert first_code <= 40
    text = '\n'.join(lines)
    assert 'bash scripts/test.sh' in text and 'bash scripts/demo.sh' in text
    assert 'detect_from_dataframes' in text and 'not public' in text.lower()
    for link in re.findall(r'\]\(((?:docs|benchmarks)/[^)#]+)', text):
        assert (REPO / link).exists(), f'README links to a missing file: {link}'


def test_doc_links_point_at_existing_files():
    for page in PAGES:
        for link in re.findall(r'\]\(([^)#:]+\.(?:md|py|png|json))[)#]', page.read_text()):
            assert (page.parent / link).exists(), f'{page.name} links to a missing {link}'


# --------------------------------------------------------------------------- API reference
def test_api_reference_builds(tmp_path):
    pytest.importorskip('pdoc')
    env = dict(os.environ, PYTHON=sys.executable, PYTHONWARNINGS='ignore',
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get('PYTHONPATH')])))
    result = subprocess.run(['bash', str(REPO / 'scripts' / 'api_docs.sh'), str(tmp_path)],
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    page = (tmp_path / 'sdv_dpkme.html').read_text(encoding='utf-8')
    import sdv_dpkme

    for name in ('DPHPSynthesizer', 'DPMERFSynthesizer', 'DPKIPSynthesizer',
                 'DPReweightingSynthesizer', 'PrivacyReport', 'fit_distributed'):
        assert f'id="{name}"' in page, f'{name} is missing from the API reference'
        first_line = (getattr(sdv_dpkme, name).__doc__ or '').strip().splitlines()[0]
        assert first_line and json.dumps(first_line)[1:12] in page.replace('&#39;', "'")
    for module in ('datasets', 'domain', 'evaluation', 'images'):
        assert (tmp_path / 'sdv_dpkme' / f'{module}.html').exists()
