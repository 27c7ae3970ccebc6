"""Public domains and the DP-safe transformers built from them."""

from sdv_dpkme.domain.spec import ColumnDomain, DomainError, build_domains, strip_data_derived
from sdv_dpkme.domain.transformers import (
    DP_TRANSFORMERS,
    DPCategoricalTransformer,
    DPDatetimeTransformer,
    DPNumericalTransformer,
    transformer_for,
)

__all__ = [
    'DP_TRANSFORMERS',
    'ColumnDomain',
    'DPCategoricalTransformer',
    'DPDatetimeTransformer',
    'DPNumericalTransformer',
    'DomainError',
    'build_domains',
    'strip_data_derived',
    'transformer_for',
]
