"""Both schedulers take the same victim: on the same running jobs, the Dagster sensor
(``mlassets.defs.fleet.preemption``) stops the run ``mlassets fleet serve``'s placement would stop first, as both call
``mlassets.core.fleet.policy.choose_victims``. The Dagster instance is a stand-in holding only what the sensor reads:
one `gpu` slot per running run, every slot held, one urgent run waiting."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import dagster as dg
import pytest

from mlassets.core.fleet.config import FleetConfig, parse_fleet
from mlassets.core.fleet.placement import free_gpus, victims
from mlassets.core.fleet.spec import JobSpec
from mlassets.defs.fleet.preemption import preempt_for_waiting
from mlassets.defs.fleet.runs import PREEMPTED_TAG


def _fleet(gpus: int) -> FleetConfig:
    """A full fleet: as many GPUs (Dagster's `gpu` slots) as running jobs."""
    return parse_fleet({
        "pools": {"spot": {"gpus": gpus, "capacity": "spot", "price_per_gpu_hour": 1.0}},
        "teams": {"research": {"gpu_quota": gpus, "budget": 1e6}, "product": {"gpu_quota": 1, "budget": 1e6}},
        "priority_classes": {"low": {"value": 50}, "batch": {"value": 100},
                             "urgent": {"value": 1000, "preempts": ["low", "batch"]}}})


# name: (priority class, preemptible, started)
RUNNING = {"a": ("batch", True, 10.0), "b": ("batch", True, 50.0), "c": ("low", False, 5.0), "d": ("low", True, 1.0),
           "e": ("urgent", True, 60.0), "f": ("batch", False, 70.0)}


def _spec(priority: str, preemptible: bool, team: str = "research") -> JobSpec:
    return JobSpec(team=team, priority=priority, ranks=1, gpus_per_rank=1, expected_minutes=60.0, capacity="spot",
                   preemptible=preemptible, checkpoint_every_minutes=10.0)


def _serve_victim(fleet: FleetConfig, names: list[str]) -> str | None:
    rows: list[dict[str, Any]] = [
        {"id": n, "state": "running", "pool": "spot", "team": "research", "gpus": 1, "priority": RUNNING[n][0],
         "priority_value": fleet.priority_classes[RUNNING[n][0]].value, "preemptible": int(RUNNING[n][1]),
         "started": RUNNING[n][2]} for n in names]
    job = {"id": 99, "state": "queued", "team": "product", "capacity": "spot", "gpus": 1, "priority": "urgent"}
    found = victims(fleet, job, rows, free_gpus(fleet, rows))
    return found[1][0]["id"] if found and found[1] else None


def _dagster_victim(fleet: FleetConfig, names: list[str]) -> str | None:
    runs = {n: SimpleNamespace(run_id=n, job_name="job", status=dg.DagsterRunStatus.STARTED,
                               tags=_spec(RUNNING[n][0], RUNNING[n][1]).tags(fleet)) for n in names}
    runs["urgent"] = SimpleNamespace(run_id="urgent", job_name="job", status=dg.DagsterRunStatus.STARTED,
                                     tags=_spec("urgent", False, "product").tags(fleet))
    info = SimpleNamespace(pending_steps=[SimpleNamespace(run_id="urgent", assigned_timestamp=None)],
                           claimed_slots=[SimpleNamespace(run_id=n) for n in names], slot_count=len(names))
    stopped: list[str] = []
    instance = SimpleNamespace(
        event_log_storage=SimpleNamespace(get_concurrency_info=lambda pool: info),
        get_run_by_id=runs.get,
        get_run_record_by_id=lambda run_id: SimpleNamespace(start_time=RUNNING[run_id][2]),
        add_run_tags=lambda run_id, tags: stopped.append(run_id) if PREEMPTED_TAG in tags else None,
        report_engine_event=lambda *args: None,
        run_launcher=SimpleNamespace(terminate=lambda run_id: None))
    preempt_for_waiting(instance, fleet, "job")  # type: ignore[arg-type]
    assert len(stopped) <= 1  # one slot per tick
    return stopped[0] if stopped else None


@pytest.mark.parametrize("names", [["a", "b", "c", "d"], ["a", "b", "c", "f"], ["a", "b"], ["c", "e", "f"],
                                   ["e", "a"], ["f", "c", "e", "b"]])
def test_the_sensor_and_fleet_serve_stop_the_same_run(names: list[str]) -> None:
    expected = {"abcd": "d", "abcf": "b", "ab": "b", "cef": None, "ea": "a", "fceb": "b"}["".join(names)]
    fleet = _fleet(len(names))
    assert _serve_victim(fleet, names) == _dagster_victim(fleet, names) == expected
