"""HTML page of an empirical privacy audit: the measured lower bound next to the claimed epsilon."""

from sdv_dpkme.evaluation.html_report import _number, _section, _table, e


def audit_html(result):
    """A self-contained HTML page of ``AuditResult.to_dict()``."""
    verdict = ('EXCEEDS the claim: the implementation leaks more than it accounts for'
               if result['exceeds_claim'] else 'at or below the claim')
    facts = [
        ('Synthesizer', result['synthesizer']),
        ('Claimed epsilon (delta)', f"{_number(result['claimed_epsilon'])} "
                                    f"({_number(result['delta'])})"),
        ('Measured lower bound on epsilon', _number(result['epsilon_lower_bound'])),
        ('Verdict', verdict),
        ('Method of the bound', result['method']),
        ('Confidence', _number(result['confidence'])),
        ('Fits (canaries per fit)', f"{result['trials']} ({result['canaries_per_trial']})"),
        ('Statistic', result['statistic']),
        ('Stand-in table (public)', result['stand_in']),
        ('Releases audited white-box', ', '.join(result['releases_audited']) or 'none'),
    ]
    body = _table(['', ''], facts, cls='facts')
    bounds = _table(['method', 'epsilon lower bound'],
                    [(k, _number(v)) for k, v in result['bounds'].items()])
    notes = ''.join(f'<li>{e(n)}</li>' for n in result['notes'])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<title>sdv-dpkme privacy audit</title></head><body><h1>Empirical privacy audit</h1>'
        + _section('audit', 'Lower bound next to the claim', body)
        + _section('bounds', 'Bounds by method', bounds)
        + _section('notes', 'Notes', f'<ul>{notes}</ul>')
        + '</body></html>\n'
    )
