"""What private domain discovery tells the curator, before and after its release.

Every message quotes only public facts (n, thresholds, the budget) or outputs of the discovery
release; none quotes a private value.
"""

import warnings

import numpy as np
import pandas as pd

from sdv_dpkme.domain.hints import DETECTION_HINT, TEMPLATE_HINT, sdtype_hint


def hopeless_message(hopeless, undeclared, n_rows, t_num, t_cat, noise_std, budget_share):
    lines = []
    for column in hopeless:
        dom = undeclared[column]
        if dom.is_numeric:
            lines.append(f"  - '{column}' ({dom.sdtype}): a bin of the public grid needs "
                         f'{t_num[column]:.0f} rows')
        else:
            lines.append(f"  - '{column}' ({dom.sdtype}): a value needs {t_cat:.0f} rows"
                         + sdtype_hint(column))
    return (
        f'The table has {n_rows} rows, too few to discover these domains under DP (the noise '
        f'std is {noise_std:.0f} rows with domain_budget_share={budget_share:g} over '
        f'{len(undeclared)} column(s)):\n' + '\n'.join(lines)
        + '\nNothing was spent. Declare their domains from public knowledge (docs/domains.md): '
        + TEMPLATE_HINT + ' ' + DETECTION_HINT
        + ' Or discover fewer columns, or raise epsilon or domain_budget_share.'
    )


# A discovered domain estimated to cut more than this share of the rows is pointed out.
CUT_WARNING = 0.05


def show_cut(cut):
    share, std = cut
    return f'about {share:.0%} of rows (noise std {std:.0%})' if std else f'{share:.1%} of rows'


def show_value(value, domain):
    if domain.sdtype == 'datetime':
        return str(pd.Timestamp(int(value)))
    return f'{value:g}'


def warn_discovered(discovery):
    """Tell the curator which columns were discovered, at what cost, and what came out."""
    d = discovery.release.details
    lines = [f"  - '{column}': {text}" for column, text in discovery.summary.items()]
    extra = ''
    if d['category_threshold_rows'] is not None:
        extra = (
            f' A category is released only if about {d["category_threshold_rows"]:.0f} or more '
            'rows hold it; rarer values go to the out-of-domain bucket.'
        )
    cutting = [c for c, (share, _) in discovery.cut.items() if share > CUT_WARNING]
    if cutting:
        extra += (
            f'\nThe discovered domains of {cutting} are estimated to cut more than '
            f'{CUT_WARNING:.0%} of their rows (from the same noisy release, so each estimate has '
            'the noise std shown): declare them, or raise epsilon or domain_budget_share.'
        )
    warnings.warn(
        f'{len(d["columns"])} column(s) had no declared public domain and were discovered under '
        f'differential privacy with domain_budget_share={d["budget_share"]:g} of the budget '
        f'(that release alone: epsilon={d["epsilon_alone"]:.3g}, '
        f'delta={d["delta_alone"]:.3g}):\n' + '\n'.join(lines) + '\n' + extra.strip()
        + '\nDeclare these domains (docs/domains.md) to spend nothing on them.',
        DomainDiscoveryWarning,
        stacklevel=3,
    )


class DomainDiscoveryWarning(UserWarning):
    """Some columns' domains are being estimated under DP (a share of the budget is spent)."""


def warn_single_category(discovery, target=None):
    """Warn about discovered category lists of one value: the column is constant in every
    synthetic row.

    A flag whose rare value fell under the threshold keeps one value, and so may a target. The
    discovery release is already spent, so the fit goes on (the column, or the target's class,
    is simply constant; a one-class target is a class-conditional model with that one class)
    and the warning says what to declare. Everything said here is an output of that release.
    """
    problems = []
    for column, dom in discovery.domains.items():
        if dom.is_numeric or len(dom.categories) != 1:
            continue
        (value,) = dom.categories
        role = (' (the target_column: every synthetic row gets this class; a target needs 2 '
                'classes or more to be learned)' if column == target else '')
        cut = discovery.cut.get(column)
        other = f' ({show_cut(cut)} hold other values)' if cut else ''
        if isinstance(value, (bool, np.bool_)):
            fix = (f"If it is a True/False flag, give it sdtype 'boolean' in the metadata (its "
                   f"domain [False, True] is public); else declare domain={{'known_categories': "
                   f"{{'{column}': [{value!r}, ...]}}}}.")
        elif isinstance(value, (int, float, np.integer, np.floating)):
            fix = (f"If it holds numbers, give it sdtype 'numerical' and declare "
                   f"domain={{'known_min_max_values': {{'{column}': (low, high)}}}}; else declare "
                   f"domain={{'known_categories': {{'{column}': [{value!r}, ...]}}}}.")
        else:
            fix = f"Declare its categories: domain={{'known_categories': {{'{column}': [{value!r}, ...]}}}}."
        problems.append(f"  - '{column}'{role}: discovery released only {value!r}{other}, so "
                        f'every synthetic row holds it. {fix}')
    if problems:
        t_cat = discovery.release.details['category_threshold_rows']
        warnings.warn(
            'Private domain discovery left these columns with a single category (a value is '
            f'released only if about {t_cat:.0f} or more rows hold it):\n' + '\n'.join(problems)
            + '\nThe fit goes on with these columns constant (the budget is spent, so the model '
            'is kept). To model them, declare these columns (docs/domains.md) and fit again, or '
            'raise epsilon or domain_budget_share. ' + TEMPLATE_HINT,
            DomainDiscoveryWarning,
            stacklevel=3,
        )


def warn_released_nothing(failures, noise_std, budget_share):
    """Columns where no bin or value cleared its threshold: the release is spent, so they keep
    only their missing bucket (every synthetic value missing) and the fit goes on."""
    warnings.warn(
        'Private domain discovery released nothing usable for these columns (the noise std is '
        f'{noise_std:.0f} rows with domain_budget_share={budget_share:g}):\n'
        + '\n'.join(failures)
        + '\nThe fit goes on without modelling them: all their synthetic values are missing. '
        'To model them, declare their domains (see docs/domains.md) and fit again, or raise '
        'epsilon or domain_budget_share. ' + TEMPLATE_HINT + ' ' + DETECTION_HINT,
        DomainDiscoveryWarning,
        stacklevel=3,
    )
