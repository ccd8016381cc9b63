"""The fleet's rules, one home for both of its schedulers (``mlassets fleet serve``'s ``Scheduler`` and the Dagster
sensor of ``mlassets.defs.preemption`` and ``mlassets.defs.leases``): which running job a waiting one may preempt
and in which order victims are taken, and when a running job is past its expected runtime. Pure functions."""

from __future__ import annotations

from mlassets.core.fleet.config import FleetConfig

GPU_POOL = "gpu"  # the Dagster concurrency pool whose slots training steps claim (automation.gpu_slots)
STOP, WARN = "stop", "warn"


def may_preempt(fleet: FleetConfig, priority: str, victim_priority: str, victim_preemptible: bool) -> bool:
    """A job of class ``priority`` may stop a running job of ``victim_priority``: preemptible, of a class its class
    lists in ``preempts``."""
    return victim_preemptible and victim_priority in fleet.priority_classes[priority].preempts


def victim_order(priority_value: int, started: float | None) -> tuple[int, float]:
    """Sort key of the victims: the lowest priority first, then the most recently started (it has least to lose)."""
    return priority_value, -(started or 0.0)


def overrun(fleet: FleetConfig, expected_minutes: float, ran_minutes: float, warned: bool) -> str | None:
    """``STOP`` past ``overrun_factor`` x the expected runtime (stopped, not requeued: it would overrun again),
    ``WARN`` once past the expected runtime, else None."""
    if ran_minutes > expected_minutes * fleet.overrun_factor:
        return STOP
    if ran_minutes > expected_minutes and not warned:
        return WARN
    return None
