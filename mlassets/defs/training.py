"""group training: checkpoints and the candidate model, from one training step run through Dagster Pipes.

With ``training.nproc > 1`` the step launches torchrun; only rank 0 talks to Dagster and MLflow (into this
run's MLflow run). torchrun never restarts ranks: the step's ``RetryPolicy`` does, so every restart shows
in the UI, and each attempt resumes from the newest valid checkpoint in the run's working area. The process
tells how it ended in one place, its outcome (``core.train.outcome``: its ``TrainingResult``, or why it failed or was
refused); Pipes carries its log lines.
"""

import os
import subprocess
from collections.abc import Iterator

import dagster as dg
from dagster._core.errors import DagsterExecutionInterruptedError

from mlassets.core import paths
from mlassets.core.config import PipelineConfig
from mlassets.core.config.families import facts_of
from mlassets.core.data.raw import check_data_version
from mlassets.core.features.store import FeatureSet
from mlassets.core.fleet.policy import GPU_POOL
from mlassets.core.registry.made import Made
from mlassets.core.train.result import Candidate, CheckpointSet, TrainingResult
from mlassets.defs.display import json_value, number
from mlassets.defs.fleet.runs import preempted_failure, training_env, work_run_id
from mlassets.defs.jobs import FORCE_TAG, RETRAIN_TAG
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import active_run_links, mlflow_run_tags, version_metadata
from mlassets.defs.one_candidate import stop_reason, stopped
from mlassets.defs.ops import dashboard_url
from mlassets.defs.partitions import data_versions

TELEMETRY_KEYS = ("median_step_ms", "samples_per_s", "share_data_wait", "share_compute", "share_sync",
                  "share_optim", "share_checkpoint", "slowest_rank_median_step_ms")


def _checkpoint_metadata(result: TrainingResult, checkpoints: CheckpointSet) -> dict[str, object]:
    kept = {"final": result.final_checkpoint, "best": result.best_checkpoint}
    listed = [{**c, "kept_as": ", ".join(k for k, path in kept.items() if path == c["path"])}
              for c in result.checkpoints]
    return {"checkpoints": json_value(listed), "final_checkpoint": checkpoints.final_uri,
            "best_checkpoint": checkpoints.best_uri, "store_commit": checkpoints.commit,
            "working_area": checkpoints.working_area, "resumed_from_step": result.resumed_from_step,
            "attempt": result.attempt, "steps": result.steps}


def _candidate_metadata(candidate: Candidate) -> dict[str, object]:
    result, prov = candidate.training, candidate.provenance
    telemetry = result.telemetry
    return {
        f"val_{result.val_metric_name}": number(result.val_metric), "best_epoch": result.best_epoch,
        "world_size": result.environment.world_size, "steps": result.steps, "attempt": result.attempt,
        "checkpoints": dg.MetadataValue.json(result.checkpoint_names()), "telemetry": json_value(telemetry),
        "model_uri": candidate.model_uri, "mlflow_run_id": prov.mlflow_run_id, "data_commit": prov.data_commit,
        "git_sha": prov.git_sha, "weights_sha256": prov.weights_sha256,
        **{f"telemetry_{k}": number(telemetry[k]) for k in TELEMETRY_KEYS if k in telemetry},
    }


