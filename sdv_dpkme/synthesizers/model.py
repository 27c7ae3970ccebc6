"""Where synthesizers saved before the engines split find their model class (pickle paths)."""

from sdv_dpkme.engines.kme import KMEModel

__all__ = ['KMEModel']
