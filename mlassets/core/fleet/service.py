"""Submitting a job (admission, then the queue) and reading the fleet's state: what ``mlassets fleet`` and the
dashboard's fleet page show, from the lease table and the job-like rows of the Dagster runs that carry a job spec
(made by ``mlassets.defs.fleet.view``: core never reads Dagster)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlassets.core import paths
from mlassets.core.fleet.admission import Admission, admit
from mlassets.core.fleet.config import FleetConfig
from mlassets.core.fleet.placement import queue_order
from mlassets.core.fleet.spec import JobSpec
from mlassets.core.fleet.table import ACTIVE, FleetTable


def fleet_table(path: str | Path | None = None) -> FleetTable:
    """The lease table: ``path``, or ``fleet.db`` in the home."""
    return FleetTable(path if path is not None else paths.home() / "fleet.db")


def submit(table: FleetTable, fleet: FleetConfig, name: str, spec: JobSpec, command: list[str],
           out_dir: str = "", who: str = "") -> tuple[int, Admission]:
    """Admit or refuse ``spec``; either way it is recorded (a refusal as state ``refused``, never started), with
    ``who`` submitted it."""
    decision = admit(spec, fleet, table.jobs())
    state = "queued" if decision.admitted else "refused"
    job_id = table.submit(name, spec, fleet.priority_classes[spec.priority].value if spec.priority in
                          fleet.priority_classes else 0, decision.cost if decision.admitted else 0.0, state,
                          decision.reason, command, out_dir)
    if who:
        table.update(job_id, who=who)
    return job_id, decision


@dataclass(frozen=True)
class FleetView:
    """Every job of the fleet: the lease table's (``mlassets fleet serve``; ``ref`` "job 3") and the job-like rows of
    Dagster runs that carry a job spec (``mlassets.defs.fleet.view``; ``ref`` "dagster run 1a2b3c4d"); each row says
    its ``origin``."""
    queue: list[dict[str, Any]]  # position, ref, id, origin, name, team, priority, gpus, reason
    leases: list[dict[str, Any]]  # ref, id, name, team, pool, gpus, last heartbeat age per rank, step, checkpoint step
    teams: list[dict[str, Any]]  # team, GPUs in use, quota, spent, reserved, budget
    events: list[dict[str, Any]]  # preemptions, lost leases, overruns, with the steps each lost ("unknown": not known)
    jobs: list[dict[str, Any]]


def ref(key: int | str) -> str:
    """How a row is named to a user: ``job 3`` (``mlassets fleet serve``) or ``dagster run 1a2b3c4d`` (the first 8
    characters of its run id, as the Dagster UI shows them), from its lease key."""
    return f"dagster run {key[len('dagster:'):][:8]}" if isinstance(key, str) else f"job {key}"


def _lost(table: FleetTable | None, lease: str) -> int | str:
    """The steps since the checkpoint at the last heartbeat of a lease, or "unknown" (no heartbeat left)."""
    beats = table.heartbeats(lease) if table else []
    return max(b["step"] - b["checkpoint_step"] for b in beats) if beats else "unknown"


def view(table: FleetTable | None, fleet: FleetConfig, now: float | None = None,
         runs: list[dict[str, Any]] | tuple = ()) -> FleetView:
    """The fleet from the lease table (None: there is none yet) and ``runs``: job-like rows of the lease table's
    shape from elsewhere (Dagster runs), each with its ``lease`` key, ``origin``, ``ref`` and, when the fleet stopped
    it, ``stop_kind`` and ``stop_detail`` (an event with the steps lost: the lease table's record of its stop, else
    what its last heartbeats say, else "unknown")."""
    now = time.time() if now is None else now
    jobs = [{**j, "origin": "fleet serve", "ref": ref(j["id"]), "lease": j["id"]}
            for j in (table.jobs() if table else [])] + list(runs)
    queue = [{"position": i, "ref": j["ref"], "id": j["id"], "origin": j["origin"], "name": j["name"],
              "team": j["team"], "priority": j["priority"], "gpus": j["gpus"], "reason": j["reason"]}
             for i, j in enumerate(queue_order(jobs), 1)]
    leases = []
    for j in jobs:
        if j["state"] in ACTIVE:
            beats = table.heartbeats(j["lease"]) if table else []
            leases.append({"ref": j["ref"], "id": j["id"], "origin": j["origin"], "name": j["name"], "team": j["team"],
                           "state": j["state"], "pool": j["pool"], "pid": j["pid"],
                           "gpus": j["gpus"], "ranks_beating": len(beats),
                           "last_heartbeat_s": round(now - min(b["time"] for b in beats), 1) if beats else None,
                           "step": max((b["step"] for b in beats), default=0),
                           "checkpoint_step": min((b["checkpoint_step"] for b in beats), default=0)})
    teams = []
    for name, team in fleet.teams.items():
        mine = [j for j in jobs if j["team"] == name]
        teams.append({"team": name, "gpus_in_use": sum(j["gpus"] for j in mine if j["state"] in ACTIVE),
                      "gpu_quota": team.gpu_quota, "spent": round(sum(j["spent"] for j in mine), 2),
                      "reserved": round(sum(j["cost"] for j in mine if j["state"] != "refused"), 2),
                      "budget": team.budget})
    events = [{**e, "ref": ref(e["job_id"]), "origin": "dagster" if isinstance(e["job_id"], str) else "fleet serve"}
              for e in (table.events() if table else [])]
    recorded = {e["job_id"] for e in events}
    events += [{"id": None, "job_id": r["lease"], "ref": r["ref"], "origin": r["origin"], "time": r["ended"] or now,
                "kind": r["stop_kind"], "detail": r["stop_detail"], "lost_steps": _lost(table, r["lease"])}
               for r in runs if r["stop_kind"] and r["lease"] not in recorded]
    return FleetView(queue, leases, teams, sorted(events, key=lambda e: e["time"]), jobs)