def _warm_start_from(context: dg.AssetExecutionContext, cfg: PipelineConfig) -> str:
    """The champion's version when the run asks for a warm start (``mlassets/retrain: warm_start``), else ''."""
    from mlassets.core.automation.policy import WARM_START
    from mlassets.core.registry.promote import trusted_live_version
    from mlassets.core.registry.warm import warm_start_refusal

    if context.run.tags.get(RETRAIN_TAG) != WARM_START:
        return ""
    name = cfg.model.registered_name
    live = trusted_live_version(name)  # PromotionError (the step fails) for a damaged log
    if not live:
        context.log.info("warm start asked, but there is no champion: training from scratch")
        return ""
    reason = warm_start_refusal(name, live, cfg.model.family)
    context.log.info(f"warm start asked, but {reason}: training from scratch" if reason else
                     f"warm start from {name} v{live}")
    return "" if reason else live


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    framework = facts_of(cfg.model.family).ui_kind  # the UI's kind tag

    @dg.multi_asset(
        name=keys.candidate_model.to_python_identifier(),
        outs={
            "checkpoints": dg.AssetOut(key=keys.checkpoints, group_name="training", kinds={framework},
                                       is_required=False,  # a run stopped by its budget yields neither
                                       description="Final and best full-state checkpoints of the run, in the store."),
            "candidate": dg.AssetOut(key=keys.candidate_model, group_name="training", kinds={framework, "mlflow"},
                                     is_required=False,
                                     description="A model trained on the version's train split with the recorded "
                                                 "config, commit and seed."),
        },
        ins={"features": dg.AssetIn(keys.features)},
        internal_asset_deps={"checkpoints": {keys.features}, "candidate": {keys.checkpoints}},
        partitions_def=data_versions(cfg),
        required_resource_keys={"store", "pipes", "mlflow"},
        retry_policy=dg.RetryPolicy(max_retries=cfg.training.retries, delay=2),
        pool=GPU_POOL,  # extra training steps wait for a slot (automation.gpu_slots) instead of oversubscribing
    )
    def training(context: dg.AssetExecutionContext, features: FeatureSet) -> Iterator[dg.Output]:
        """Train (resuming a failed attempt of this run), log to MLflow, commit final and best checkpoints."""
        import mlflow
        import pandas as pd

        from mlassets.core import tracking
        from mlassets.core.data.mlflow_dataset import log_data_version
        from mlassets.core.registry.warm import verified_bundle
        from mlassets.core.train import metric_sinks as run_log
        from mlassets.core.train import mlflow_model
        from mlassets.core.train.launch import commit_checkpoints, prepare_job, provenance, train_command
        from mlassets.core.train.metric_sinks import RUN_ID, TRACKING_URI
        from mlassets.core.train.outcome import read_outcome
        from mlassets.core.train.workfiles import finished
        from mlassets.core.tune.apply import tuned_config

        version = check_data_version(features.data_version)
        run_key = work_run_id(context.run)[:8]  # a re-execution (a requeued preempted run) resumes its root's run
        out_dir = paths.work_dir(cfg.dataset.name, "train", version[:16], run_key)
        store = context.resources.store.open()
        warm_from = _warm_start_from(context, cfg)
        run_cfg = tuned_config(cfg, keys.tuned_hparams.path)  # the newest tuned values unless the config pins them
        made = Made.now(run_cfg, version, warm_from)
        duplicate = stop_reason(context, cfg, keys, made, "nothing trained")  # one candidate, from any door
        if duplicate:
            stopped(context, duplicate, "already trained")
            return
        init_bundle = verified_bundle(cfg.model.registered_name, warm_from) if warm_from else ""
        job_path = prepare_job(store, run_cfg, version, out_dir, init_bundle=init_bundle, warm_start_from=warm_from,
                               force_budget=context.run.tags.get(FORCE_TAG) == "budget")
        run_id = mlflow.active_run().info.run_id
        extras = {RUN_ID: run_id, TRACKING_URI: mlflow.get_tracking_uri()}
        env = {**os.environ, "OMP_NUM_THREADS": str(cfg.training.threads), **training_env(context.run)}
        try:
            context.resources.pipes.run(command=train_command(cfg.training.nproc, job_path), context=context, env=env,
                                        extras=extras)
        except (DagsterExecutionInterruptedError, subprocess.TimeoutExpired):  # terminated; TimeoutExpired: a rank
            # still alive after the grace period (Pipes waited for it after forwarding the termination)
            preempted = preempted_failure(context.instance, context.run_id, out_dir)  # not retried: canceled
            if preempted is not None:
                raise preempted from None
            raise
        except Exception:
            ended = read_outcome(out_dir)  # the process's own sentence, not "failed with code 1"
            if ended is not None and ended.ended == "refused":  # over its budget: the same again on a retry, so none;
                # stopped on purpose: nothing trained, nothing downstream runs, and no failure
                stopped(context, ended.sentence, "over budget")
                # Pipes made every output required (a typed event stream); none is, for a run that trained nothing.
                # Dagster has no public setter back (1.13); tests/test_training_failure.py fails if this stops working
                context.op_execution_context._step_execution_context._requires_typed_event_stream = False
                return
            if ended is not None and ended.ended == "failed":
                raise dg.Failure(description=ended.sentence, allow_retries=ended.retry) from None
            raise
        result = getattr(read_outcome(out_dir), "result", None)
        if result is None:
            raise dg.Failure(description=f"training exited without recording its result in {out_dir}")
        run_log.replay(out_dir, run_id)  # metrics of a run too short for rank 0 to have logged them
        tracking.log_training(run_cfg.to_dict(), result.val_metric_name, result.val_metric, result.train_seconds)
        log_data_version(cfg, version, {"train": result.n_train, "validation": result.n_val}, store)
        rows = pd.read_parquet(out_dir / "data" / "validation.parquet").head(20)
        ints = [c for c, spec in cfg.dataset.columns.items() if spec.dtype == "int"]  # taken as ints when served
        model_uri = mlflow_model.log_model(result.model_dir, rows, int_columns=ints,  # with its input/output signature
                                           optional_columns=mlflow_model.nullable_columns(cfg))
        native_uri = mlflow_model.log_native(result.model_dir)  # MLflow's own flavor (boosted trees), or ""
        candidate = Candidate(training=result, model_uri=model_uri,
                              provenance=provenance(run_cfg, result, store.backend, run_id, warm_start_from=warm_from,
                                                    native_model_uri=native_uri))
        names = version_metadata(store, cfg, version)  # the version's name: MLflow run name, metadata
        mlflow.set_tags({"data_commit": version, "git_sha": candidate.provenance.git_sha,
                         "dataset": cfg.dataset.name,
                         **mlflow_run_tags(context.run_id, cfg.dataset.name, str(names["data_version_name"]))})
        checkpoints = commit_checkpoints(store, cfg, run_key, result, out_dir / "checkpoints")
        finished(out_dir)  # the exported splits and working checkpoints: what comes later reads the store
        yield dg.Output(checkpoints, output_name="checkpoints",
                        metadata={**names, **_checkpoint_metadata(result, checkpoints)})
        yield dg.Output(candidate, output_name="candidate",
                        metadata={**names, **_candidate_metadata(candidate), **active_run_links(),
                                  **{page: dg.MetadataValue.url(dashboard_url(f"{page}?run={run_key}"))
                                     for page in ("bottlenecks", "stragglers")}})  # the dashboard, on this run

    return [training]
