"""The fleet's rules, one home for both of its schedulers (``mlassets fleet serve``'s ``Scheduler`` and the Dagster
sensor of ``mlassets.defs.fleet``): which running jobs a waiting one stops, and in which order; when a lease has
lapsed; when a running job is past its expected runtime; which stops are requeued and the steps a stop lost. Pure
functions: each side turns its own records (lease-table rows, Dagster runs) into their arguments."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mlassets.core.fleet.config import FleetConfig, Lease

GPU_POOL = "gpu"  # the Dagster concurrency pool whose slots training steps claim (automation.gpu_slots)
STOP, WARN = "stop", "warn"
PREEMPTED, LEASE_LOST, OVERRUN = "preempted", "lease-lost", "overrun"  # how the fleet stops a job (its event's kind)
REQUEUED = (PREEMPTED, LEASE_LOST)  # stopped and requeued to resume from the last checkpoint; an overrun is not


@dataclass(frozen=True)
class Running:
    """A running job as the rules see it: ``key`` is the caller's (a lease-table row, a Dagster run)."""

    key: Any
    priority: str
    value: int  # its priority class's value when it was queued
    preemptible: bool
    started: float | None
    gpus: int = 1


def may_preempt(fleet: FleetConfig, priority: str, victim_priority: str, victim_preemptible: bool) -> bool:
    """A job of class ``priority`` may stop a running job of ``victim_priority``: preemptible, of a class its class
    lists in ``preempts``."""
    return victim_preemptible and victim_priority in fleet.priority_classes[priority].preempts


def victim_order(priority_value: int, started: float | None) -> tuple[int, float]:
    """Sort key of the victims: the lowest priority first, then the most recently started (it has least to lose)."""
    return priority_value, -(started or 0.0)


def choose_victims(fleet: FleetConfig, priority: str, running: Iterable[Running], needed: int, free: int
                   ) -> list[Running] | None:
    """The fewest running jobs a waiting job of class ``priority`` stops to have ``needed`` GPUs where ``free`` are
    free (or being freed): those it may preempt, in ``victim_order``. ``[]``: enough are free already; None: stopping
    every one it may preempt would not free enough."""
    stoppable = sorted((r for r in running if may_preempt(fleet, priority, r.priority, r.preemptible)),
                       key=lambda r: victim_order(r.value, r.started))
    chosen: list[Running] = []
    for victim in stoppable:
        if free >= needed:
            break
        chosen.append(victim)
        free += victim.gpus
    return chosen if free >= needed else None


def lease_lapsed(lease: Lease, beats: list[dict[str, Any]], now: float, started: float | None = None
                 ) -> float | None:
    """Seconds since the oldest rank's last heartbeat (since ``started`` while no rank has beaten; neither: nothing
    to judge) when that is past the lease (``startup_s`` until some rank has reached a step: imports and data loading
    may hold the GIL), else None."""
    last = min((b["time"] for b in beats), default=started)
    if last is None:
        return None
    limit = lease.seconds if any(b["step"] > 0 for b in beats) else max(lease.seconds, lease.startup_s)
    return now - last if now - last > limit else None


def lost_steps(beats: list[dict[str, Any]]) -> int | None:
    """The steps a job stopped without a new checkpoint loses: the most any rank ran past the checkpoint of its last
    heartbeat (None: no heartbeat to tell)."""
    return max((b["step"] - b["checkpoint_step"] for b in beats), default=None)


def overrun(fleet: FleetConfig, expected_minutes: float, ran_minutes: float, warned: bool) -> str | None:
    """``STOP`` past ``overrun_factor`` x the expected runtime (stopped, not requeued: it would overrun again),
    ``WARN`` once past the expected runtime, else None."""
    if ran_minutes > expected_minutes * fleet.overrun_factor:
        return STOP
    if ran_minutes > expected_minutes and not warned:
        return WARN
    return None
