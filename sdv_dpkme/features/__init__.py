"""Bounded feature maps (every map states and tests ||phi(x)|| <= 1)."""

from sdv_dpkme.features.blocks import (
    Block,
    ProductKernelMap,
    SumKernelMap,
    draw_product_subsets,
    project_unit_ball,
    replace_sensitivity,
)
from sdv_dpkme.features.hermite import hermite_features, hermite_rho
from sdv_dpkme.features.marginal import FourierMarginalMap
from sdv_dpkme.features.one_way import OneWayMap
from sdv_dpkme.features.pairwise import PairwiseKernelMap, pair_blocks_within
from sdv_dpkme.features.rff import FourierKernelMap

__all__ = [
    'Block',
    'FourierKernelMap',
    'FourierMarginalMap',
    'OneWayMap',
    'PairwiseKernelMap',
    'ProductKernelMap',
    'SumKernelMap',
    'draw_product_subsets',
    'hermite_features',
    'hermite_rho',
    'pair_blocks_within',
    'project_unit_ball',
    'replace_sensitivity',
]
