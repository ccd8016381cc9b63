"""The fleet's rules have one home (``mlassets.core.fleet.policy``), read by the local scheduler and by the Dagster
sensor: who may preempt whom and in which order, when a job has overrun; the `gpu` pool's name is defined once, and
the fleet's Dagster modules import no module that imports them back."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

from mlassets.core.fleet.config import SHIPPED, parse_fleet
from mlassets.core.fleet.policy import STOP, WARN, may_preempt, overrun, victim_order

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
    modules |= {f"mlassets.core.fleet.{p.stem}": p for p in (PACKAGE / "core" / "fleet").glob("*.py")}
    graph = {m: _imports(p) & set(modules) for m, p in modules.items()}
    fleet = [m for m in modules if "fleet" in m or m.endswith((".leases", ".preemption"))]
    for module in fleet:
        seen, todo = set(), list(graph[module])
        while todo:
            nxt = todo.pop()
            assert nxt != module, f"{module} imports itself back through {sorted(seen)}"
            if nxt not in seen:
                seen.add(nxt)
                todo.extend(graph[nxt])
