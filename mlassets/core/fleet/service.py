"""Submitting a job (admission, then the queue) and reading the fleet's state: what ``mlassets fleet`` and the
dashboard's fleet page show, from the lease table alone."""

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
           out_dir: str = "") -> tuple[int, Admission]:
    """Admit or refuse ``spec``; either way it is recorded (a refusal as state ``refused``, never started)."""
    decision = admit(spec, fleet, table.jobs())
    state = "queued" if decision.admitted else "refused"
    job_id = table.submit(name, spec, fleet.priority_classes[spec.priority].value if spec.priority in
                          fleet.priority_classes else 0, decision.cost if decision.admitted else 0.0, state,
                          decision.reason, command, out_dir)
    return job_id, decision


@dataclass(frozen=True)
class FleetView:
    queue: list[dict[str, Any]]  # position, id, name, team, priority, gpus, reason
    leases: list[dict[str, Any]]  # id, name, team, pool, gpus, last heartbeat age per rank, step, checkpoint step
    teams: list[dict[str, Any]]  # team, GPUs in use, quota, spent, reserved, budget
    events: list[dict[str, Any]]  # preemptions, lost leases, overruns, with the steps each lost
    jobs: list[dict[str, Any]]


def view(table: FleetTable, fleet: FleetConfig, now: float | None = None) -> FleetView:
    now = time.time() if now is None else now
    jobs = table.jobs()
    queue = [{"position": i, "id": j["id"], "name": j["name"], "team": j["team"], "priority": j["priority"],
              "gpus": j["gpus"], "reason": j["reason"]} for i, j in enumerate(queue_order(jobs), 1)]
    leases = []
    for j in jobs:
        if j["state"] in ACTIVE:
            beats = table.heartbeats(j["id"])
            leases.append({"id": j["id"], "name": j["name"], "team": j["team"], "state": j["state"], "pool": j["pool"],
                           "pid": j["pid"],
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
    return FleetView(queue, leases, teams, table.events(), jobs)
