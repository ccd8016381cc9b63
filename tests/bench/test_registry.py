"""The bench registry and runner, and the step-time arithmetic on a real tiny run (no real benchmark)."""

from __future__ import annotations

import os
import time

import dagster as dg
import pytest

from bench import registry
from bench.__main__ import main
from bench.checks import NO_TELEMETRY
from bench.orchestration import overhead_seconds, step_compute_seconds, trivial_chain
from bench.registry import Result, benchmark


def _rows(out: str) -> dict[str, list[str]]:
    """The printed table's rows (after header and rule), keyed by name, cells stripped."""
    cells = [[c.strip() for c in line.split(" | ")] for line in out.splitlines()[2:]]
    return {row[0]: row for row in cells}


@pytest.fixture(autouse=True)
def _isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "REGISTRY", {})


def test_registers_and_lists(capsys: pytest.CaptureFixture[str]) -> None:
    @benchmark("fast_thing", goal="speed-up", better="higher", target=2)
    def fast_thing() -> Result:
        return Result(3.0, "x", "measured")

    [b] = registry.registered()
    assert (b.name, b.better, b.target, b.fn) == ("fast_thing", "higher", 2.0, fast_thing)
    assert b.met(3.0) and not b.met(1.5) and not b.met(float("nan"))
    with pytest.raises(ValueError, match="already registered"):
        benchmark("fast_thing", goal="again", better="lower", target=1)(fast_thing)
    with pytest.raises(ValueError, match="better"):
        benchmark("other", goal="?", better="sideways", target=1)  # type: ignore[arg-type]
    assert main(["--list"], modules=()) == 0
    assert "fast_thing: speed-up >= 2" in capsys.readouterr().out


def test_runner_prints_row_in_fresh_home(capsys: pytest.CaptureFixture[str]) -> None:
    before = os.environ.get("MLASSETS_HOME")
    seen: list[str] = []

    @benchmark("trivial", goal="seconds", better="lower", target=1)
    def trivial() -> Result:
        seen.append(os.environ["MLASSETS_HOME"])
        assert "DAGSTER_HOME" not in os.environ and os.path.isdir(seen[0])
        return Result(2.5, "s", "two sides measured")

    assert main([], modules=()) == 0
    out = capsys.readouterr().out
    header = [c.strip() for c in out.splitlines()[0].split(" | ")]
    assert header == ["name", "measured", "goal", "met?", "detail"]
    assert _rows(out) == {"trivial": ["trivial", "2.5 s", "seconds <= 1 s", "NO", "two sides measured"]}
    assert seen[0] != before and not os.path.exists(seen[0])
    assert os.environ.get("MLASSETS_HOME") == before


def test_crash_gives_nonzero_exit_and_others_still_run(capsys: pytest.CaptureFixture[str]) -> None:
    @benchmark("boom", goal="never", better="lower", target=1)
    def boom() -> Result:
        raise RuntimeError("kaput")

    @benchmark("fine", goal="ratio", better="higher", target=1)
    def fine() -> Result:
        return Result(4.0, "x", "ok")

    assert main([], modules=()) == 1
    captured = capsys.readouterr()
    assert "Traceback" in captured.err and "RuntimeError: kaput" in captured.err
    rows = _rows(captured.out)
    assert rows["boom"][1:] == ["CRASHED", "never <= 1", "error", "RuntimeError: kaput"]
    assert rows["fine"][1:] == ["4 x", "ratio >= 1 x", "yes", "ok"]
    assert main(["fine"], modules=()) == 0


def test_unknown_name_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["nope"], modules=())
    assert exc.value.code == 2


def test_step_time_arithmetic_on_a_real_run(tmp_path) -> None:
    with dg.DagsterInstance.local_temp(str(tmp_path), overrides=NO_TELEMETRY) as instance:
        start = time.perf_counter()
        result = dg.materialize(trivial_chain(2), instance=instance)
        wall = time.perf_counter() - start
        assert result.success
        compute = step_compute_seconds(instance, result.run_id)
        overhead, compute_again = overhead_seconds(instance, result.run_id, wall)
    assert 0 < compute <= wall
    assert compute_again == compute and overhead == pytest.approx(wall - compute) and overhead >= 0
