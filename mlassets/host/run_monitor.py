"""Run monitoring for the embedded launcher (``python -m mlassets.host.run_monitor WORKSPACE``, a child of the daemon).

Dagster's own run monitoring needs a launcher that can check its workers; the default launcher cannot. So every
``MLASSETS_RUN_MONITOR_S`` seconds (default 5) this looks at every run STARTING or STARTED and asks
``run_liveness`` whether its process is still there. For a run whose worker is gone it queues a retry (a
re-execution from failure: finished steps are kept; training's working area is keyed by the root run, so it
resumes from its newest checkpoint) *before* marking the run failed, with a higher ``dagster/priority``: the
dataset's serial queue runs the retry next, so data versions still train in order, and nothing waits on a dead
run. Then it marks the run failed (the ``mlassets_run_failures`` sensor tells the owners). A run whose worker died
with its daemon tree is always retried; one whose worker died on its own at most ``MLASSETS_RUN_RETRIES`` times
(default 2).
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime, timedelta

import dagster as dg
from dagster._core.definitions.selector import JobSubsetSelector
from dagster._core.errors import DagsterInvalidSubsetError
from dagster._core.execution.plan.resume_retry import ReexecutionStrategy
from dagster._core.storage.tags import AUTO_RETRY_RUN_ID_TAG, PARENT_RUN_ID_TAG, PRIORITY_TAG, RETRY_NUMBER_TAG
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import WorkspaceFileTarget

from mlassets.host.daemon_tree import HOME_ENV, TOKEN_ENV, ready_file
from mlassets.host.launcher import DAEMON_TAG
from mlassets.host.run_liveness import LEGACY_PID_TAG, PID_TAG, Dead, dead_runs

CRASHES_TAG = "mlassets/worker_crashes"  # retries caused by the run's own worker dying (its daemon alive)


def interval_s() -> float:
    return float(os.environ.get("MLASSETS_RUN_MONITOR_S", "5"))


def start_timeout_s() -> float:
    return float(os.environ.get("MLASSETS_RUN_START_TIMEOUT_S", "180"))


def max_retries() -> int:
    return int(os.environ.get("MLASSETS_RUN_RETRIES", "2"))


def _queue_retry(instance: dg.DagsterInstance, workspace: WorkspaceProcessContext, run: dg.DagsterRun,
                 crashes: int) -> str | None:
    """A re-execution of ``run`` from its failure, submitted (queued); None when nothing is left to run. A retry
    created before (by a monitor killed before it marked the run failed) is submitted, never made twice."""
    origin = run.remote_job_origin.repository_origin
    workspace.refresh_code_location(origin.code_location_origin.location_name)
    request = workspace.create_request_context()
    made = instance.get_runs(dg.RunsFilter(tags={PARENT_RUN_ID_TAG: run.run_id}), limit=1)
    if made:
        if made[0].status == dg.DagsterRunStatus.NOT_STARTED:
            instance.submit_run(made[0].run_id, request)
        return made[0].run_id
    location = request.get_code_location(origin.code_location_origin.location_name)
    job = location.get_job(JobSubsetSelector(
        location_name=location.name, repository_name=origin.repository_name, job_name=run.job_name,
        op_selection=run.op_selection,
        asset_selection=None if run.asset_selection is None else list(run.asset_selection),
        asset_check_selection=None if run.asset_check_selection is None else list(run.asset_check_selection)))
    attempt = int(run.tags.get(RETRY_NUMBER_TAG, "0")) + 1
    priority = int(run.tags.get(PRIORITY_TAG, "0") or 0) + 1
    try:  # from failure needs a failed parent: its steps are read from the log as they are now
        retry = instance.create_reexecuted_run(
            parent_run=run.with_status(dg.DagsterRunStatus.FAILURE), request_context=request, code_location=location,
            remote_job=job, strategy=ReexecutionStrategy.FROM_FAILURE, use_parent_run_tags=True,
            extra_tags={RETRY_NUMBER_TAG: str(attempt), PRIORITY_TAG: str(priority), DAEMON_TAG: "",
                        CRASHES_TAG: str(crashes)})
    except DagsterInvalidSubsetError:
        return None
    instance.submit_run(retry.run_id, request)
    return retry.run_id


def daemons_run(tags: dict[str, str]) -> bool:
    """A run a daemon launched (tagged by the launcher), or one a daemon dequeued and died before it could launch
    (no tag yet): retried, so a landed file is still ingested and trained. A command's own in-process run (its
    pid tagged) is not the daemon's to retry."""
    return tags.get(DAEMON_TAG) is not None or (PID_TAG not in tags and LEGACY_PID_TAG not in tags)


