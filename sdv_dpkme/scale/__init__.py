"""Fits on rows that are not one pandas DataFrame: Parquet out of core, Dask, Spark.

The pass over the private rows is a map (``PartitionEncoder``: public encoder and feature maps ->
partial class sums) and a reduce (their sum, ``sdv_dpkme.engines.accumulate``); the noise is added
once on the driver. Domain discovery, when a column has no declared domain, is a pass of its own
before it, the same way (``DiscoveryCounter`` -> partial counts -> one noisy release). See
docs/scale.md.
"""

from sdv_dpkme.scale.fit import fit_distributed

__all__ = ['fit_distributed']
