"""Step telemetry: rows and aggregates, every part measured, injected delays show where they belong."""

from __future__ import annotations

import io
import statistics
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from mlassets.core.train.job import TrainJob
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.synthetic import tiny_config, write_splits
from mlassets.core.train.torch_run.process import run_training
from mlassets.core.train.torch_run.timing import COLUMNS, PARTS, StepLog, aggregate, read_rows, summary

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")


def test_step_log_keeps_earlier_attempts_up_to_the_resumed_step(tmp_path: Path) -> None:
    first = StepLog(tmp_path, rank=1, attempt=1)
    for step in range(1, 6):
        first.add(1, step, (0.01, 0.02, 0.0, 0.005, 0.0), 0.035, 64, (float("nan"), float("nan")))
    first.flush()
    first.write()
    second = StepLog(tmp_path, rank=1, attempt=2)
    second.resume(last_step=3)  # steps 4 and 5 are done again by the new attempt
    for step in (4, 5):
        second.add(1, step, (0.02, 0.02, 0.0, 0.006, 0.0), 0.046, 64, (float("nan"), float("nan")))
    np.testing.assert_array_equal(np.array(second.window()), np.array(second.rows[3:]))  # (NaN GPU columns)
    assert len(second) == 5
    second.write()
    table = pq.read_table(tmp_path / "rank1.parquet")
    assert table.column_names == list(COLUMNS)
    assert table["step"].to_pylist() == [1, 2, 3, 4, 5]
    assert table["attempt"].to_pylist() == [1, 1, 1, 2, 2]
    agg = aggregate(read_rows(tmp_path))
    assert agg["median_step_ms"] == pytest.approx(35.0)
    assert agg["share_covered"] == pytest.approx(1.0)
    assert agg["samples_per_s"] == pytest.approx(5 * 64 / (3 * 0.035 + 2 * 0.046))
    assert summary(tmp_path)["steps"] == 5 and summary(tmp_path)["ranks"] == 1


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_splits(tmp_path_factory.mktemp("data"), 1000, 300)


def _rows(data: tuple[Path, Path], out: Path, **faults: float) -> list[dict]:
    config = tiny_config(epochs=1, checkpoint_every_steps=3, faults=faults)
    result = run_training(TrainJob(config, str(data[0]), str(data[1]), str(out), "v1"),
                          PrintReporter(stream=io.StringIO()))
    table = pq.read_table(Path(result.telemetry_dir) / "rank0.parquet").to_pylist()
    assert len(table) == result.steps == 8
    return table


def _median(rows: list[dict], column: str) -> float:
    return statistics.median(r[column] for r in rows)


def test_parts_cover_each_step_and_a_slow_loader_shows_as_data_wait(data, tmp_path: Path) -> None:
    base = _rows(data, tmp_path / "base")
    slow = _rows(data, tmp_path / "slow", slow_loader_ms=50, heavy_compute=200)
    for row in base + slow:
        covered = sum(row[p] for p in PARTS) / row["t_step"]
        assert 0.9 <= covered <= 1.0 + 1e-9, row
        assert row["samples"] > 0 and row["t_sync"] == 0.0  # one rank: no all-reduce
    assert any(r["t_checkpoint"] > 0 for r in base)
    assert _median(slow, "t_data_wait") - _median(base, "t_data_wait") >= 0.040
    assert _median(slow, "t_data_wait") < 0.5
    assert _median(slow, "t_compute") > _median(base, "t_compute")  # heavy compute is compute
