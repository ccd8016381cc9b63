"""Where a queued job goes: the order of the queue, a pool with free GPUs (spot first) of a capacity its team may
hold more of, the team's quota, and the preemptible jobs that would have to stop for it. Pure functions of the fleet
and the lease table's rows."""

from __future__ import annotations

from typing import Any

from mlassets.core.fleet.config import FleetConfig
from mlassets.core.fleet.policy import Running, choose_victims
from mlassets.core.fleet.table import ACTIVE


def queue_order(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Queued jobs, highest priority first, then first come first served (Dagster's run queue order;
    a tie between a fleet job and a Dagster run: the fleet job first)."""
    return sorted((j for j in jobs if j["state"] == "queued"),
                  key=lambda j: (-j["priority_value"], j["submitted"], isinstance(j["id"], str), j["id"]))


def pools_for(fleet: FleetConfig, capacity: str) -> list[str]:
    order = {"spot": 0, "on-demand": 1}
    names = [n for n, p in fleet.pools.items() if capacity in ("spot-first", p.capacity)]
    return sorted(names, key=lambda n: order[fleet.pools[n].capacity])


def free_gpus(fleet: FleetConfig, jobs: list[dict[str, Any]]) -> dict[str, int]:
    used = {name: 0 for name in fleet.pools}
    for j in jobs:
        if j["state"] in ACTIVE and j["pool"] in used:
            used[j["pool"]] += j["gpus"]
    return {name: fleet.pools[name].gpus - used[name] for name in fleet.pools}


def team_gpus(jobs: list[dict[str, Any]], team: str) -> int:
    return sum(j["gpus"] for j in jobs if j["state"] in ACTIVE and j["team"] == team)


def open_pools(fleet: FleetConfig, job: dict[str, Any], jobs: list[dict[str, Any]]) -> list[str]:
    """The pools of the job's capacity (spot first) where its team may hold its GPUs: within the team's limit of
    that capacity (``teams.<team>.borrowing_limit``)."""
    held = {c: 0 for c in ("spot", "on-demand")}
    for j in jobs:
        if j["state"] in ACTIVE and j["team"] == job["team"] and j["pool"] in fleet.pools:
            held[fleet.pools[j["pool"]].capacity] += j["gpus"]
    return [p for p in pools_for(fleet, job["capacity"]) if held[fleet.pools[p].capacity] + job["gpus"]
            <= fleet.team_limit(job["team"], fleet.pools[p].capacity)]


def victims(fleet: FleetConfig, job: dict[str, Any], jobs: list[dict[str, Any]], free: dict[str, int]
            ) -> tuple[str, list[dict[str, Any]]] | None:
    """The pool and the fewest running jobs to preempt there for ``job``: preemptible, of a class its class may
    preempt, lowest priority first, then the most recently started (``mlassets.core.fleet.policy.choose_victims``)."""
    for pool in open_pools(fleet, job, jobs):
        running = [Running(j, j["priority"], j["priority_value"], bool(j["preemptible"]), j["started"], j["gpus"])
                   for j in jobs if j["state"] == "running" and j["pool"] == pool]
        freeing = free[pool] + sum(j["gpus"] for j in jobs if j["state"] == "stopping" and j["pool"] == pool)
        chosen = choose_victims(fleet, job["priority"], running, job["gpus"], freeing)
        if chosen is not None:
            return pool, [r.key for r in chosen]
    return None


def waiting_reason(fleet: FleetConfig, job: dict[str, Any], free: dict[str, int]) -> str:
    pools = ", ".join(f"{n} {free[n]}/{fleet.pools[n].gpus}" for n in pools_for(fleet, job["capacity"]))
    return f"waits for {job['gpus']} free GPUs of capacity {job['capacity']} (free: {pools})"
