"""The scheduler on fake GPU slots: every job a process that heartbeats; quotas never exceeded, an urgent job
preempts the lowest-priority preemptible one, a frozen (SIGSTOPped) job loses its lease and is requeued."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
import yaml

from mlassets.core.config import load_config
from mlassets.core.config.load import shipped_configs
from mlassets.core.fleet.config import SHIPPED, parse_fleet
from mlassets.core.fleet.scheduler import Scheduler
from mlassets.core.fleet.service import submit, view
from mlassets.core.fleet.spec import job_spec
from mlassets.core.fleet.table import ACTIVE, FleetTable
from tests.core.fleet.ticks import until

REPO = Path(__file__).resolve().parents[3]
# A fake rank: heartbeats through the same module as a training rank, counts steps, never checkpoints.
FAKE = ("import time; from mlassets.core.fleet import heartbeat as hb; b = hb.start_from_env()\n"
        "for step in range(1, 100000):\n    hb.note(step=step); time.sleep(0.05)")


@pytest.fixture
def fleet():
    data = yaml.safe_load(SHIPPED.read_text())
    data["lease"] = {"seconds": 5, "heartbeat_s": 0.2}  # generous: heartbeats must not miss it under load
    data["grace_s"] = 5
    return parse_fleet(data)


@pytest.fixture
def sched(fleet, tmp_path: Path):
    s = Scheduler(fleet, FleetTable(tmp_path / "fleet.db"), {**os.environ, "PYTHONPATH": str(REPO)})
    yield s
    s.close()


def _spec(**over):
    cfg = load_config(shipped_configs()["flights"])
    return job_spec(cfg, {"checkpoint_every_minutes": 10.0, "expected_minutes": 30.0, **over})


def _submit(sched, name: str, **over) -> int:
    job_id, decision = submit(sched.table, sched.fleet, name, _spec(**over), [sys.executable, "-c", FAKE])
    assert decision.admitted, decision.reason
    return job_id


def _beat_step(sched, job_id: int) -> int:
    return max((b["step"] for b in sched.table.heartbeats(job_id)), default=0)


def _state(sched, job_id: int) -> str:
    return sched.table.job(job_id)["state"]


def test_a_burst_from_two_teams_never_exceeds_quotas_and_waits_with_reasons(sched) -> None:
    ids = [_submit(sched, f"r{i}", team="research", ranks=1) for i in range(3)]
    ids += [_submit(sched, f"p{i}", team="product", ranks=1) for i in range(3)]
    for _ in range(5):
        sched.tick()
        jobs = sched.table.jobs()
        for team, quota in (("research", 4), ("product", 2)):
            assert sum(j["gpus"] for j in jobs if j["team"] == team and j["state"] in ACTIVE) <= quota
        assert sum(j["gpus"] for j in jobs if j["state"] in ACTIVE) <= 4
    queue = view(sched.table, sched.fleet).queue
    assert [q["position"] for q in queue] == [1, 2] and len(view(sched.table, sched.fleet).leases) == 4
    assert all("waits for 1 free GPUs of capacity spot-first (free: spot 0/2, on-demand 0/2)" in q["reason"]
               or "quota" in q["reason"] for q in queue), queue


def test_an_urgent_job_preempts_the_lowest_priority_job_and_it_is_requeued(sched) -> None:
    batch = [_submit(sched, f"b{i}", team="research", ranks=2) for i in range(2)]
    until(sched, lambda: all(_state(sched, b) == "running" and _beat_step(sched, b) > 0 for b in batch))
    urgent = _submit(sched, "u", team="product", ranks=2, priority="urgent", preemptible=False)
    sched.tick()
    stopping = [b for b in batch if _state(sched, b) == "stopping"]
    assert len(stopping) == 1  # two GPUs needed, one batch job of two GPUs stops
    assert "being freed by preempting job(s)" in sched.table.job(urgent)["reason"]
    until(sched, lambda: _state(sched, urgent) == "running")
    victim = sched.table.job(stopping[0])
    assert victim["state"] == "queued" and victim["attempts"] == 1
    (event,) = [e for e in sched.table.events() if e["kind"] == "preempted"]
    assert event["job_id"] == victim["id"] and event["lost_steps"] > 0  # the fake never checkpoints
    assert "waits for 2 free GPUs" in view(sched.table, sched.fleet).queue[0]["reason"]


def test_a_frozen_rank_loses_its_lease_its_gpus_are_released_and_it_is_requeued(sched, fleet) -> None:
    job = _submit(sched, "frozen", team="research", ranks=2)
    _submit(sched, "other", team="research", ranks=2)
    waiting = _submit(sched, "next", team="product", ranks=2)
    until(sched, lambda: _state(sched, job) == "running" and _beat_step(sched, job) > 0)
    pid = sched.table.job(job)["pid"]
    os.kill(pid, signal.SIGSTOP)
    stopped_at = time.monotonic()
    until(sched, lambda: any(e["kind"] == "lease-lost" for e in sched.table.events()))
    took = time.monotonic() - stopped_at
    (event,) = [e for e in sched.table.events() if e["kind"] == "lease-lost"]
    assert event["job_id"] == job and event["lost_steps"] > 0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the frozen process is gone, not left holding anything
    # never before the lease ran out: it runs from the last heartbeat, at most one interval before the stop
    assert took >= fleet.lease.seconds - fleet.lease.heartbeat_s - 0.05
    again = sched.table.job(job)  # requeued ahead of later jobs (it was submitted first): restarted on its GPUs
    assert again["attempts"] == 2 and again["state"] == "running" and again["pid"] != pid
    assert _state(sched, waiting) == "queued" and again["gpu_seconds"] > 0


def test_an_overrun_is_warned_then_stopped(sched, fleet) -> None:
    job = _submit(sched, "long", team="research", ranks=1, expected_minutes=0.01)  # 0.6 s
    until(sched, lambda: any(e["kind"] == "overrun-warning" for e in sched.table.events()))
    until(sched, lambda: _state(sched, job) == "stopped")
    assert "overrun; stopped" in sched.table.job(job)["reason"]
    assert [e["kind"] for e in sched.table.events()] == ["overrun-warning", "overrun"]


def test_a_slow_start_is_not_a_lost_lease(sched, fleet) -> None:
    slow = "import time; time.sleep(6)\n" + FAKE  # longer than the 5 s lease before the first heartbeat
    job_id, _ = submit(sched.table, fleet, "slow", _spec(team="research"), [sys.executable, "-c", slow])
    until(sched, lambda: _beat_step(sched, job_id) > 0)
    assert sched.table.job(job_id)["attempts"] == 1 and sched.table.events() == []


def test_a_team_holds_at_most_its_borrowing_limit_of_a_capacity(tmp_path: Path) -> None:
    """research may hold 1 spot GPU: its second spot-first job goes on-demand although spot has a free GPU, and a
    spot-only job waits naming the limit."""
    data = yaml.safe_load(SHIPPED.read_text())
    data["teams"]["research"]["borrowing_limit"] = {"spot": 1, "on-demand": 2}
    sched = Scheduler(parse_fleet(data), FleetTable(tmp_path / "fleet.db"), {**os.environ, "PYTHONPATH": str(REPO)})
    try:
        first, second = (_submit(sched, n, team="research", ranks=1) for n in ("a", "b"))
        pinned = _submit(sched, "c", team="research", ranks=1, capacity="spot")
        sched.tick()
        pools = {j["id"]: j["pool"] for j in sched.table.jobs("running")}
        assert pools == {first: "spot", second: "on-demand"}
        assert sched.table.job(pinned)["reason"] == ("waits for team research's limit of capacity spot "
                                                     "(teams.research.borrowing_limit)")
    finally:
        sched.close()
