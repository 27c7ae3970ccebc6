"""The options of every synthesizer beyond its ~10 constructor arguments, as frozen dataclasses.

Each synthesizer takes two of them:

- ``kernel``: everything that defines its noisy releases (feature maps, length scales, feature
  counts, budget shares, the pair releases and their caps);
- ``training``: everything after the releases (generator training, links, calibration,
  reweighting of generated rows), which is post-processing and spends no epsilon; for DP-KIP, its
  DP-SGD settings, which are part of its mechanism.

The defaults are each class's defaults. Every field appears in ``get_parameters()``, in the
privacy report (``PrivacyReport.parameters``) and in the CLI's ``--param`` (``build_kwargs``).
"""

import dataclasses
import inspect
import json
import os

from sdv.errors import SynthesizerInputError

from sdv_dpkme.domain.spec import merge_declarations
from sdv_dpkme.synthesizers.options_kip import (
    DPKIPKernel,
    DPKIPTraining,
    ReweightingKernel,
    ReweightingTraining,
)
from sdv_dpkme.synthesizers.options_kme import (
    DPHPKernel,
    DPHPTraining,
    DPMERFKernel,
    DPMERFTraining,
)

#: flat names that are top-level keys of the ``domain`` spec (docs/domains.md)
DOMAIN_KEYS = ('known_min_max_values', 'known_categories', 'nullable_columns', 'integer_columns',
               'metadata_is_public')
#: names that are never an option, with why
REFUSED = {
    'noise_seed': 'it fixed the privacy noise, which voids the guarantee; tests use '
                  'sdv_dpkme.privacy.testing.fixed_noise(seed) around fit instead',
}


def resolve_option(value, option_class, name):
    """``value`` (None: the defaults; an instance; or a dict of its fields) as an instance of
    ``option_class``."""
    if value is None:
        return option_class()
    if isinstance(value, option_class):
        return value
    if isinstance(value, dict):
        names = [f.name for f in dataclasses.fields(option_class)]
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise SynthesizerInputError(
                f'{option_class.__name__} has no field {unknown}; its fields are {names}.'
            )
        return option_class(**value)
    raise SynthesizerInputError(
        f'{name} must be a sdv_dpkme.{option_class.__name__} (or a dict of its fields), got '
        f'{type(value).__name__}.'
    )


def option_values(config, prefix):
    """``{prefix.field: value}`` of a config object (for the privacy report)."""
    return {f'{prefix}.{f.name}': getattr(config, f.name) for f in dataclasses.fields(config)}


def build_kwargs(cls, flat):
    """Constructor keyword arguments of ``cls`` from flat settings.

    ``flat`` maps names to values: constructor arguments (``epsilon``, ``domain``, ...), fields
    of the class's kernel or training options, bare (``steps``) or qualified
    (``training.steps``), and the domain shorthand (``known_min_max_values``,
    ``known_categories``, ``nullable_columns``, ``integer_columns``, ``metadata_is_public``),
    which is folded into ``domain`` as its top-level keys. A ``kernel`` or ``training`` object
    (or dict) in ``flat`` is the base that the fields given by name replace. Unknown names raise
    ``SynthesizerInputError`` listing the valid ones.
    """
    kernel_class, training_class = cls._kernel_class, cls._training_class
    top = [p for p in inspect.signature(cls.__init__).parameters
           if p not in ('self', 'metadata')]
    groups = {'kernel': (kernel_class, {}), 'training': (training_class, {})}
    fields = {group: [f.name for f in dataclasses.fields(option)]
              for group, (option, _) in groups.items()}
    out, shorthand = {}, {}
    for name, value in flat.items():
        group, dot, field = name.partition('.')
        if name in REFUSED or field in REFUSED:
            raise SynthesizerInputError(f'{name} is not an option: {REFUSED[field or name]}.')
        if dot:
            if group not in groups or field not in fields[group]:
                raise SynthesizerInputError(_unknown(cls, name, top, fields))
            groups[group][1][field] = value
        elif name in top:
            out[name] = value
        elif name in DOMAIN_KEYS:
            if value is not None:  # None: nothing declared
                shorthand[name] = value
        elif name in fields['kernel']:
            groups['kernel'][1][name] = value
        elif name in fields['training']:
            groups['training'][1][name] = value
        else:
            raise SynthesizerInputError(_unknown(cls, name, top, fields))
    for group, (option, values) in groups.items():
        if values:
            base = resolve_option(out.get(group), option, group)
            out[group] = dataclasses.replace(base, **values)
    if shorthand:
        out['domain'] = fold_domain(out.get('domain'), shorthand)
    return out


def _unknown(cls, name, top, fields):
    return (f'{cls.__name__} has no parameter {name!r}. Valid: the arguments {top}; kernel fields '
            f'{fields["kernel"]}; training fields {fields["training"]} (bare or as kernel.NAME '
            f'/ training.NAME); and the domain shorthand {list(DOMAIN_KEYS)}.')


def fold_domain(domain, shorthand):
    """The ``domain`` spec (None, a dict or a JSON path) with the shorthand keys added at its
    top level; a key the spec already has with another value is an error."""
    if domain is None:
        spec = {}
    elif isinstance(domain, (str, os.PathLike)):
        try:
            with open(domain, encoding='utf-8') as f:
                spec = json.load(f)
        except (OSError, json.JSONDecodeError) as err:
            raise SynthesizerInputError(f'Cannot read the domain spec {str(domain)!r}: {err}')
    elif isinstance(domain, dict):
        spec = dict(domain)
    else:
        raise SynthesizerInputError(f'domain must be a dict or a JSON file path, got {domain!r}.')
    if 'tables' in spec:
        raise SynthesizerInputError(
            f'The domain spec lists tables; put {sorted(shorthand)} in its table entry.'
        )
    try:  # a fact the spec's columns declare otherwise is an error, not silently overridden
        merge_declarations(shorthand.get('known_min_max_values'),
                           shorthand.get('known_categories'), shorthand.get('nullable_columns'),
                           spec)
    except ValueError as err:
        raise SynthesizerInputError(str(err)) from None
    for key, value in shorthand.items():
        previous = spec.get(key)
        if previous is None:
            spec[key] = value
        elif isinstance(previous, dict) and isinstance(value, dict):
            clash = [c for c in value if c in previous and _same(previous[c]) != _same(value[c])]
            if clash:
                raise SynthesizerInputError(
                    f'{key} declares {clash} differently from the domain spec; declare each '
                    'fact once.'
                )
            spec[key] = {**previous, **value}
        elif isinstance(previous, list) and isinstance(value, (list, tuple)):
            spec[key] = [*previous, *(c for c in value if c not in previous)]
        elif previous != value:
            raise SynthesizerInputError(
                f'{key}={value!r} differs from the domain spec ({previous!r}); declare it once.'
            )
    return spec


def spec_flag(domain, key):
    """A top-level key of the ``domain`` spec (dict or JSON path); None when absent or when the
    spec cannot be read (domain resolution reports that with its own message)."""
    if isinstance(domain, (str, os.PathLike)):
        try:
            with open(domain, encoding='utf-8') as f:
                domain = json.load(f)
        except (OSError, ValueError):
            return None
    return domain.get(key) if isinstance(domain, dict) else None


def _same(value):
    return list(value) if isinstance(value, (tuple, list)) else value


__all__ = ['DPHPKernel', 'DPHPTraining', 'DPMERFKernel', 'DPMERFTraining', 'DPKIPKernel',
           'DPKIPTraining', 'ReweightingKernel', 'ReweightingTraining', 'build_kwargs',
           'DOMAIN_KEYS']
