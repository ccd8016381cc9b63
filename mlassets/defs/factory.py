"""Builds one dataset's asset graph, jobs, sensors and schedules from its config; keys are prefixed by the dataset
name.

A stage module has ``build(cfg, keys) -> assets``, ``automation(cfg, keys) -> sensors and schedules`` for
what starts runs by itself (and ``jobs(cfg, keys)`` for jobs of its own).
"""

from __future__ import annotations

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.defs import (
    automation,
    data,
    evaluation,
    features,
    fleet,
    monitoring,
    ops,
    registry,
    serving,
    snapshot,
    training,
    tuning,
)
from mlassets.defs.fleet.runs import fleet_run_tags
from mlassets.defs.jobs import ingest_job_name, pipeline_job_name
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.partitions import data_versions, raw_partitions

__all__ = ["STAGES", "dataset_defs", "ingest_job_name", "pipeline_job_name", "pipeline_selection"]
STAGES = (data, snapshot, features, training, evaluation, registry, serving, monitoring, tuning, ops, automation,
          fleet)


def pipeline_selection(cfg: PipelineConfig, assets: list[dg.AssetsDefinition]) -> list[dg.AssetKey]:
    """Every asset partitioned by data version: snapshot -> ... -> predictions, and the drift report."""
    versions = data_versions(cfg)
    return [key for a in assets if a.partitions_def == versions for key in a.keys]


def dataset_defs(cfg: PipelineConfig) -> dg.Definitions:
    keys = DatasetKeys.of(cfg)
    assets = dg.map_asset_specs(  # one readable pipeline per dataset in the lineage graph; owners on every asset
        lambda spec: spec.replace_attributes(group_name=f"{cfg.dataset.name}_{spec.group_name}",
                                             owners=list(cfg.automation.owners)),
        [asset for stage in STAGES if hasattr(stage, "build") for asset in stage.build(cfg, keys)])
    jobs = [
        dg.define_asset_job(ingest_job_name(cfg), selection=[keys.raw], partitions_def=raw_partitions(cfg),
                            executor_def=dg.in_process_executor),
        dg.define_asset_job(
            pipeline_job_name(cfg), selection=pipeline_selection(cfg, assets),
            executor_def=dg.in_process_executor,  # one process per run: on 2 cores a process per step costs more
            tags=fleet_run_tags(cfg),  # the job spec, however the run starts (the UI too): admission reads it
            description="snapshot -> validate -> features -> train -> evaluate -> gate -> register -> predict",
        ),
        *(job for stage in STAGES if hasattr(stage, "jobs") for job in stage.jobs(cfg, keys)),
    ]
    started = [d for stage in STAGES if hasattr(stage, "automation") for d in stage.automation(cfg, keys)]
    return dg.Definitions(assets=assets, jobs=jobs,
                          sensors=[d for d in started if isinstance(d, dg.SensorDefinition)],
                          schedules=[d for d in started if isinstance(d, dg.ScheduleDefinition)])
