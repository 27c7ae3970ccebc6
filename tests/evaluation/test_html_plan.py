"""Issue 42 item 2: the release plan appears in the HTML report's privacy ledger."""

from sdv_dpkme.evaluation.html_report import _ledger
from sdv_dpkme.privacy.report import PrivacyReport


def _report(plan):
    return PrivacyReport(epsilon=1.0, delta=1e-5, epsilon_spent=1.0,
                         neighbouring_relation='replace-one', accountant='test',
                         noise_source='secret', plan=plan)


def _entry(group, decision, reason):
    return dict(group=group, decision=decision, releases=0 if decision == 'dropped' else 1,
                planned=1, dimension=12345, sensitivity=0.01, noise_multiplier=3.0,
                expected_noise_norm=20.2, signal_bound=1.0, ratio=20.2, reason=reason)


def test_the_ledger_shows_each_plan_decision_and_why():
    page = _ledger(_report([_entry('pairs', 'dropped', 'noise <far> above'),
                            _entry('sum_kernel', 'kept', 'always released')]))
    assert '<h3>Release plan</h3>' in page
    assert '<td>pairs</td><td>dropped</td><td>0 of 1</td><td>12,345</td>' in page
    assert 'noise &lt;far&gt; above' in page  # reasons are escaped
    assert '<td>sum_kernel</td><td>kept</td>' in page


def test_no_plan_no_section():
    assert 'Release plan' not in _ledger(_report([]))
