"""Builds one dataset's asset graph and jobs from its config; keys are prefixed by the dataset name."""

from __future__ import annotations

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.defs import data, evaluation, features, ops, registry, serving, snapshot, training
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.partitions import raw_partitions

STAGES = (data, snapshot, features, training, evaluation, registry, serving, ops)


def ingest_job_name(cfg: PipelineConfig) -> str:
    return f"{cfg.dataset.name}_ingest"


def pipeline_job_name(cfg: PipelineConfig) -> str:
    return f"{cfg.dataset.name}_pipeline"


def dataset_defs(cfg: PipelineConfig) -> dg.Definitions:
    keys = DatasetKeys.of(cfg)
    assets = [asset for stage in STAGES for asset in stage.build(cfg, keys)]
    downstream = dg.AssetSelection.assets(keys.raw).downstream(include_self=False)
    jobs = [
        dg.define_asset_job(ingest_job_name(cfg), selection=[keys.raw], partitions_def=raw_partitions(cfg),
                            executor_def=dg.in_process_executor),
        dg.define_asset_job(
            pipeline_job_name(cfg), selection=downstream,
            executor_def=dg.in_process_executor,  # one process per run: on 2 cores a process per step costs more
            description="snapshot -> validate -> features -> train -> evaluate -> gate -> register -> predict",
        ),
    ]
    return dg.Definitions(assets=assets, jobs=jobs)
