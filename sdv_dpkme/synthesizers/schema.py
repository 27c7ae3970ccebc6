"""The public schema of a fit: the column domains a DP synthesizer may model.

Declared domains come from the user's public facts (``domain``, ``known_*``, metadata written
from public knowledge, a user's DP transformer); the rest are discovered under DP at fit, and the
integer-ness of numerical columns no public fact settles is voted under DP. The privacy report's
public-inputs text lists what was declared and what was released.
"""

import math
import warnings

from sdv.errors import SynthesizerInputError

from sdv_dpkme.domain import (
    DP_TRANSFORMERS,
    ColumnDomain,
    DomainError,
    discover,
    merge_declarations,
    missing_domain_message,
    resolve_domains,
)
from sdv_dpkme.domain import integers
from sdv_dpkme.domain.discovery import warn_discovered, warn_single_category
from sdv_dpkme.domain.spec import default_scale, is_discrete
from sdv_dpkme.domain.transformers import (
    DPDatetimeTransformer,
    DPDiscreteTransformer,
    DPNumericalTransformer,
)


class MissingDomainError(SynthesizerInputError, DomainError):
    """Modelled columns lack a public domain and discovery is off (``domain_budget_share=0``)."""


class PublicSchema:
    """Mixin of ``BaseDPSynthesizer``: its public domains (``_domains``, ``_undeclared``), their
    discovery and integer vote at fit (``_discovery``, ``_integer_vote``), and the report's
    public inputs."""

    def _resolve_domains(self):
        """(declared domains, undeclared columns) from the current public declarations.

        Run at construction (early errors) and again at every fit, so attributes set after
        construction (e.g. ``domain_budget_share``) take effect.
        """
        share = self.domain_budget_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share < 1:
            raise SynthesizerInputError(
                f'domain_budget_share must be a number in [0, 1), got {share!r}.'
            )
        columns = self._original_metadata._convert_to_single_table().columns
        try:
            declarations = merge_declarations(domain=self.domain, table_name=self._table_name)
            declared, undeclared, hints = resolve_domains(
                columns, declarations, self._metadata_is_public()
            )
        except ValueError as err:
            raise SynthesizerInputError(str(err)) from None
        for column, transformer in self._user_transformers.items():
            if column in undeclared and isinstance(transformer, DP_TRANSFORMERS):
                declared[column] = _domain_from_transformer(undeclared.pop(column), transformer)
        if undeclared and share == 0:
            hints = [h for h in hints if h.split("'")[1] in undeclared]
            raise MissingDomainError(
                missing_domain_message(hints)
                + ' Discovery is off here (domain_budget_share=0).'
            )
        target = self.target_column
        if target is not None:
            domain = declared.get(target) or undeclared.get(target)
            if domain is None or domain.is_numeric:
                raise SynthesizerInputError(
                    f"target_column '{target}' must be a categorical, boolean or ordinal "
                    f'column of the metadata; modelled columns are '
                    f'{sorted([*declared, *undeclared])}.'
                )
            if target in declared and len(declared[target].categories) < 2:
                raise SynthesizerInputError(
                    f"target_column '{target}' is declared with the single class "
                    f'{declared[target].categories}; a target needs 2 classes or more: '
                    f"domain={{'known_categories': {{'{target}': [...]}}}}."
                )
        order = list(columns)
        declared = dict(sorted(declared.items(), key=lambda item: order.index(item[0])))
        return declared, undeclared

    def _discover_domains(self, table_data, rows=None):
        """Declared domains, plus one DP release for the columns that have none (counted on
        ``rows``, a distributed row source, when given; else on ``table_data``)."""
        declared, undeclared = self._resolve_domains()
        self._discovery = None
        self._undeclared = undeclared
        source = table_data if rows is None else rows
        if undeclared:
            discovery = discover(source, undeclared, self._ledger, self.domain_budget_share)
            warn_discovered(discovery)
            warn_single_category(discovery, self.target_column)  # constant columns: warned
            self._discovery = discovery
            declared = {**declared, **discovery.domains}
        # after discovery, whose delta reservation must precede every release
        self._vote_integers(source, declared)
        order = list(self._original_metadata._convert_to_single_table().columns)
        self._domains = dict(sorted(declared.items(), key=lambda item: order.index(item[0])))

    def _vote_integers(self, rows, domains):
        """One DP vote on the integer-ness of the numerical columns no public fact settles; the
        default encoding rule then sees it (a small integer range becomes one-hot)."""
        self._integer_vote = None
        columns = [c for c, d in domains.items() if integers.needs_vote(d)]
        if not columns or not self.domain_budget_share:
            return
        result = integers.vote(rows, columns, self._ledger)
        if result is None:
            warnings.warn(
                f'Columns {columns} have no declared integer-ness and the table is too small '
                'for a DP vote on it, so they are modelled as floats. Declare it: '
                "domain={'columns': {'<column>': {'integer': True}}} (or False), or the spec's "
                'integer_columns.'
            )
            return
        self._integer_vote = result
        for column in columns:
            dom = domains[column]
            dom.integer, dom.integer_voted = result.integer[column], True
            if dom.integer and dom.discovered:  # discovered bounds: widen to whole numbers
                dom.low, dom.high = float(math.floor(dom.low)), float(math.ceil(dom.high))
            if dom.scale_by_rule:
                dom.scale = default_scale(dom)

    def _modelled_columns(self):
        return set(self._domains) | set(self._undeclared)

    def _public_inputs(self):
        def origin(d):
            return 'discovered under DP (domain_discovery)' if d.discovered else 'declared'

        def integer(d):
            if not d.integer_voted:
                return ''
            return ('; integer' if d.integer else '; not integer') + ' by DP vote (integer_discovery)'

        inputs = [f"bounds of '{d.name}': [{d.low:g}, {d.high:g}], {origin(d)}"
                  + (' (one-hot over its integer values)' if is_discrete(d) else
                     ' (log scale)' if d.scale == 'log' else '')
                  + (', encoding by the default rule' if d.scale_by_rule and d.scale not in
                     (None, 'linear') else '') + integer(d)
                  for d in self._domains.values() if d.is_numeric]
        inputs += [f"categories of '{d.name}': {len(d.categories)} {origin(d)} + missing + "
                   'out-of-domain buckets' for d in self._domains.values()
                   if not d.is_numeric and not d.empty]
        inputs += [f"'{d.name}': nothing released by domain_discovery, so only its missing "
                   'bucket (and the out-of-domain one) is modelled'
                   for d in self._domains.values() if d.empty]
        inputs.append('number of rows n (replace-one adjacency)')
        return inputs


def _domain_from_transformer(template, transformer):
    """A user's DP transformer for an undeclared column is a public declaration."""
    dom = ColumnDomain(name=template.name, sdtype=template.sdtype,
                       nullable=bool(transformer.nullable), nullable_declared=True)
    if isinstance(transformer, DPDiscreteTransformer):
        dom.low, dom.high = transformer.low, transformer.high
        dom.integer, dom.scale = True, 'discrete'
    elif isinstance(transformer, DPNumericalTransformer):
        dom.low, dom.high = transformer.low, transformer.high
        dom.integer = bool(transformer.integer)
        dom.decimal_places = transformer.decimal_places
        if isinstance(transformer, DPDatetimeTransformer):
            dom.datetime_format = transformer.datetime_format
    else:
        dom.categories = list(transformer.categories)
    return dom
