"""The package's layers import only downward, not even lazily inside a function.

features, privacy -> domain -> engines -> scale, images -> synthesizers -> evaluation -> cli
(datasets and fileio with the bottom layer; the package root and ``__main__`` on top). Every
module is parsed with ``ast``, so an import inside a function, a relative import and an
``importlib.import_module('sdv_dpkme....')`` with a constant name are all seen.
"""

import ast
from pathlib import Path

import pytest

import sdv_dpkme

PACKAGE = Path(sdv_dpkme.__file__).parent

#: rank of each top-level part of the package; a module may import its own rank or lower
LAYERS = {
    '_version': 0, 'features': 0, 'privacy': 0, 'datasets': 0, 'fileio': 0,
    'domain': 1,
    'engines': 2,
    'scale': 3, 'images': 3,
    'synthesizers': 4,
    'evaluation': 5,
    'cli': 6, '': 6,  # '': the package root (sdv_dpkme/__init__.py), whose names the CLI uses
    '__main__': 7,
}


def module_name(path, package):
    parts = list(path.relative_to(package.parent).with_suffix('').parts)
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def layer_of(name):
    """The top-level part of ``sdv_dpkme`` that module ``name`` belongs to ('' for the root)."""
    parts = name.split('.')
    assert parts[0] == 'sdv_dpkme', name
    return parts[1] if len(parts) > 1 else ''


def imported_modules(tree, name, is_package):
    """(line, module) of every import of an ``sdv_dpkme`` module anywhere in ``tree``."""
    package = name if is_package else name.rpartition('.')[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split('.')
                base = base[:len(base) - (node.level - 1)]
                module = '.'.join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            yield node.lineno, module
            for alias in node.names:  # ``from sdv_dpkme import scale`` imports a submodule
                yield node.lineno, f'{module}.{alias.name}'
        elif (isinstance(node, ast.Call) and getattr(node.func, 'attr', getattr(
                node.func, 'id', None)) in ('import_module', '__import__') and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value


def is_module(dotted, package):
    path = package.parent.joinpath(*dotted.split('.'))
    return path.with_suffix('.py').is_file() or (path / '__init__.py').is_file()


def upward_imports(package=PACKAGE):
    """``'module:line imports target (layer a -> layer b)'`` for every import against the order."""
    found = []
    for path in sorted(package.rglob('*.py')):
        name = module_name(path, package)
        tree = ast.parse(path.read_text(encoding='utf-8'), filename=str(path))
        own = layer_of(name)
        for line, target in imported_modules(tree, name, path.name == '__init__.py'):
            if not target or target.split('.')[0] != 'sdv_dpkme':
                continue
            while target.count('.') and not is_module(target, package):  # ``from m import a_name``
                target = target.rpartition('.')[0]
            other = layer_of(target)
            for part in (own, other):
                if part not in LAYERS:
                    raise AssertionError(
                        f"sdv_dpkme.{part} has no layer: add it to LAYERS in {__file__}.")
            if LAYERS[other] > LAYERS[own]:
                found.append(f'{name}:{line} imports {target} ({own or "root"} -> {other or "root"})')
    return sorted(set(found))


def test_no_module_imports_from_a_higher_layer():
    upward = upward_imports()
    assert not upward, 'Imports against the layer order:\n' + '\n'.join(upward)


@pytest.mark.parametrize('code, expected', [
    ('def f():\n    from sdv_dpkme.synthesizers.base import BaseDPSynthesizer\n', True),
    ('from ..synthesizers import base\n', True),
    ('import importlib\nimportlib.import_module("sdv_dpkme.cli")\n', True),
    ('from sdv_dpkme.domain.unit_box import unit_box\n', False),
    ('from . import accumulate\n', False),
])
def test_the_check_sees_lazy_relative_and_dynamic_imports(tmp_path, code, expected):
    # a throwaway package shaped like ours, with one engines module holding ``code``
    root = tmp_path / 'sdv_dpkme'
    for part in ('engines', 'synthesizers', 'domain', 'cli'):
        (root / part).mkdir(parents=True)
        (root / part / '__init__.py').write_text('')
    (root / '__init__.py').write_text('')
    (root / 'synthesizers' / 'base.py').write_text('')
    (root / 'domain' / 'unit_box.py').write_text('')
    (root / 'engines' / 'accumulate.py').write_text('')
    (root / 'engines' / 'probe.py').write_text(code)
    found = upward_imports(root)
    assert bool(found) == expected, found
