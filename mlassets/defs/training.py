"""group training: checkpoints and the candidate model, from one training step run through Dagster Pipes.

With ``training.nproc > 1`` the step launches torchrun; only rank 0 talks to Dagster and MLflow (into this
run's MLflow run). torchrun never restarts ranks: the step's ``RetryPolicy`` does, so every restart shows
in the UI, and each attempt resumes from the newest valid checkpoint in the run's working area.
"""

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import mlflow
import pandas as pd

from mlassets.core import paths, run_log, tracking
from mlassets.core.candidates import commit_checkpoints, prepare_job, record, train_command
from mlassets.core.config import PipelineConfig
from mlassets.core.lineage_mlflow import log_data_version
from mlassets.core.run_log import RUN_ID, TRACKING_URI
from mlassets.core.train_job import TrainJob
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.partitions import data_versions
from mlassets.integrations.pipes import REPORT_ASSET_KEY

TELEMETRY_KEYS = ("median_step_ms", "samples_per_s", "share_data_wait", "share_compute", "share_sync",
                  "share_optim", "share_checkpoint", "slowest_rank_median_step_ms")


def checkpoints_key(cfg: PipelineConfig) -> dg.AssetKey:
    return dg.AssetKey([cfg.dataset.name, "checkpoints"])


def _checkpoint_metadata(result: dict[str, Any], commit: str, uris: dict[str, str], out_dir: Path) -> dict:
    listed = [{**c, "kept_as": ", ".join(k for k in ("final", "best") if result[f"{k}_checkpoint"] == c["path"])}
              for c in result["checkpoints"]]
    return {
        "checkpoints": dg.MetadataValue.json(listed),
        "final_checkpoint": uris["final"],
        "best_checkpoint": uris["best"],
        "store_commit": commit,
        "working_area": str(out_dir / "checkpoints"),
        "resumed_from_step": int(result["resumed_from_step"] or 0),
        "attempt": int(result["attempt"]),
        "steps": int(result["steps"]),
    }


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    ckpt_key = checkpoints_key(cfg)

    @dg.multi_asset(
        name=keys.candidate_model.to_python_identifier(),
        specs=[
            dg.AssetSpec(ckpt_key, deps=[keys.features], group_name="training", kinds={"pytorch"},
                         description="Final and best full-state checkpoints of the training run, in the store."),
            dg.AssetSpec(keys.candidate_model, deps=[ckpt_key], group_name="training", kinds={"pytorch", "mlflow"},
                         description="A model trained on the version's train split with the recorded config, "
                                     "commit and seed."),
        ],
        partitions_def=data_versions(cfg),
        required_resource_keys={"store", "pipes", "mlflow"},
        retry_policy=dg.RetryPolicy(max_retries=cfg.training.retries, delay=2),
    )
    def training(context: dg.AssetExecutionContext) -> Iterator[dg.MaterializeResult]:
        """Train (resuming a failed attempt of this run), log to MLflow, commit final and best checkpoints."""
        version = context.partition_key
        run_key = (context.run.root_run_id or context.run_id)[:8]  # a re-execution resumes its root's run
        out_dir = paths.work_dir(cfg.dataset.name, "train", version[:16], run_key)
        store = context.resources.store.open()
        job_path = prepare_job(store, cfg, version, out_dir)
        extras = {RUN_ID: mlflow.active_run().info.run_id, TRACKING_URI: mlflow.get_tracking_uri(),
                  REPORT_ASSET_KEY: keys.candidate_model.to_user_string()}
        env = {**os.environ, "OMP_NUM_THREADS": str(cfg.training.threads)}
        invocation = context.resources.pipes.run(command=train_command(cfg.training.nproc, job_path),
                                                 context=context, env=env, extras=extras)
        reported = {k: v for r in invocation.get_results() for k, v in (r.metadata or {}).items()}
        result = json.loads((out_dir / "result.json").read_text())
        run_log.replay(out_dir, extras[RUN_ID])  # metrics of a run too short for rank 0 to have logged them
        tracking.log_training(cfg.to_dict(), {**result, "curves": []})  # rank 0 logged the curves
        log_data_version(cfg, version, {"train": int(result["n_train"]), "validation": int(result["n_val"])}, store)
        rows = pd.read_parquet(TrainJob.from_json(job_path).validation_path).head(20)
        model_uri = tracking.log_model(out_dir / "model", rows)  # with its input/output signature
        rec = record(cfg, version, result)
        mlflow.set_tags({"data_commit": version, "git_sha": rec["git_sha"], "dataset": cfg.dataset.name})
        commit, uris = commit_checkpoints(store, cfg, version, run_key, result)
        yield dg.MaterializeResult(asset_key=ckpt_key, metadata=_checkpoint_metadata(result, commit, uris, out_dir))
        summary = result["telemetry"]
        yield dg.MaterializeResult(
            asset_key=keys.candidate_model,
            metadata={
                **reported,
                **rec,
                "model_uri": model_uri,
                "mlflow_run_id": mlflow.active_run().info.run_id,
                f"val_{result['val_metric_name']}": dg.MetadataValue.float(float(result["val_metric"])),
                **{f"telemetry_{k}": dg.MetadataValue.float(float(summary[k])) for k in TELEMETRY_KEYS if k in summary},
            },
        )

    return [training]
