"""``mlassets prune``: the exported splits of finished training runs listed with their sizes, freed unless --dry-run;
a run the instance still has in progress keeps its files, and nothing else in the working area is touched."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from mlassets.cli import main
from mlassets.core.train.workfiles import exported_splits, finished, remove_splits
from mlassets.host.instance import get_instance


@dg.op
def _noop() -> None:
    return None


@dg.job
def _train() -> None:
    _noop()


def _run_dir(home: Path, version: str, run_key: str, data_bytes: int) -> Path:
    run = home / "work" / "flights" / "train" / version / run_key
    (run / "data").mkdir(parents=True)
    (run / "data" / "train.parquet").write_bytes(b"x" * data_bytes)
    (run / "telemetry").mkdir()
    (run / "telemetry" / "rank0.parquet").write_bytes(b"t" * 10)
    return run


def test_prune_lists_then_frees_finished_runs_splits(home: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(home)
    instance = get_instance()
    try:
        active = instance.create_run_for_job(_train).run_id  # not started yet: its step may still export and read
    finally:
        instance.dispose()
    done = [_run_dir(root, "a" * 16, "deadbeef", 2_000_000), _run_dir(root, "b" * 16, "0badf00d", 1_000_000)]
    running = _run_dir(root, "b" * 16, active[:8], 3_000_000)
    assert main(["prune", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"work/flights/train/{'a' * 16}/deadbeef/data  2.0 MB  (would free)" in out
    assert f"{active[:8]}/data  3.0 MB  (in progress, kept)" in out
    assert "would free 3.0 MB: the exported splits of 2 finished training run(s)" in out and "1 in progress kept" in out
    assert all((run / "data" / "train.parquet").is_file() for run in [*done, running])  # a dry run removes nothing
    assert main(["prune"]) == 0
    assert "freed 3.0 MB" in capsys.readouterr().out
    assert not any((run / "data").exists() for run in done) and (running / "data" / "train.parquet").is_file()
    assert all((run / "telemetry" / "rank0.parquet").is_file() for run in [*done, running])  # the dashboard's
    assert [w.run_key for w in exported_splits(root / "work")] == [active[:8]]
    assert main(["prune"]) == 0
    assert "freed 0.0 MB: the exported splits of 0 finished training run(s)" in capsys.readouterr().out


def test_remove_splits_frees_the_data_folder_only(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "c" * 16, "12345678", 5000)
    assert remove_splits(run) == 5000 and not (run / "data").exists() and (run / "telemetry").is_dir()
    assert remove_splits(run) == 0


def test_a_finished_step_frees_its_splits_and_working_checkpoints(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "d" * 16, "87654321", 3000)
    (run / "checkpoints" / "step-000000010").mkdir(parents=True)
    (run / "checkpoints" / "step-000000010" / "model.distcp").write_bytes(b"c" * 700)
    (run / "result.json").write_text("{}")
    assert finished(run) == 3700
    assert sorted(p.name for p in run.iterdir()) == ["result.json", "telemetry"]