def handle(instance: dg.DagsterInstance, workspace: WorkspaceProcessContext | None, dead: Dead,
           token: str = "") -> str:
    """Queue a retry (when a daemon launched or dequeued the run and retries are left), then mark the run failed.

    A worker that died with its whole tree (a killed daemon) is always retried; one that died while its daemon
    lived (a crash of its own, e.g. out of memory) at most ``MLASSETS_RUN_RETRIES`` times."""
    run = instance.get_run_by_id(dead.run.run_id)
    if run is None or run.is_finished:
        return ""
    message = f"mlassets run monitor: {dead.reason}; the run is marked failed"
    retry = None
    own_crash = bool(token) and run.tags.get(DAEMON_TAG) == token
    crashes = int(run.tags.get(CRASHES_TAG, "0")) + int(own_crash)
    if workspace is not None and daemons_run(run.tags) and run.remote_job_origin is not None \
            and crashes <= max_retries():
        retry = _queue_retry(instance, workspace, run, crashes)
    if retry:
        instance.add_run_tags(run.run_id, {AUTO_RETRY_RUN_ID_TAG: retry})
        message += f" and retried as run {retry} (finished steps kept; training resumes from its newest checkpoint)"
    instance.report_run_failed(run, message)
    free_slots(instance, run.run_id)
    return message


def free_slots(instance: dg.DagsterInstance, run_id: str) -> None:
    """Give back the pool slots (the `gpu` pool of training steps) a dead worker still held: no run waits on them."""
    storage = instance.event_log_storage
    if storage.supports_global_concurrency_limits:
        storage.free_concurrency_slots_for_run(run_id)


def check(instance: dg.DagsterInstance, workspace: WorkspaceProcessContext | None, home: str, token: str) -> list[str]:
    """One pass over the runs in progress; one message per run marked failed."""
    dead = dead_runs(instance, home, start_timeout_s(), token)
    return [message for run in dead if (message := handle(instance, workspace, run, token))]


def _interrupted(instance: dg.DagsterInstance, run: dg.DagsterRun) -> bool:
    """Failed because its worker was stopped (a signal to the tree), not because a step or a check failed."""
    events = instance.all_logs(run.run_id, of_type={dg.DagsterEventType.ENGINE_EVENT, dg.DagsterEventType.STEP_FAILURE,
                                                    dg.DagsterEventType.ASSET_CHECK_EVALUATION})
    if any(e.dagster_event_type == dg.DagsterEventType.ENGINE_EVENT and "terminated by interrupt" in (e.message or "")
           for e in events):
        return True
    return not any(e.dagster_event_type == dg.DagsterEventType.STEP_FAILURE for e in events) and not any(
        e.dagster_event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
        and not e.dagster_event.event_specific_data.passed for e in events)


def retry_interrupted(instance: dg.DagsterInstance, workspace: WorkspaceProcessContext, token: str) -> list[str]:
    """At start: runs an earlier tree's stop interrupted (its workers marked them failed as they were signalled)
    are retried like dead ones, once each."""
    out = []
    recent = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE],
                                             updated_after=datetime.now(UTC) - timedelta(days=7)), limit=200)
    for run in reversed(recent):  # oldest first
        launched_by = run.tags.get(DAEMON_TAG)
        if not launched_by or launched_by == token or run.tags.get(AUTO_RETRY_RUN_ID_TAG) \
                or run.remote_job_origin is None or not _interrupted(instance, run):
            continue
        free_slots(instance, run.run_id)
        retry = _queue_retry(instance, workspace, run, int(run.tags.get(CRASHES_TAG, "0")))
        instance.add_run_tags(run.run_id, {AUTO_RETRY_RUN_ID_TAG: retry or "none"})
        if retry:
            out.append(f"mlassets run monitor: run {run.run_id} was interrupted when its daemon stopped; retried as "
                       f"run {retry}")
    return out


def main(workspace_file: str) -> None:
    home, token = os.environ[HOME_ENV], os.environ[TOKEN_ENV]
    instance = dg.DagsterInstance.get()
    with WorkspaceProcessContext(instance, WorkspaceFileTarget(paths=[workspace_file])) as workspace:
        print(f"run monitor: every {interval_s():g} s, runs whose worker is gone are retried and marked failed",
              flush=True)
        for line in retry_interrupted(instance, workspace, token):
            print(line, flush=True)
        ready_file(instance.root_directory).write_text(token)  # the supervisor starts the daemon's queue after this
        while True:
            try:
                for line in check(instance, workspace, home, token):
                    print(line, flush=True)
            except Exception as exc:  # noqa: BLE001 - a monitor that dies watches nothing; say it, try again
                print(f"run monitor: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            time.sleep(interval_s())


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; the supervisor says what stopped
        pass
