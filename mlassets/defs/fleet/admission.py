"""Admission of a Dagster training run, before anything runs: the arithmetic of ``mlassets.core.fleet.admission``
on the runs the instance holds (each run's job spec is in its tags) and the jobs of the lease table.

A finished run counts what it spent (its GPUs x its hours x its capacity's price); a queued or running one its full
reservation (the expected runtime). A run that fits the quota and budget but not the free GPUs is admitted and
waits: ``waiting`` says its position in the queue and what it waits for.
"""

from __future__ import annotations

import time
from typing import Any

import dagster as dg

from mlassets.core.config import ConfigError, PipelineConfig
from mlassets.core.fleet.admission import Admission, admit, price_per_gpu_hour
from mlassets.core.fleet.config import FleetConfig
from mlassets.core.fleet.spec import TEAM_TAG, JobSpec, from_tags

WAITS_TAG = "mlassets/fleet.waits"  # where an admitted run waited at submit, and for what
REFUSED_TAG = "mlassets/fleet.refused"  # the sentence a run refused at launch was cancelled with
_QUEUED = {dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED}
_RUNNING = {dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING}


class Refused(ConfigError):
    """Admission refused the run; the message is the one sentence with the numbers. Nothing was started."""


def run_row(record: Any, spec: JobSpec, fleet: FleetConfig, now: float) -> dict[str, Any]:
    run = record.dagster_run
    state = "queued" if run.status in _QUEUED else "running" if run.status in _RUNNING else "done"
    try:
        price = price_per_gpu_hour(fleet, spec.capacity)
    except ValueError:  # a capacity the fleet has no pool of (admission names it for a new run)
        price = 0.0
    started = record.start_time or (now if state == "running" else None)
    ended = record.end_time or now
    hours = max(0.0, ended - started) / 3600 if started else 0.0
    return {"id": run.run_id, "name": run.job_name, "team": spec.team, "state": state, "gpus": spec.gpus,
            "priority": spec.priority, "priority_value": int(run.tags.get("dagster/priority", "0") or 0),
            "submitted": record.create_timestamp.timestamp(), "capacity": spec.capacity,
            "cost": spec.gpus * spec.expected_minutes / 60 * price if state != "done" else 0.0,
            "spent": spec.gpus * hours * price}


def spec_records(instance: dg.DagsterInstance, fleet: FleetConfig, exclude: str = "") -> list[tuple[Any, JobSpec]]:
    """Each run record of the instance that carries a job spec of a team of the fleet (but ``exclude``), with it."""
    out = []
    for record in instance.get_run_records(dg.RunsFilter(tags={TEAM_TAG: list(fleet.teams)})):
        if record.dagster_run.run_id == exclude:
            continue
        try:
            spec = from_tags(record.dagster_run.tags)
        except ConfigError:
            continue
        if spec is not None:
            out.append((record, spec))
    return out


def run_rows(instance: dg.DagsterInstance, fleet: FleetConfig, exclude: str = "") -> list[dict[str, Any]]:
    """One admission row per run of the instance that carries a job spec (but ``exclude``)."""
    now = time.time()
    return [run_row(record, spec, fleet, now) for record, spec in spec_records(instance, fleet, exclude)]


def _table_rows() -> list[dict[str, Any]]:
    """The jobs of the lease table (``mlassets fleet serve``), when there is one."""
    from mlassets.core import paths
    from mlassets.core.fleet.service import fleet_table

    return fleet_table().jobs() if (paths.home() / "fleet.db").is_file() else []


def admission(instance: dg.DagsterInstance, spec: JobSpec, fleet: FleetConfig, exclude: str = "") -> Admission:
    """Admit or refuse ``spec`` against the instance's runs and the lease table's jobs."""
    return admit(spec, fleet, run_rows(instance, fleet, exclude) + _table_rows())


def check(instance: dg.DagsterInstance, spec: JobSpec, fleet: FleetConfig, exclude: str = "") -> Admission:
    """``admission``, raising ``Refused`` with its sentence."""
    decision = admission(instance, spec, fleet, exclude)
    if not decision.admitted:
        raise Refused(decision.reason)
    return decision


def waiting(instance: dg.DagsterInstance, spec: JobSpec, fleet: FleetConfig, exclude: str = "") -> str:
    """'' when the fleet's GPUs and the team's quota have room for ``spec`` now; else its position in the queue
    and what it waits for."""
    rows = run_rows(instance, fleet, exclude) + _table_rows()
    active = [r for r in rows if r["state"] in ("running", "stopping")]
    total = fleet.gpus(spec.capacity)
    free = min(total, fleet.gpus("spot-first") - sum(r["gpus"] for r in active))  # what every running job holds
    team = sum(r["gpus"] for r in active if r["team"] == spec.team)
    quota = fleet.teams[spec.team].gpu_quota
    value = fleet.priority_classes[spec.priority].value
    ahead = sum(1 for r in rows if r["state"] == "queued" and r["priority_value"] >= value)
    if team + spec.gpus > quota:
        what = f"{spec.gpus} GPUs of team {spec.team}'s quota (it uses {team} of {quota})"
    elif spec.gpus > free:
        what = f"{spec.gpus} free GPUs of capacity {spec.capacity} ({max(free, 0)} of {total} free)"
    else:
        return ""
    return f"waits at position {ahead + 1} in the queue for {what}"


def admit_requests(instance: dg.DagsterInstance, cfg: PipelineConfig, count: int) -> list[str]:
    """For a sensor or schedule about to request ``count`` training runs of ``cfg``: '' for each admitted one, the
    refusal's sentence for each refused one (each admitted request reserves its cost before the next is priced).
    A fleet file that cannot be read refuses them all, naming it."""
    from mlassets.core.fleet.config import load_fleet
    from mlassets.core.fleet.spec import job_spec

    if cfg.fleet is None:  # not a fleet job: nothing to admit
        return [""] * count
    try:
        fleet = load_fleet()
        spec = job_spec(cfg)
    except ConfigError as exc:
        return [f"refused: {exc}"] * count
    rows = run_rows(instance, fleet) + _table_rows()
    out = []
    for _ in range(count):
        decision = admit(spec, fleet, rows)
        out.append(decision.reason)
        if decision.admitted:
            rows.append({"team": spec.team, "state": "queued", "cost": decision.cost, "spent": 0.0})
    return out


def launch_refusal(instance: dg.DagsterInstance, run: dg.DagsterRun) -> str:
    """At launch (the UI, a retry, a run dequeued by the daemon): '' when ``run`` carries no job spec or is
    admitted again against everything else; else why not."""
    from mlassets.core.fleet.config import load_fleet

    try:
        spec = from_tags(run.tags)
        if spec is None:
            return ""
        return admission(instance, spec, load_fleet(), exclude=run.run_id).reason
    except ConfigError as exc:
        return f"refused: {exc}"
