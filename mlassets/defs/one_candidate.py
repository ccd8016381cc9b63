"""One candidate per data version, config and code from any door: the pipeline's own guard (``core.registry.made``).

The training step asks before it trains, the registration step before it registers; a run that finds the candidate
made already (or an earlier run of the same data version training now) trains or registers nothing, on purpose:
its steps downstream are skipped, the run succeeds and says why (tag ``mlassets/stopped``, a warning naming the
version). A run tagged ``mlassets/again`` is a deliberate retrain and is never stopped.
"""

from __future__ import annotations

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.registry.made import AGAIN_TAG, Made, already, existing
from mlassets.defs.jobs import STOPPED_TAG, pipeline_job_name
from mlassets.defs.keys import DatasetKeys

# submitted and not finished (a run created and never submitted is no launch: it would stop every later one)
IN_PROGRESS = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
               dg.DagsterRunStatus.CANCELING]


def _root(run: dg.DagsterRun) -> str:
    return run.root_run_id or run.run_id


def earlier_run(context: dg.AssetExecutionContext, cfg: PipelineConfig, keys: DatasetKeys) -> dg.DagsterRun | None:
    """A run of the same data version, made before this one and not one of its own retries, that trains and is in
    progress now (two launches at once from the UI: the later one stops)."""
    me = context.run
    records = context.instance.get_run_records(dg.RunsFilter(statuses=IN_PROGRESS,
                                                             tags={"dagster/partition": context.partition_key}))
    mine = context.instance.get_run_record_by_id(me.run_id)
    for record in sorted(records, key=lambda r: r.create_timestamp):
        run = record.dagster_run
        if _root(run) == _root(me) or mine is None or record.create_timestamp >= mine.create_timestamp:
            continue
        trains = run.job_name == pipeline_job_name(cfg) or keys.candidate_model in (run.asset_selection or set())
        if trains:
            return run
    return None


def stop_reason(context: dg.AssetExecutionContext, cfg: PipelineConfig, keys: DatasetKeys, made: Made,
                what: str) -> str:
    """Why this run makes no candidate of its data version ('' when it should): it was made already, or another
    run is making it now. ``what`` says what the step leaves undone."""
    if context.run.tags.get(AGAIN_TAG) is not None:
        return ""
    from mlassets.defs.lookup import version_metadata

    name = cfg.model.registered_name
    found = existing(name, made, root=_root(context.run))
    if found is None:
        other = earlier_run(context, cfg, keys)
        return "" if other is None else (f"run {other.run_id} is training data version {context.partition_key} of "
                                         f"{cfg.dataset.name} now; {what}")
    label = str(version_metadata(context.resources.store.open(), cfg, made.data_commit)["data_version_name"])
    return already(name, found, label, what)


def stopped(context: dg.AssetExecutionContext, reason: str, kind: str) -> None:
    """The run made nothing on purpose: said in its log, its tags and its MLflow run (which ends FINISHED)."""
    import mlflow

    context.log.warning(f"not trained: {reason}" if kind == "over budget" else reason)
    context.instance.add_run_tags(context.run_id, {STOPPED_TAG: reason})
    if mlflow.active_run() is not None:
        mlflow.set_tags({"mlassets.stopped": kind, "mlassets.stopped_reason": reason[:5000]})
