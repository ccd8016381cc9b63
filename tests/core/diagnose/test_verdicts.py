"""The verdicts on real fault-injected runs (committed fixtures) and on the source's worked examples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mlassets.core.diagnose.examples import input_bound, straggler_input
from mlassets.core.diagnose.report import diagnose_dir, diagnose_frame, format_diagnosis
from mlassets.core.diagnose.steps import read_steps

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "telemetry"
# fixture -> (bottleneck kind, straggler rank or None, the straggler's cause)
EXPECTED = {
    "slow_loader": ("input-bound", None, ""),
    "heavy_compute": ("compute-bound", None, ""),
    "allreduce_delay": ("communication-bound", None, ""),
    "slow_rank_compute": ("compute-bound", 1, "compute (its device)"),
    "slow_rank_input": ("input-bound", 1, "input path (its data loader, disk or host)"),
    "slow_checkpoint": ("checkpoint-bound", None, ""),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fault_runs_get_the_right_verdict(name: str) -> None:
    meta = json.loads((FIXTURES / name / "fixture.json").read_text())
    assert max(meta["part_growth_ms"].values()) >= 5 * meta["clean_median_step_ms"]  # each fault >= 5x the clean step
    d = diagnose_dir(FIXTURES / name)
    kind, rank, cause = EXPECTED[name]
    assert d.verdict.kind == kind, format_diagnosis(d)
    if rank is None:
        assert d.verdict.straggler is None, format_diagnosis(d)
    else:
        s = d.verdict.straggler
        assert (s.rank, s.cause) == (rank, cause), format_diagnosis(d)
        assert s.others_wait_ms > 0.5 * s.extra_ms  # the other rank waits for it in gradient sync
        assert d.verdict.headline.startswith(f"straggler: rank {rank}")


def test_clean_run_has_no_straggler_and_is_not_input_bound() -> None:
    d = diagnose_dir(FIXTURES / "clean")
    assert d.verdict.straggler is None and d.verdict.kind != "input-bound", format_diagnosis(d)
    assert d.ranks == 2


def test_worked_example_input_bound_prints_the_source_evidence() -> None:
    d = diagnose_frame(input_bound())
    assert d.verdict.kind == "input-bound"
    assert d.verdict.evidence == ("180 of 300 ms per step is data wait (means over the steady steps: a periodic "
                                  "stall counts)")
    assert any("workers" in s for s in d.verdict.next_steps)


def test_worked_example_straggler_is_the_input_path() -> None:
    d = diagnose_frame(straggler_input())
    s = d.verdict.straggler
    assert s is not None and s.rank == 3 and s.part == "t_data_wait"
    assert s.cause.startswith("input path")
    assert round(s.others_wait_ms) == 240 and "250 of 420 ms per step is data wait on rank 3" in d.verdict.evidence
    peers = d.summary.drop(index=3)  # a synchronous job: the others' 420 ms steps hold their 240 ms wait in sync
    assert (peers["t_step"] == 420.0).all() and (peers["t_sync"] == 245.0).all() and (peers["median_busy"] == 175).all()
    parts = d.summary[["t_data_wait", "t_compute", "t_sync", "t_optim", "t_checkpoint", "t_other"]].sum(axis=1)
    assert np.allclose(parts, d.summary["t_step"])


def test_own_numbers_become_the_telemetry_a_synchronous_job_records() -> None:
    from mlassets.core.diagnose.examples import StepNumbers

    d = diagnose_frame(StepNumbers(ranks=4, data_wait=10, compute=300, sync=20, optimizer=10).frame())
    assert d.verdict.kind == "compute-bound" and d.verdict.straggler is None and d.ranks == 4
    slow = diagnose_frame(StepNumbers(ranks=4, data_wait=10, compute=100, sync=20, optimizer=10, slow_rank=2,
                                      slow_data_wait=10, slow_compute=400).frame())
    s = slow.verdict.straggler
    assert (s.rank, s.cause, round(s.others_wait_ms)) == (2, "compute (its device)", 300)
    with pytest.raises(ValueError, match="the slow rank must be one of them"):
        StepNumbers(ranks=2, slow_rank=5).frame()


def test_gpu_columns_are_read_and_reported() -> None:
    frame = input_bound()
    frame["gpu_util"], frame["gpu_mem_mb"] = 23.0, 2000.0
    d = diagnose_frame(frame)
    assert d.summary.loc[0, "gpu_util"] == pytest.approx(23.0)
    assert d.verdict.notes and "GPU utilization 23%" in d.verdict.notes[0] and "input path" in d.verdict.notes[0]
    assert "memory up to 2000 MiB" in d.verdict.notes[0]


def test_cpu_fixtures_have_no_gpu_numbers_and_parts_cover_the_step() -> None:
    frame = read_steps(FIXTURES / "clean")
    assert frame["gpu_util"].isna().all()
    d = diagnose_dir(FIXTURES / "clean")
    parts = d.summary[["t_data_wait", "t_compute", "t_sync", "t_optim", "t_checkpoint", "t_other"]].sum(axis=1)
    assert np.allclose(parts, d.summary["t_step"], rtol=1e-6)


def test_empty_folder_gives_no_diagnosis(tmp_path: Path) -> None:
    assert diagnose_dir(tmp_path) is None
