"""Advice in the errors about missing or unusable domains: public words and fixed texts only."""

import re

# Words of a column name that suggest personal data; SDV's detection misses these and types the
# column categorical, which discovery cannot learn (every value is rare) and should not.
PII_WORDS = {
    'name': 'name', 'fullname': 'name', 'firstname': 'first_name', 'lastname': 'last_name',
    'surname': 'last_name', 'phone': 'phone_number', 'phonenumber': 'phone_number',
    'mobile': 'phone_number', 'telephone': 'phone_number', 'email': 'email', 'mail': 'email',
    'address': 'address', 'street': 'street_address', 'ssn': 'ssn',
}


def pii_sdtype(column):
    """A PII sdtype suggested by the column's name alone (public), or None."""
    spaced = re.sub(r'([a-z0-9])([A-Z])', r'\1 \2', str(column))
    words = [w for w in re.split(r'[^a-z0-9]+', spaced.lower()) if w]
    pairs = [a + b for a, b in zip(words, words[1:])]
    # the most specific match first: 'first_name' before 'name'
    return next((PII_WORDS[w] for w in [''.join(words), *pairs, *words] if w in PII_WORDS), None)


def sdtype_hint(column):
    """Advice for a categorical column whose name suggests personal data ('' otherwise)."""
    sdtype = pii_sdtype(column)
    if sdtype is None:
        return ''
    return (f"; its name suggests personal data: if so, give it sdtype '{sdtype}' in the "
            'metadata (then faked, never modelled)')


#: where the error messages send the user to write a spec from scratch
TEMPLATE_HINT = (
    'sdv_dpkme.domain.domain_template(metadata) writes a spec skeleton from the metadata alone, '
    'with a placeholder for every fact to declare.'
)
#: how detected metadata goes wrong, and the fix (the sdtype, not a category list)
DETECTION_HINT = (
    "Metadata from detect_from_dataframes often mistypes columns: True/False columns as "
    "'categorical' (set sdtype 'boolean': its domain [False, True] is public), integer columns "
    "with few values as 'ordinal' or 'categorical' (set 'numerical' and declare bounds), names "
    "and phone numbers as 'categorical' (set their PII sdtype, e.g. 'name', 'phone_number': they "
    'are then faked, never modelled).'
)


def missing_domain_message(hints):
    return (
        'These columns have no public domain. Declare each from public knowledge (never '
        'from the private data):\n'
        + '\n'.join(hints)
        + '\nor in one domain spec (domain={"columns": {...}}, see docs/domains.md), or set the '
        "spec's metadata_is_public to true (domain={'metadata_is_public': True}) if the "
        'metadata ranges were written from public knowledge, '
        'not detected from the data; or let the synthesizer discover them under differential '
        'privacy with domain_budget_share > 0 (it spends that share of the budget). '
        + TEMPLATE_HINT + ' ' + DETECTION_HINT
    )
