"""A benchmark whose work fails crashes without a figure; the bench's Dagster instances print no telemetry banner."""

from __future__ import annotations

import dagster as dg
import numpy as np
import pytest

from bench import orchestration
from bench.__main__ import main
from bench.checks import NO_TELEMETRY, WorkFailed, expect_files, expect_finite, expect_run
from bench.diagnose import SLOW_RANK, checked_page, telemetry

TRIVIAL_CHAIN = orchestration.trivial_chain


def _row(out: str, name: str) -> list[str]:
    (row,) = [[c.strip() for c in line.split(" | ")] for line in out.splitlines()[2:] if line.startswith(name)]
    return row


def _failing_chain(n: int) -> list[dg.AssetsDefinition]:
    """The floor's chain with its last asset raising, as a run of broken work would."""
    chain = TRIVIAL_CHAIN(n - 1)

    @dg.asset(name=f"step_{n - 1}", ins={"prev": dg.AssetIn(f"step_{n - 2}")})
    def broken(prev: int) -> int:
        raise ValueError("the partition key is not a partition")

    return [*chain, broken]


def test_failed_runs_crash_the_benchmark_without_a_figure(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(orchestration, "trivial_chain", _failing_chain)
    monkeypatch.setattr(orchestration, "pipeline_runs", lambda: pytest.fail("measured past a failed run"))
    assert main(["orchestration_overhead"], modules=("bench.orchestration",)) == 1
    captured = capsys.readouterr()
    row = _row(captured.out, "orchestration_overhead")
    assert row[1] == "CRASHED" and row[3] == "error"
    n = orchestration.FLOOR_ASSETS
    assert row[4].startswith(f"WorkFailed: floor materialization of {n} trivial assets: run ")
    assert f"FAILURE (step_{n - 1}: ValueError: the partition key is not a partition)" in row[4]
    assert "WorkFailed" in captured.err and " s " not in captured.out.splitlines()[-1]


def test_expect_run_passes_a_successful_run_only(tmp_path) -> None:
    with dg.DagsterInstance.local_temp(str(tmp_path), overrides=NO_TELEMETRY) as instance:
        good = dg.materialize(orchestration.trivial_chain(2), instance=instance)
        bad = dg.materialize(_failing_chain(2), instance=instance, raise_on_error=False)
        expect_run(instance, good.run_id, "good")
        with pytest.raises(WorkFailed, match=rf"^bad: run {bad.run_id} FAILURE \(step_1: ValueError: the partition"):
            expect_run(instance, bad.run_id, "bad")


def test_diagnosis_that_misses_the_straggler_crashes() -> None:
    frame = telemetry(steps=400)
    assert checked_page(frame).startswith(f"straggler: rank {SLOW_RANK}")
    slow = frame["rank"] == SLOW_RANK
    frame.loc[slow, "t_data_wait"] -= 0.05  # the slow rank is slow no more
    frame.loc[slow, "t_step"] -= 0.05 * 1.02
    with pytest.raises(WorkFailed, match=f"did not find rank {SLOW_RANK} the straggler"):
        checked_page(frame)


def test_value_checks_name_what_failed(tmp_path) -> None:
    expect_finite([1.0, 2], "ratios")
    for bad in (float("nan"), 0.0, -1.0, float("inf"), np.nan):
        with pytest.raises(WorkFailed, match="ratios: not a positive finite number"):
            expect_finite([1.0, bad], "ratios")
    (tmp_path / "empty").touch()
    with pytest.raises(WorkFailed, match=f"model: {tmp_path / 'empty'} is missing or empty"):
        expect_files([tmp_path / "empty"], "model")
    (tmp_path / "full").write_text("x")
    expect_files([tmp_path / "full", tmp_path], "model")


def test_the_floors_instance_prints_no_telemetry_banner(monkeypatch: pytest.MonkeyPatch, tmp_path,
                                                        capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # Dagster's banner goes with an id written under it
    assert len(orchestration.floor_overheads(n=2, repeats=1)) == 1
    assert "Telemetry" not in capfd.readouterr().err
    assert not (tmp_path / ".telemetry").exists()
