"""What SDV keeps in a fitted synthesizer, made from public facts only.

SDV's base class stores state learned from the rows it is given: data-derived metadata keys, the
frame's dtypes, constraints fitted on the rows, transformers chosen from the values. Each helper
here builds that state from the declarations instead (metadata, domains, generators), so the saved
synthesizer is the same for any two tables that differ in one row (tests/privacy).
"""

import warnings

import numpy as np
import pandas as pd
from rdt.transformers.id import RegexGenerator
from rdt.transformers.pii.anonymizer import AnonymizedFaker
from sdv.errors import SynthesizerInputError

from sdv_dpkme.domain import parse_domain_spec, public_dtype, strip_data_derived


def public_metadata(metadata, metadata_is_public, domain):
    """The metadata as a dict without the keys SDV derives from the rows (unless it is public),
    with the datetime formats that the domain spec declares put back."""
    public = metadata.to_dict()
    if metadata_is_public:
        return public
    for name, table in public.get('tables', {}).items():
        try:
            declared = parse_domain_spec(domain, name)
        except ValueError:
            declared = {}  # reported with its message when the domains are resolved
        dropped = []
        for column, meta in list(table['columns'].items()):
            table['columns'][column] = strip_data_derived(meta)
            declared_format = declared.get(column, {}).get('datetime_format')
            if declared_format and meta.get('sdtype') == 'datetime':
                table['columns'][column]['datetime_format'] = declared_format
            elif meta.get('datetime_format'):
                dropped.append(column)
        if dropped:
            warnings.warn(
                f'The datetime_format of {dropped} in the metadata is ignored: detected metadata '
                'reads it off the private rows. Declare each public format in the domain spec '
                "(domain={'columns': {'<column>': {'datetime_format': '%Y-%m-%d'}}}), or set the "
                "spec's metadata_is_public to true; until then date strings are parsed one by "
                'one and synthetic dates come out as datetimes.'
            )
    return public


def generated_column(column, meta, processor, locales):
    """The generator of a column that is never modelled, from its metadata alone.

    SDV would model a ``pii: False`` column of a PII sdtype, and a non-key id column, on their raw
    values (UniformEncoder), and pick numbers or strings for an id from the private column's dtype.
    Here ids are random integers unless ``regex_format`` says otherwise, and every other sdtype is
    faked for its sdtype whatever its ``pii`` flag.
    """
    sdtype = meta['sdtype']
    unique = 'unique' if column in processor._keys or column == processor._primary_key else None
    if sdtype == 'id':
        if meta.get('regex_format'):
            return processor.create_regex_generator(column, sdtype, meta, is_numeric=False)
        return AnonymizedFaker(provider_name=None, function_name='random_int',
                               function_kwargs={'min': 0, 'max': 16_777_216},
                               cardinality_rule=unique, missing_value_generation=None)
    if sdtype == 'unknown':  # SDV sizes its pattern from the column's min/max (leak L7)
        return AnonymizedFaker(function_name='bothify', cardinality_rule=unique,
                               function_kwargs={'text': 'sdv-pii-?????'},
                               missing_value_generation=None)
    try:
        faker = processor.create_anonymized_transformer(sdtype, meta, unique, locales)
    except SynthesizerInputError:
        raise SynthesizerInputError(
            f"Column '{column}' has sdtype '{sdtype}', which Faker cannot generate for locales "
            f'{list(locales)}. Columns of this sdtype are never modelled (not even with pii: '
            "False, which would copy raw values): give it sdtype 'unknown' for placeholder "
            "strings, or 'categorical' with public known_categories to learn it under DP."
        ) from None
    return safe_generator(faker)


def safe_generator(transformer):
    """A generator that keeps no statistic of the rows; anything else becomes one.

    SDV would copy real ids of non-key id columns (leak L6); 'match'/'scale' cardinality rules
    store the number of distinct values, 'random' missing values the exact null rate.
    """
    if isinstance(transformer, (RegexGenerator, AnonymizedFaker)):
        if transformer.cardinality_rule not in (None, 'unique'):
            transformer.cardinality_rule = None
        if isinstance(transformer, AnonymizedFaker):
            transformer.missing_value_generation = None
        return transformer
    return AnonymizedFaker(function_name='bothify', function_kwargs={'text': 'sdv-id-??????'})


