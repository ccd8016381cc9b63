"""The fleet page reads what `mlassets fleet` reads: nothing on an empty stack (and nothing created), then the queue
with its reasons, the teams against quota and budget, and a preemption with the steps it lost, for the lease table's
jobs and the Dagster runs that carry a job spec (a running one with its heartbeat, a queued one)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from streamlit.testing.v1 import AppTest

from mlassets.core.config import load_config
from mlassets.core.config.load import shipped_configs
from mlassets.core.fleet.config import load_fleet
from mlassets.core.fleet.service import fleet_table, submit
from mlassets.core.fleet.spec import job_spec
from mlassets.host.instance import get_instance
from tests.defs.test_fleet_view import _beat, _run, _spec

PAGE = Path(__file__).resolve().parents[2] / "dashboard" / "app_pages" / "fleet.py"


def _page() -> AppTest:
    return AppTest.from_file(str(PAGE), default_timeout=60).run()


def test_empty_stack_says_nothing_recorded_and_creates_nothing(home: str) -> None:
    at = _page()
    assert not at.exception and "Nothing recorded yet" in at.info[0].value
    assert not (Path(home) / "fleet.db").exists() and not (Path(home) / "dagster").exists()


def test_the_page_shows_queue_teams_and_lost_work(home: str) -> None:
    table, fleet = fleet_table(Path(home) / "fleet.db"), load_fleet()
    cfg = load_config(shipped_configs()["flights"])
    spec = job_spec(cfg, {"team": "research", "ranks": 2, "expected_minutes": 60.0})
    running, _ = submit(table, fleet, "batch", spec, ["true"])
    table.update(running, state="running", pool="spot", started=1.0, spent=12.5)
    waiting, _ = submit(table, fleet, "next", spec, ["true"])
    table.update(waiting, reason="waits for 2 free GPUs of capacity spot-first (free: spot 0/2, on-demand 0/2)")
    table.event(running, "preempted", "exit 76; checkpoint at step 9", 0)
    instance = get_instance()
    dagster_running = _run(instance, _spec("research"), dg.DagsterRunStatus.STARTED)
    _beat(f"dagster:{dagster_running}", 1, 12, 10)
    dagster_queued = _run(instance, _spec("product"), dg.DagsterRunStatus.QUEUED)
    instance.dispose()
    at = _page()
    assert not at.exception, at.exception
    teams, queue, leases, events, jobs = (d.value for d in at.dataframe)  # in the page's order
    teams = teams.set_index("team")
    assert teams.loc["research", "GPUs in use"] == 3 and teams.loc["research", "GPU quota"] == 4  # 2 + the run's 1
    assert teams.loc["research", "reserved (₹)"] == 1000.0 + 250.0  # the run's hour on 1 GPU at ₹250
    assert list(queue["name"]) == ["next", "sales_pipeline 2024-01"] and "waits for 2 free GPUs" in queue["reason"][0]
    assert list(queue["job"]) == ["job 2", f"dagster run {dagster_queued[:8]}"]
    assert list(queue["reason"])[1] == "queued in Dagster"
    assert list(events["what"]) == ["preempted"] and list(events["steps lost"]) == [0]
    assert list(leases["job"]) == ["job 1", f"dagster run {dagster_running[:8]}"]
    assert list(leases["step"]) == [0, 12] and list(leases["checkpoint_step"]) == [0, 10]
    assert list(jobs["state"]) == ["running", "queued", "running", "queued"]
