"""Partitions: raw data by the dataset's own keys (months, weeks, names: added as they are ingested); everything
downstream by data version (a full store commit id, added when an ingest creates one)."""

from __future__ import annotations

import warnings

import dagster as dg

from mlassets.core.config import PipelineConfig


def raw_partitions(cfg: PipelineConfig) -> dg.DynamicPartitionsDefinition:
    return dg.DynamicPartitionsDefinition(name=f"{cfg.dataset.name}_partitions")


def data_versions(cfg: PipelineConfig) -> dg.DynamicPartitionsDefinition:
    return dg.DynamicPartitionsDefinition(name=f"{cfg.dataset.name}_data_versions")


def blocking_check(name: str, asset: dg.AssetKey, partitions_def: dg.PartitionsDefinition,
                   description: str) -> dg.AssetCheckSpec:
    """A blocking check partitioned like its asset, so each result names its partition (the Partition column of
    the check's history). Dagster 1.13 calls partitioned checks a preview; its warning is silenced here only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return dg.AssetCheckSpec(name, asset=asset, blocking=True, description=description,
                                 partitions_def=partitions_def)