def generated_dtype(generator):
    """The dtype of what a generator makes: integers for Faker's random_int, else objects."""
    random_int = getattr(generator, 'function_name', None) == 'random_int'
    return np.dtype('int64') if random_int else np.dtype(object)


def column_dtypes(columns, domains, generator_of):
    """Output dtype of every column from public facts: its domain, or ``generator_of(column)``.

    SDV keeps the private frame's dtypes instead, which one row flips (a NaN in an int column).
    """
    return pd.Series({c: public_dtype(domains[c]) if c in domains else generated_dtype(
        generator_of(c)) for c in columns}, dtype=object)


def public_frame(columns, domains, dtypes):
    """A one-row stand-in table made of public facts only, for fitting the data processor where
    the rows are not at hand (a distributed fit): every modelled column holds the low end of its
    public domain (or its first category), every generated column a placeholder, all in the
    public ``dtypes``. The processor's transformers learn nothing from values (domains are
    public, generators are reseeded and given n), so this fits what the private rows would."""
    values = {}
    for column in columns:
        domain = domains.get(column)
        if domain is None:  # a generator: it only needs a value of its own dtype
            value = 0 if dtypes[column].kind in 'iu' else 'x'
        elif domain.empty:  # discovery released nothing: its one sampled bucket is missing
            value = None
        elif domain.sdtype == 'datetime':
            value = pd.Timestamp(int(domain.low))
            if domain.datetime_format:
                value = value.strftime(domain.datetime_format)
        elif domain.is_numeric:
            value = domain.low
        else:
            value = domain.categories[0] if len(domain.categories) else False
        values[column] = pd.Series([value]).astype(dtypes[column])
    return pd.DataFrame(values)


def set_data_length(generators, n):
    """RDT's id and PII generators keep ``data_length = len(data)`` of their fit: make it n, the
    public row count, whatever frame (all rows in memory, or a stand-in) they were fitted on."""
    for generator in generators:
        if isinstance(generator, (AnonymizedFaker, RegexGenerator)):
            generator.data_length = int(n)


def fit_constraints_publicly(constraints, table_data, metadata, dtypes):
    """Check the private rows against ``constraints`` (an error to the curator, nothing kept),
    then fit them on an empty table of the public ``dtypes``.

    Fitted on the rows, SDV's constraints keep the exact min/max and rounding of the columns they
    would drop (their formatters) and the private dtypes. Enforced by reject sampling only
    (``is_valid``), they read none of that state.
    """
    for constraint in constraints:
        constraint.validate(data=table_data, metadata=metadata)
    template = pd.DataFrame({c: pd.Series([], dtype=dtypes[c]) for c in table_data.columns})
    for constraint in constraints:
        constraint.fit(data=template, metadata=metadata)


def warn_undeclared_types(domains, table_data):
    """Tell the curator where the output types (which follow the declared domain only) differ
    from how the private table is stored. Not for discovered columns: nothing about their values
    may be said."""
    declared = [d for d in domains.values() if not d.discovered]
    integers = [d.name for d in declared if d.sdtype == 'numerical' and not d.integer
                and not d.integer_voted
                and table_data[d.name].dtype.kind in 'iu']
    if integers:
        warnings.warn(
            f'Columns {integers} are stored as integers but not declared integer, so their '
            'synthetic values are floats: the private dtype is not public (one row can change '
            "it). Declare them: domain={'columns': {'<column>': {'integer': True}}} or the "
            "spec's integer_columns."
        )
    strings = [d.name for d in declared if d.sdtype == 'datetime' and not d.datetime_format
               and table_data[d.name].dtype == object]
    if strings:
        warnings.warn(
            f'Datetime columns {strings} hold strings but have no declared datetime_format: each '
            'value is parsed on its own and synthetic values come out as datetimes. Declare the '
            "public format: domain={'columns': {'<column>': {'datetime_format': '%Y-%m-%d'}}}."
        )
