"""Engines: each method's algorithm box, knowing nothing of SDV.

``kme``: plan -> one pass -> Gaussian releases -> generator (DP-MERF, DP-HP);
``kip``: DP-SGD on a small support set (DP-KIP).
"""

from sdv_dpkme.engines.embedding import class_mean_embeddings, class_proportions
from sdv_dpkme.engines.generator import Objective, TabularGenerator, resolve_device, train_generator

__all__ = [
    'Objective',
    'TabularGenerator',
    'class_mean_embeddings',
    'class_proportions',
    'resolve_device',
    'train_generator',
]
