"""A domain spec skeleton written from the metadata alone, for the user to fill in.

It takes no data: every bound, category list, integer-ness and nullability is a placeholder (``null``) that the
user replaces with public knowledge. The data-derived keys of detected metadata (``range_min``,
``range_values``, ``range_is_nullable``, ...) are never copied into it, so a skeleton made from
detected metadata holds no fact of the private rows. A placeholder left unfilled is an error when
the spec is used (``parse_domain_spec``); deleting the key leaves the fact to DP discovery.
"""

from sdv_dpkme.domain.spec import MODELLED


def _single_table(metadata, table_name):
    tables = metadata.to_dict().get('tables', {})
    if table_name is None:
        if len(tables) != 1:
            raise ValueError(
                f'The metadata has tables {sorted(tables)}; pass table_name to pick one.'
            )
        table_name = next(iter(tables))
    if table_name not in tables:
        raise ValueError(f'The metadata has no table {table_name!r}; tables: {sorted(tables)}.')
    return table_name, tables[table_name].get('columns', {})


def _column_skeleton(meta):
    sdtype = meta.get('sdtype')
    if sdtype == 'numerical':
        rep = meta.get('computer_representation')
        # an Int representation is a written schema fact; else the user says (or deletes the
        # key, and a DP vote decides)
        integer = None if rep is None else str(rep).lower().startswith(('int', 'uint'))
        return {'min_value': None, 'max_value': None, 'integer': integer, 'nullable': None}
    if sdtype == 'datetime':
        return {'start_timestamp': None, 'end_timestamp': None, 'nullable': None}
    if sdtype == 'boolean':
        return {'nullable': None}  # the categories are always [False, True]
    # an ordinal 'order' is written by the user, never detected: it declares the categories
    order = meta.get('order') if sdtype == 'ordinal' else None
    return {'category_values': list(order) if order else None, 'nullable': None}


def domain_template(metadata, table_name=None):
    """A domain spec skeleton (``{'table_name', 'columns'}``) for every modelled column.

    Built from ``metadata`` (an ``sdv.metadata.Metadata``) alone: it reads no rows, and copies no
    data-derived key of the metadata. Replace each ``None`` with a public fact (bounds, the
    category list, whether missing values may occur), then pass the dict, or a JSON file of it,
    as ``domain=`` to a synthesizer. Columns of other sdtypes (ids, PII) are not modelled and are
    left out.
    """
    table_name, columns = _single_table(metadata, table_name)
    return {
        'table_name': table_name,
        'columns': {
            column: _column_skeleton(meta)
            for column, meta in columns.items() if meta.get('sdtype') in MODELLED
        },
    }
