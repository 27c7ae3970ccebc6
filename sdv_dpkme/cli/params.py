"""``--param NAME=VALUE``: the synthesizer arguments that have no option of their own."""

import json

from sdv_dpkme.cli.common import UsageError

# constructor arguments that have their own option, or that the command line does not offer
_OWN_OPTIONS = {'metadata', 'epsilon', 'delta', 'target_column', 'random_state', 'domain',
                'domain_budget_share', 'metadata_is_public', 'verbose', 'public_data'}
_REFUSED = {'noise_seed': 'it would fix the privacy noise, which voids the guarantee (tests use '
                          'sdv_dpkme.privacy.testing.fixed_noise)',
            'known_min_max_values': 'declare bounds in the --domain file',
            'known_categories': 'declare categories in the --domain file',
            'nullable_columns': 'declare nullability in the --domain file'}


def _parameters(pairs, cls):
    """The ``--param NAME=VALUE`` pairs as flat settings for ``build_kwargs``: constructor
    arguments without an option of their own, and kernel / training fields, bare (``steps``) or
    qualified (``training.steps``). Values are JSON, else plain words (``steps=auto``)."""
    from sdv_dpkme.synthesizers.options import build_kwargs

    params = {}
    for pair in pairs or []:
        key, sep, text = pair.partition('=')
        key = key.strip().replace('-', '_')
        if not sep or not key:
            raise UsageError(f"--param takes NAME=VALUE, got {pair!r}.")
        bare = key.rpartition('.')[2]
        if bare in _REFUSED:
            raise UsageError(f'--param {key} is not available on the command line: '
                             f'{_REFUSED[bare]}.')
        if key in _OWN_OPTIONS:
            raise UsageError(f'--param {key}: use its own option (see --help).')
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text  # a plain word, e.g. steps=auto
        params[key] = value
    try:
        build_kwargs(cls, params)  # unknown names and bad values fail here, before any work
    except Exception as err:  # noqa: BLE001 - SynthesizerInputError, or a bad value's TypeError
        raise UsageError(f'--param: {err}') from None
    return params


def _constructor_kwargs(cls, params, **arguments):
    """``cls``'s keyword arguments from the command's own options and the ``--param`` pairs."""
    from sdv_dpkme.synthesizers.options import build_kwargs

    return build_kwargs(cls, {**arguments, **params})
