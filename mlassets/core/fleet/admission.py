"""Admission control at submit, before anything runs: a job the fleet can never run (more GPUs than its capacity's
pools or its team's quota), one over its team's budget, or a long one without checkpoints is refused with one
sentence giving the numbers; any other is queued. Pure arithmetic on the fleet and the lease table's rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlassets.core.config import ConfigError
from mlassets.core.fleet.config import CAPACITIES, FleetConfig
from mlassets.core.fleet.spec import JobSpec, check_against

COMMITTED = ("queued", "running", "stopping", "done", "failed")  # jobs whose price counts against the budget


@dataclass(frozen=True)
class Admission:
    admitted: bool
    reason: str  # the refusal, naming the numbers ("" when admitted)
    cost: float  # what the job is priced at (reserved against its team's budget)


def price_per_gpu_hour(fleet: FleetConfig, capacity: str) -> float:
    """The price a job of this capacity is reserved at: its pools' dearest (spot-first may land on on-demand)."""
    return max(p.price_per_gpu_hour for p in fleet.pools.values() if capacity in ("spot-first", p.capacity))


def job_cost(spec: JobSpec, fleet: FleetConfig) -> float:
    """GPUs x expected hours x the capacity's price (the cost model's GPU-hours times price)."""
    return spec.gpus * spec.expected_minutes / 60 * price_per_gpu_hour(fleet, spec.capacity)


def money(fleet: FleetConfig, value: float) -> str:
    """An amount in the fleet's currency: whole amounts as they are ("₹5,000"), others to the cent ("$0.45")."""
    cents = round(value * 100)
    return f"{fleet.currency}{cents // 100:,}" if cents % 100 == 0 else f"{fleet.currency}{cents / 100:,.2f}"


def admit(spec: JobSpec, fleet: FleetConfig, jobs: list[dict[str, Any]]) -> Admission:
    """Refuse or admit ``spec`` given every job of the lease table (``jobs``)."""
    try:
        check_against(spec, fleet)
    except ConfigError as exc:
        return Admission(False, str(exc), 0.0)
    cost = job_cost(spec, fleet)
    shape = f"{spec.gpus} GPUs ({spec.ranks} ranks x {spec.gpus_per_rank})"
    have = fleet.largest_pool(spec.capacity)
    if spec.gpus > have:
        return Admission(False, f"refused: the job needs {shape} but the largest pool of capacity {spec.capacity} "
                                f"has {have} GPUs ({fleet.gpus(spec.capacity)} in all; a job runs in one pool)", cost)
    quota = fleet.teams[spec.team].gpu_quota
    if spec.gpus > quota:
        return Admission(False, f"refused: the job needs {shape} but team {spec.team}'s quota is {quota} GPUs", cost)
    limits = {c: fleet.team_limit(spec.team, c) for c in CAPACITIES if spec.capacity in ("spot-first", c)}
    if spec.gpus > max(limits.values()):
        held = ", ".join(f"{n} of {c}" for c, n in limits.items())
        return Admission(False, f"refused: the job needs {shape} but team {spec.team} may hold at most {held} "
                                f"(teams.{spec.team}.borrowing_limit)", cost)
    mandatory = fleet.checkpoints_mandatory_after_minutes
    if spec.expected_minutes > mandatory and spec.checkpoint_every_minutes <= 0:
        return Admission(False, f"refused: the job is expected to run {spec.expected_minutes:g} min, over the "
                                f"{mandatory:g} min above which checkpoints are mandatory, and "
                                "training.checkpoint_every_minutes is 0", cost)
    budget = fleet.teams[spec.team].budget
    committed = sum(max(j["cost"], j["spent"]) for j in jobs if j["team"] == spec.team and j["state"] in COMMITTED)
    if committed + cost > budget:
        price = price_per_gpu_hour(fleet, spec.capacity)
        return Admission(False, f"refused: the job costs {money(fleet, cost)} ({spec.gpus} GPUs x "
                                f"{spec.expected_minutes / 60:g} h x {money(fleet, price)} per GPU-hour, "
                                f"{spec.capacity}); team {spec.team} has {money(fleet, committed)} spent or reserved "
                                f"of its {money(fleet, budget)} budget", cost)
    return Admission(True, "", cost)
