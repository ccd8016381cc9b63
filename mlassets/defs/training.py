"""group training: the candidate model, trained in its own process through Dagster Pipes."""

import json
import os
import sys
from pathlib import Path

import dagster as dg
import mlflow

from mlassets.core import paths, tracking
from mlassets.core.candidates import prepare_job, record
from mlassets.core.config import PipelineConfig
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.partitions import data_versions


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    @dg.asset(
        key=keys.candidate_model,
        partitions_def=data_versions(cfg),
        group_name="training",
        deps=[keys.features],
        required_resource_keys={"store", "pipes", "mlflow"},
        retry_policy=dg.RetryPolicy(max_retries=1, delay=2),
        kinds={"pytorch", "mlflow"},
    )
    def candidate_model(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        """A model trained on the version's train split with the recorded config, commit and seed."""
        version = context.partition_key
        out_dir = paths.work_dir(cfg.dataset.name, "train", version[:16], context.run_id[:8])
        job_path = prepare_job(context.resources.store.open(), cfg, version, out_dir)
        env = {**os.environ, "OMP_NUM_THREADS": str(cfg.training.threads)}
        command = [sys.executable, "-m", "mlassets.core.train", "--job", str(job_path)]
        reported = context.resources.pipes.run(command=command, context=context, env=env).get_materialize_result()
        result = json.loads((Path(out_dir) / "result.json").read_text())
        tracking.log_training(cfg.to_dict(), result)
        model_uri = tracking.log_model(Path(out_dir) / "model")
        rec = record(cfg, version, result)
        mlflow.set_tags({"data_commit": version, "git_sha": rec["git_sha"], "dataset": cfg.dataset.name})
        return dg.MaterializeResult(
            metadata={
                **(reported.metadata or {}),
                **rec,
                "model_uri": model_uri,
                "mlflow_run_id": mlflow.active_run().info.run_id,
                "val_mae": dg.MetadataValue.float(float(result["val_mae"])),
            }
        )

    return [candidate_model]
