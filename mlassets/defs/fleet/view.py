"""The whole fleet as ``mlassets fleet`` and the dashboard's fleet page show it: the lease table's jobs (``mlassets
fleet serve``) and the instance's runs that carry a job spec, as rows of one shape (``mlassets.core.fleet.service``).

A Dagster run is queued while Dagster's queue holds it (its reason: ``mlassets/fleet.waits``, else "queued in
Dagster") or while its training step waits for a `gpu` slot; it is ``starting`` (holding no GPU) in the steps before
training, and holds a lease (``dagster:<run id>``, its ranks' heartbeats) from its training step on; its GPUs and
money (``run_rows``' pricing) count for its team; and a run the fleet stopped (``mlassets/preempted``,
``mlassets/lease_lost``, ``mlassets/overrun``) is an event, with the run that resumes it.
"""

from __future__ import annotations

import time
from typing import Any

import dagster as dg

from mlassets.core.fleet.config import FleetConfig
from mlassets.core.fleet.heartbeat import run_lease
from mlassets.core.fleet.policy import GPU_POOL
from mlassets.core.fleet.service import FleetView, ref, view
from mlassets.core.fleet.table import FleetTable
from mlassets.defs.fleet.admission import REFUSED_TAG, WAITS_TAG, run_row, spec_records
from mlassets.defs.fleet.runs import RESUME_TAG, fleet_stop, stop_kind

_ENDED = {dg.DagsterRunStatus.SUCCESS: "done", dg.DagsterRunStatus.FAILURE: "failed"}


def _slots(instance: dg.DagsterInstance) -> tuple[set[str], set[str]]:
    """The runs whose training step waits for a slot of the `gpu` pool, and those whose training step holds one."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return set(), set()
    info = storage.get_concurrency_info(GPU_POOL)
    return ({p.run_id for p in info.pending_steps if p.assigned_timestamp is None},
            {c.run_id for c in info.claimed_slots})


def dagster_rows(instance: dg.DagsterInstance, fleet: FleetConfig, now: float | None = None,
                 table: FleetTable | None = None) -> list[dict[str, Any]]:
    """One job-like row per run of the instance that carries a job spec, oldest first. A started run holds GPUs
    from its training step on (a `gpu` slot held, or its ranks renewing its lease); before, it is ``starting``."""
    now = time.time() if now is None else now
    records = spec_records(instance, fleet)
    waiting, holding = _slots(instance)
    requeued = {r.dagster_run.tags["dagster/run_key"].removeprefix("resume:"): r.dagster_run.run_id
                for r, _ in records if r.dagster_run.tags.get("dagster/run_key", "").startswith("resume:")}
    resumes = {r.dagster_run.run_id: r.dagster_run.tags.get(RESUME_TAG, "") for r, _ in records}
    rows = []
    for record, spec in records:
        run, row = record.dagster_run, run_row(record, spec, fleet, now)
        kind, why, waits, reason = stop_kind(run), fleet_stop(run), run.tags.get(WAITS_TAG, ""), ""
        if kind and run.run_id in requeued:
            why += f"; requeued as {ref(run_lease(requeued[run.run_id]))}"
        if row["state"] == "queued":
            reason = waits or "queued in Dagster"
        elif row["state"] == "running" and run.run_id in waiting:
            row["state"], reason = "queued", waits or "its training step waits for a slot of the `gpu` pool"
        elif run.status == dg.DagsterRunStatus.STARTED and run.run_id not in holding and not (
                table is not None and table.heartbeats(run_lease(run.run_id))):
            row["state"], reason = "starting", "in the steps before training: no GPU held yet"
        elif run.status == dg.DagsterRunStatus.CANCELING:
            row["state"], reason = "stopping", why
        elif row["state"] == "done":
            row["state"] = "refused" if run.tags.get(REFUSED_TAG) else _ENDED.get(run.status) or \
                ("stopped" if kind else "canceled")
            reason = run.tags.get(REFUSED_TAG) or why
        partition = run.tags.get("dagster/partition")
        rows.append({**row, "name": f"{run.job_name} {partition}" if partition else run.job_name,
                     "lease": run_lease(run.run_id), "origin": "dagster", "ref": ref(run_lease(run.run_id)),
                     "status": run.status.value, "reason": reason, "pool": "", "pid": None,
                     "attempts": attempt(run.run_id, resumes) if record.start_time else 0,
                     "ended": record.end_time, "stop_kind": kind, "stop_detail": why})
    return sorted(rows, key=lambda row: row["submitted"])


def attempt(run_id: str, resumes: dict[str, str]) -> int:
    """Which attempt of its job a started run is: 1, or one more than the run it resumes (``mlassets/resume_of``:
    a run requeued after a preemption or a lost lease)."""
    seen = {run_id}
    while (run_id := resumes.get(run_id, "")) and run_id not in seen:
        seen.add(run_id)
    return len(seen)


def fleet_view(table: FleetTable | None, fleet: FleetConfig, instance: dg.DagsterInstance | None,
               now: float | None = None) -> FleetView:
    """The lease table's jobs (None: no lease table yet) and ``instance``'s runs (None: no Dagster instance yet)."""
    return view(table, fleet, now, dagster_rows(instance, fleet, now, table) if instance is not None else ())
