"""The fleet's rules have one home (``mlassets.core.fleet.policy``), read by the local scheduler and by the Dagster
sensor: who may preempt whom and in which order, when a job has overrun; the `gpu` pool's name is defined once, and
the fleet's Dagster modules import no module that imports them back."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

from mlassets.core.fleet.config import SHIPPED, Lease, parse_fleet
from mlassets.core.fleet.policy import (
    LEASE_LOST,
    OVERRUN,
    PREEMPTED,
    REQUEUED,
    STOP,
    WARN,
    Running,
    choose_victims,
    lease_lapsed,
    lost_steps,
    may_preempt,
    overrun,
    victim_order,
)

PACKAGE = Path(__file__).resolve().parents[3] / "mlassets"
FLEET = parse_fleet({**yaml.safe_load(SHIPPED.read_text()), "overrun_factor": 2.0})


def test_who_may_preempt_whom() -> None:
    assert may_preempt(FLEET, "urgent", "batch", True)
    assert not may_preempt(FLEET, "urgent", "batch", False)  # --not-preemptible
    assert not may_preempt(FLEET, "batch", "batch", True)  # a class preempts only the classes it lists
    assert not may_preempt(FLEET, "batch", "urgent", True)


def test_victims_lowest_priority_first_then_latest_started() -> None:
    jobs = [("a", 100, 10.0), ("b", 100, 50.0), ("c", 50, 5.0), ("d", 100, None)]
    assert [n for n, v, s in sorted(jobs, key=lambda j: victim_order(j[1], j[2]))] == ["c", "b", "a", "d"]


def test_overrun_warns_once_past_the_expected_time_and_stops_past_the_factor() -> None:
    assert overrun(FLEET, 60.0, 59.0, False) is None
    assert overrun(FLEET, 60.0, 61.0, False) == WARN
    assert overrun(FLEET, 60.0, 61.0, True) is None  # warned already
    assert overrun(FLEET, 60.0, 120.5, True) == STOP == overrun(FLEET, 60.0, 120.5, False)


def test_the_fewest_victims_that_free_enough_in_victim_order() -> None:
    running = [Running("a", "batch", 100, True, 10.0, gpus=2), Running("b", "batch", 100, True, 50.0),
               Running("c", "batch", 100, False, 60.0, gpus=4), Running("u", "urgent", 1000, True, 70.0)]
    assert [r.key for r in choose_victims(FLEET, "urgent", running, needed=1, free=0) or []] == ["b"]
    assert [r.key for r in choose_victims(FLEET, "urgent", running, needed=3, free=0) or []] == ["b", "a"]
    assert choose_victims(FLEET, "urgent", running, needed=2, free=2) == []  # enough free already
    assert choose_victims(FLEET, "urgent", running, needed=4, free=0) is None  # c is not preemptible
    assert choose_victims(FLEET, "batch", running, needed=1, free=0) is None  # batch preempts nothing


def _beat(time: float, step: int, checkpoint_step: int = 0) -> dict[str, float]:
    return {"time": time, "step": step, "checkpoint_step": checkpoint_step}


def test_a_lease_lapses_past_its_length_from_the_oldest_ranks_last_heartbeat() -> None:
    lease = Lease(seconds=60.0, heartbeat_s=10.0, startup_s=300.0)
    beats = [_beat(1000.0, 5), _beat(1040.0, 6)]
    assert lease_lapsed(lease, beats, 1060.0) is None
    assert lease_lapsed(lease, beats, 1061.0) == 61.0  # the oldest rank stopped renewing it
    assert lease_lapsed(lease, [], 5000.0) is None  # no heartbeat and no start: nothing to judge
    assert lease_lapsed(lease, [], 1301.0, started=1000.0) == 301.0  # started, never beat: start-up then lapsed
    assert lease_lapsed(lease, [_beat(1000.0, 0)], 1299.0) is None  # no step yet: start-up may hold the GIL
    assert lease_lapsed(lease, [_beat(1000.0, 0)], 1301.0) == 301.0


def test_steps_lost_and_which_stops_are_requeued() -> None:
    assert lost_steps([_beat(0.0, 40, 35), _beat(0.0, 42, 40)]) == 5
    assert lost_steps([]) is None
    assert PREEMPTED in REQUEUED and LEASE_LOST in REQUEUED and OVERRUN not in REQUEUED  # it would overrun again


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mlassets"):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("mlassets"))
    return out


def test_gpu_pool_is_defined_once_and_the_fleet_modules_have_no_import_circle() -> None:
    defined = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
               if any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "GPU_POOL" for t in n.targets)
                      for n in ast.walk(ast.parse(p.read_text())))]
    assert defined == ["core/fleet/policy.py"]
    modules = {f"mlassets.defs.{p.stem}": p for p in (PACKAGE / "defs").glob("*.py")}
    modules |= {f"mlassets.defs.fleet.{p.stem}": p for p in (PACKAGE / "defs" / "fleet").glob("*.py")}
    modules |= {f"mlassets.core.fleet.{p.stem}": p for p in (PACKAGE / "core" / "fleet").glob("*.py")}
    graph = {m: _imports(p) & set(modules) for m, p in modules.items()}
    fleet = [m for m in modules if ".fleet." in m]
    assert "mlassets.defs.fleet.preemption" in fleet and "mlassets.defs.fleet.leases" in fleet
    for module in fleet:
        seen, todo = set(), list(graph[module])
        while todo:
            nxt = todo.pop()
            assert nxt != module, f"{module} imports itself back through {sorted(seen)}"
            if nxt not in seen:
                seen.add(nxt)
                todo.extend(graph[nxt])
