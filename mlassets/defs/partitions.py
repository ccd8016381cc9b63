"""Partitions: raw data by the dataset's own keys (months, weeks, names: added as they are ingested); everything
downstream by data version (a full store commit id, added when an ingest creates one)."""

from __future__ import annotations

import dagster as dg

from mlassets.core.config import PipelineConfig


def raw_partitions(cfg: PipelineConfig) -> dg.DynamicPartitionsDefinition:
    return dg.DynamicPartitionsDefinition(name=f"{cfg.dataset.name}_partitions")


def data_versions(cfg: PipelineConfig) -> dg.DynamicPartitionsDefinition:
    return dg.DynamicPartitionsDefinition(name=f"{cfg.dataset.name}_data_versions")
