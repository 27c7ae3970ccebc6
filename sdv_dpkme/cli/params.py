"""``--param NAME=VALUE``: the synthesizer arguments that have no option of their own."""

import json

from sdv_dpkme.cli.common import UsageError

# constructor arguments that have their own option, or that the command line does not offer
_OWN_OPTIONS = {'metadata', 'epsilon', 'delta', 'target_column', 'random_state', 'domain',
                'domain_budget_share', 'metadata_is_public', 'verbose', 'public_data'}
_REFUSED = {'noise_seed': 'it fixes the privacy noise, which voids the guarantee (tests only)',
            'known_min_max_values': 'declare bounds in the --domain file',
            'known_categories': 'declare categories in the --domain file',
            'nullable_columns': 'declare nullability in the --domain file'}


def _parameters(pairs, cls):
    import inspect

    allowed = set(inspect.signature(cls.__init__).parameters) - {'self'}
    params = {}
    for pair in pairs or []:
        key, sep, text = pair.partition('=')
        key = key.strip().replace('-', '_')
        if not sep or not key:
            raise UsageError(f"--param takes NAME=VALUE, got {pair!r}.")
        if key in _REFUSED:
            raise UsageError(f'--param {key} is not available on the command line: '
                             f'{_REFUSED[key]}.')
        if key in _OWN_OPTIONS:
            raise UsageError(f'--param {key}: use its own option (see --help).')
        if key not in allowed:
            options = sorted(allowed - _OWN_OPTIONS - set(_REFUSED))
            raise UsageError(f'{cls.__name__} has no parameter {key!r}; it takes {options}.')
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text  # a plain word, e.g. steps=auto
        params[key] = list(value) if isinstance(value, list) and key.endswith('dims') else value
    return params


