"""Leases of Dagster runs, watched by the fleet preemption sensor (``mlassets.defs.fleet.preemption``). A running run's
training ranks renew a lease keyed by the run (``dagster:<run id>`` in the home's ``fleet.db``, the heartbeat writer
of ``mlassets fleet serve`` jobs, ``mlassets.core.fleet.heartbeat``). Dagster has no notion of a lease, so:

- a run whose oldest rank has not renewed the lease for ``lease.seconds`` (a hung or SIGSTOPped rank) is tagged
  ``mlassets/lease_lost`` (with the seconds since its last heartbeat) and terminated the Dagster way; its training
  step SIGKILLs the ranks still there after the grace period (a stopped process never acts on SIGINT), which ends the
  step and frees its `gpu` slot; the run ends canceled and the sensor requeues it like a preempted run (it resumes
  from its last checkpoint: the work lost is the steps since that checkpoint);
- a run past its job spec's ``expected_minutes`` gets a warning (an engine event, ``mlassets/overrun_warned``);
  past ``overrun_factor`` times it, it is tagged ``mlassets/overrun`` and stopped the same way, not requeued (as
  ``mlassets fleet serve`` does: it would overrun again).
"""

from __future__ import annotations

import time
from typing import Any

import dagster as dg

from mlassets.core.fleet.policy import STOP, WARN, lease_lapsed, overrun
from mlassets.defs.fleet.runs import LEASE_LOST_TAG, OVERRUN_TAG, OVERRUN_WARNED_TAG, fleet_stop, run_spec


def _stop(instance: dg.DagsterInstance, run: dg.DagsterRun, tag: str, why: str, grace_s: float) -> None:
    instance.add_run_tags(run.run_id, {tag: why})
    instance.report_engine_event(f"mlassets: {why}: terminating; ranks still there after {grace_s:g} s are killed",
                                 run)
    instance.run_launcher.terminate(run.run_id)


def watch_leases(instance: dg.DagsterInstance, fleet: Any, job_name: str, now: float | None = None) -> list[str]:
    """Stop the running runs of ``job_name`` whose lease lapsed or that overran; warn those past their runtime."""
    from mlassets.core import paths
    from mlassets.core.fleet import heartbeat as hb
    from mlassets.core.fleet.table import FleetTable

    now = time.time() if now is None else now
    db = paths.home() / "fleet.db"
    table = FleetTable(db) if db.is_file() else None  # no rank has ever beaten: no lease to judge
    lines = []
    for run in instance.get_runs(dg.RunsFilter(job_name=job_name, statuses=[dg.DagsterRunStatus.STARTED])):
        if fleet_stop(run):
            continue  # being stopped already
        lapsed = lease_lapsed(fleet.lease, table.heartbeats(hb.run_lease(run.run_id)), now) if table else None
        if lapsed is not None:
            why = f"lease lost: no heartbeat for {lapsed:.0f} s (lease {fleet.lease.seconds:g} s); requeued to " \
                  "resume from its last checkpoint"
            _stop(instance, run, LEASE_LOST_TAG, why, fleet.grace_s)
            lines.append(f"run {run.run_id[:8]} {why}")
            continue
        spec, record = run_spec(run), instance.get_run_record_by_id(run.run_id)
        if spec is None or record is None or not record.start_time:
            continue
        ran_min = (now - record.start_time) / 60
        verdict = overrun(fleet, spec.expected_minutes, ran_min, bool(run.tags.get(OVERRUN_WARNED_TAG)))
        if verdict == STOP:
            why = f"overrun: ran {ran_min:.1f} min, {fleet.overrun_factor:g}x its expected {spec.expected_minutes:g}"
            _stop(instance, run, OVERRUN_TAG, f"{why} min; stopped", fleet.grace_s)
            lines.append(f"run {run.run_id[:8]} {why} min; stopped")
        elif verdict == WARN:
            why = f"past its expected {spec.expected_minutes:g} min (ran {ran_min:.1f} min); stopped past " \
                  f"{spec.expected_minutes * fleet.overrun_factor:g} min"
            instance.add_run_tags(run.run_id, {OVERRUN_WARNED_TAG: why})
            instance.report_engine_event(f"mlassets: warning: {why}", run)
            lines.append(f"run {run.run_id[:8]} {why}")
    return lines
