"""Preemption of Dagster runs, the least code on top of Dagster's primitives: Dagster's queue orders runs
(``dagster/priority``) and its `gpu` pool makes a training step wait for a slot, but nothing in Dagster stops a
*running* run for a more urgent one, nor starts again a run that was stopped. One sensor per dataset does both:

- an urgent run whose training step waits for a `gpu` slot while every slot is held: the lowest-priority
  preemptible run holding one (of a class the urgent one's class may preempt; the latest started first:
  ``mlassets.core.fleet.policy.choose_victims``, as ``mlassets fleet serve`` applies it) is tagged
  ``mlassets/preempted`` and terminated the Dagster way (``run_launcher.terminate``: its Pipes client sends the
  training process SIGINT, which writes its full-state checkpoint and exits as preempted within ``grace_s``); the
  run ends *canceled*, which the failure alert does not report;
- a preempted run of the dataset that has no requeued run yet: one run request with the same partition and
  ``mlassets/resume_of`` (the training step resumes from the preempted run's checkpoints), submitted by the daemon
  through the instance's queue like any sensor's run;
- leases and overruns of running runs (``mlassets.defs.fleet.leases``): a run whose ranks stopped renewing its lease is
  stopped and requeued the same way.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from mlassets.core.config import ConfigError, PipelineConfig
from mlassets.core.fleet.policy import GPU_POOL, Running, choose_victims
from mlassets.defs.fleet.runs import (
    LEASE_LOST_TAG,
    OVERRUN_WARNED_TAG,
    PREEMPTED_TAG,
    REQUEUE_TAGS,
    RESUME_TAG,
    run_spec,
    work_run_id,
)
from mlassets.defs.jobs import TRIGGER_TAG, pipeline_job_name
from mlassets.defs.keys import DatasetKeys

_OWN = {PREEMPTED_TAG, LEASE_LOST_TAG, OVERRUN_WARNED_TAG, RESUME_TAG, "mlassets/daemon", "mlassets/host",
        "mlassets/pid", "mlassets/pid_started",
        "mlassets/fleet.waits", "mlassets/fleet.refused"}  # what the stopped run's process and launch added
_HOLDING = (dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED)


def preempt_for_waiting(instance: dg.DagsterInstance, fleet: Any, job_name: str) -> list[str]:
    """Terminate what an urgent waiting run of ``job_name`` needs; one line per run stopped."""
    info = instance.event_log_storage.get_concurrency_info(GPU_POOL)
    waiting = [p.run_id for p in info.pending_steps if p.assigned_timestamp is None]
    if not waiting or len(info.claimed_slots) < info.slot_count:
        return []
    holders = {c.run_id: instance.get_run_by_id(c.run_id) for c in info.claimed_slots}
    if any(r is not None and r.tags.get(PREEMPTED_TAG) for r in holders.values()):
        return []  # a slot is being freed already
    lines = []
    for run_id in waiting:
        run = instance.get_run_by_id(run_id)
        spec = run_spec(run)
        if run is None or run.job_name != job_name or spec is None or spec.priority not in fleet.priority_classes:
            continue
        held = [(r, run_spec(r)) for r in holders.values() if r is not None and r.status in _HOLDING]
        records = {r.run_id: instance.get_run_record_by_id(r.run_id) for r, _ in held}
        running = [Running(r, s.priority, fleet.priority_classes[s.priority].value, s.preemptible,
                           records[r.run_id].start_time if records[r.run_id] else None)
                   for r, s in held if s is not None and s.priority in fleet.priority_classes]
        chosen = choose_victims(fleet, spec.priority, running, needed=1, free=0)  # a run holds one slot
        if not chosen:
            continue
        victim = chosen[0].key
        why = f"preempted for run {run_id[:8]} ({spec.priority}, team {spec.team})"
        instance.add_run_tags(victim.run_id, {PREEMPTED_TAG: why})
        instance.report_engine_event(f"mlassets: {why}: terminating; its training writes a checkpoint within "
                                     f"{fleet.grace_s:g} s and a new run resumes from it", victim)
        instance.run_launcher.terminate(victim.run_id)
        lines.append(f"run {victim.run_id[:8]} {why}")
        break  # one slot per tick: the next tick sees the slot freed
    return lines


def requeue_requests(instance: dg.DagsterInstance, job_name: str) -> list[dg.RunRequest]:
    """A run request for each preempted or lease-lost (canceled) run of ``job_name`` that has no requeued run yet.
    The requeued run resumes the working area the stopped run used (its own, or the one it resumed)."""
    stopped = instance.get_runs(dg.RunsFilter(job_name=job_name, statuses=[dg.DagsterRunStatus.CANCELED]), limit=50)
    requests = []
    for run in stopped:
        key = f"resume:{run.run_id}"
        if not any(run.tags.get(t) for t in REQUEUE_TAGS) or \
                instance.get_runs_count(dg.RunsFilter(tags={"dagster/run_key": key})) > 0:
            continue
        tags = {k: v for k, v in run.tags.items() if k.startswith("mlassets/") and k not in _OWN}
        tags.update({RESUME_TAG: work_run_id(run), TRIGGER_TAG: "requeue"})
        if "dagster/priority" in run.tags:
            tags["dagster/priority"] = run.tags["dagster/priority"]
        requests.append(dg.RunRequest(run_key=key, partition_key=run.tags["dagster/partition"],
                                      tags=tags))
    return requests


def automation(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.SensorDefinition]:
    job = pipeline_job_name(cfg)

    @dg.sensor(name=f"{cfg.dataset.name}_fleet_preemption", job_name=job,
               minimum_interval_seconds=cfg.automation.sensor_interval_s,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="An urgent run waiting for a `gpu` slot stops the lowest-priority preemptible run holding "
                           "one (checkpoint, then canceled as preempted); a run whose training ranks stopped renewing "
                           "its lease is stopped; an overrun is warned, then stopped; preempted and lease-lost runs "
                           "are requeued to resume.")
    def fleet_preemption(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        from mlassets.core.fleet.config import load_fleet
        from mlassets.defs.fleet.leases import watch_leases

        try:
            fleet = load_fleet()
        except ConfigError as exc:
            return dg.SensorResult(skip_reason=f"no preemption: {exc}")
        for line in preempt_for_waiting(context.instance, fleet, job):
            context.log.info(line)
        for line in watch_leases(context.instance, fleet, job):
            context.log.warning(line)
        requests = requeue_requests(context.instance, job)
        return dg.SensorResult(run_requests=requests, skip_reason=None if requests else
                               "no preempted run waits to be requeued")

    return [fleet_preemption]
