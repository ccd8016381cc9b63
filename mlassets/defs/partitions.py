"""Partitions: raw data by month; everything downstream by data version (a full store commit id)."""

from __future__ import annotations

import dagster as dg

from mlassets.core.config import PipelineConfig


def months(cfg: PipelineConfig) -> dg.StaticPartitionsDefinition:
    return dg.StaticPartitionsDefinition(cfg.dataset.months)


def data_versions(cfg: PipelineConfig) -> dg.DynamicPartitionsDefinition:
    return dg.DynamicPartitionsDefinition(name=f"{cfg.dataset.name}_data_versions")
