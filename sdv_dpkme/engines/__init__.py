"""Engines: embedding pass, generator and its training loop (no SDV here)."""

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
