"""Public domains and the DP-safe transformers built from them."""

from sdv_dpkme.domain.discovery import DomainDiscoveryWarning, discover
from sdv_dpkme.domain.spec import (
    ColumnDomain,
    DomainError,
    build_domains,
    merge_declarations,
    missing_domain_message,
    parse_domain_spec,
    public_dtype,
    resolve_domains,
    strip_data_derived,
)
from sdv_dpkme.domain.template import domain_template
from sdv_dpkme.domain.transformers import (
    DP_TRANSFORMERS,
    DPCategoricalTransformer,
    DPDatetimeTransformer,
    DPDiscreteTransformer,
    DPNumericalTransformer,
    transformer_for,
)

__all__ = [
    'DP_TRANSFORMERS',
    'ColumnDomain',
    'DPCategoricalTransformer',
    'DPDatetimeTransformer',
    'DPDiscreteTransformer',
    'DPNumericalTransformer',
    'DomainDiscoveryWarning',
    'DomainError',
    'build_domains',
    'discover',
    'domain_template',
    'merge_declarations',
    'missing_domain_message',
    'parse_domain_spec',
    'public_dtype',
    'resolve_domains',
    'strip_data_derived',
    'transformer_for',
]
