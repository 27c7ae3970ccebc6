"""Flatten a whole object graph into ``{path: leaf}`` so two fitted synthesizers can be diffed.

Every attribute reachable from the root is visited (``__dict__``, ``__slots__``, containers, numpy,
pandas and torch values, RNG states), so a fact about the private rows cannot hide in a corner the
test author did not think of. Leaves are compared exactly (floats by their bits, arrays by bytes).
"""

import enum
import pickle
import random
import types

import numpy as np
import pandas as pd
import torch

PRIMITIVES = (type(None), bool, int, float, complex, str, bytes, bytearray)


def _leaf(value):
    if isinstance(value, float):
        return ('float', 'nan' if value != value else value.hex())
    return (type(value).__name__, value)


def _faker_state(faker):
    """A Faker instance by its RNG state and locales (its providers are static data)."""
    try:
        return ('faker', tuple(faker.locales), pickle.dumps(faker.random.getstate()))
    except Exception:  # pragma: no cover - a Faker version without .random
        return ('faker', repr(faker))


def flatten(root, exclude=()):
    """``{path: leaf}`` of everything reachable from ``root``; paths that start with an entry of
    ``exclude`` (e.g. ``'._model.generator'``) are left out."""
    out, seen, alive = {}, {}, []  # alive: temporaries (RNG states) must keep their ids

    def skip(path):
        return any(path == e or path.startswith(e + '.') or path.startswith(e + '[')
                   for e in exclude)

    def visit(obj, path):
        if skip(path):
            return
        if isinstance(obj, PRIMITIVES):
            out[path] = _leaf(obj)
            return
        if isinstance(obj, enum.Enum):
            out[path] = ('enum', repr(obj))
            return
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType,
                            types.MethodType, types.ModuleType)):
            out[path] = ('code', getattr(obj, '__module__', None), getattr(obj, '__qualname__',
                                                                          repr(obj)))
            return
        if isinstance(obj, (np.dtype, pd.api.extensions.ExtensionDtype)):
            out[path] = ('dtype', str(obj))
            return
        if isinstance(obj, np.generic):
            out[path] = ('np', str(obj.dtype), obj.tobytes())
            return
        key = id(obj)
        if key in seen:  # shared or cyclic reference: record where it points
            out[path] = ('ref', seen[key])
            return
        seen[key] = path
        alive.append(obj)
        if isinstance(obj, np.ndarray):
            if obj.dtype == object:
                out[path + '.shape'] = ('shape', obj.shape)
                for i, item in enumerate(obj.ravel().tolist()):
                    visit(item, f'{path}[{i}]')
            else:
                out[path] = ('ndarray', str(obj.dtype), obj.shape, obj.tobytes())
            return
        if isinstance(obj, torch.Tensor):
            value = obj.detach().cpu()
            out[path] = ('tensor', str(value.dtype), tuple(value.shape),
                         value.contiguous().numpy().tobytes())
            return
        if isinstance(obj, types.GeneratorType):  # e.g. RDT's regex generators: by their frame
            out[path] = ('generator', obj.__qualname__, obj.gi_frame is None)
            if obj.gi_frame is not None:
                visit(dict(obj.gi_frame.f_locals), path + '<locals>')
            return
        if isinstance(obj, torch.Generator):
            out[path] = ('torch.Generator', obj.get_state().numpy().tobytes())
            return
        if isinstance(obj, np.random.RandomState):
            visit(obj.get_state(legacy=False), path + '<state>')
            return
        if isinstance(obj, np.random.Generator):
            visit(obj.bit_generator.state, path + '<state>')
            return
        if isinstance(obj, random.Random):
            out[path] = ('random.Random', pickle.dumps(obj.getstate()))
            return
        if type(obj).__module__.startswith('faker'):
            out[path] = _faker_state(obj)
            return
        if isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)):
            out[path] = ('pandas', type(obj).__name__, pickle.dumps(obj))
            return
        if isinstance(obj, dict):
            out[path + '<keys>'] = ('keys', tuple(repr(k) for k in obj))
            for k, v in obj.items():
                visit(v, f'{path}[{k!r}]')
            return
        if isinstance(obj, (list, tuple)):
            out[path + '<len>'] = (type(obj).__name__, len(obj))
            for i, v in enumerate(obj):
                visit(v, f'{path}[{i}]')
            return
        if isinstance(obj, (set, frozenset)):
            out[path] = ('set', tuple(sorted(repr(v) for v in obj)))
            return
        out[path + '<type>'] = ('type', type(obj).__module__, type(obj).__qualname__)
        state = {}
        if hasattr(obj, '__dict__'):
            state.update(vars(obj))
        for cls in type(obj).__mro__:
            for slot in getattr(cls, '__slots__', ()):
                if isinstance(slot, str) and hasattr(obj, slot) and slot not in state:
                    state[slot] = getattr(obj, slot)
        if not state:  # builtins such as iterators: by what pickle would store
            try:
                reduced = obj.__reduce_ex__(4)
            except Exception:
                reduced = None
            if isinstance(reduced, tuple):
                visit(list(reduced[1:]), path + '<reduce>')
            else:
                out[path] = ('object', type(obj).__qualname__)
        for name, value in state.items():
            visit(value, f'{path}.{name}')

    visit(root, '')
    return out


def diff(first, second, limit=20):
    """Paths whose leaves differ (or exist on one side only), for an assertion message."""
    paths = sorted(set(first) | set(second))
    out = [p for p in paths if first.get(p, '<absent>') != second.get(p, '<absent>')]
    return out[:limit] if limit else out
