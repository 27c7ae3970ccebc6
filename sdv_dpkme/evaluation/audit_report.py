"""HTML of an empirical privacy audit: the measured lower bound next to the claimed epsilon, as a
section of the synthesizer report (``build_report(..., audit=...)``) or a page of its own."""

from sdv_dpkme.evaluation.html_page import STYLE, e, format_number, html_section, html_table


def audit_section(result):
    """The section of ``AuditResult.to_dict()``: claim, bound, verdict, method and notes."""
    verdict = ('EXCEEDS the claim: the implementation leaks more than it accounts for'
               if result['exceeds_claim'] else 'at or below the claim')
    facts = [
        ('Synthesizer', result['synthesizer']),
        ('Claimed epsilon (delta)', f"{format_number(result['claimed_epsilon'])} "
                                    f"({format_number(result['delta'])})"),
        ('Measured lower bound on epsilon', format_number(result['epsilon_lower_bound'])),
        ('Verdict', verdict),
        ('Method of the bound', result['method']),
        ('Confidence', format_number(result['confidence'])),
        ('White-box trials + reference fits (canaries per fit)',
         f"{result['trials']} + {result['reference_fits']} ({result['canaries_per_trial']})"),
        ('Statistic', result['statistic']),
        ('Stand-in table (public)', result['stand_in']),
        ('Releases audited white-box', ', '.join(result['releases_audited']) or 'none'),
    ]
    bounds = html_table(['method', 'epsilon lower bound'],
                        [(k, format_number(v)) for k, v in result['bounds'].items()])
    notes = ''.join(f'<li>{e(n)}</li>' for n in result['notes'])
    return html_section(
        'privacy-audit', 'Privacy audit: measured lower bound next to the claim',
        html_table(['', ''], facts, cls='facts') + bounds + f'<ul>{notes}</ul>',
        note='Measured on a public stand-in table with a canary row (docs/audit.md), not on '
             'the data of this synthesizer.')


def audit_html(result):
    """A self-contained HTML page of ``AuditResult.to_dict()``."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<title>sdv-dpkme privacy audit</title><style>{STYLE}</style></head><body><main>'
        '<h1>Empirical privacy audit</h1>' + audit_section(result) + '</main></body></html>\n'
    )
