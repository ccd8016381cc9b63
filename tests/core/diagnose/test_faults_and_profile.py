"""The new faults in real runs (slow input on one rank, slow checkpoint writes) and ``training.profile`` traces."""

from __future__ import annotations

import io
import json
import os
import statistics
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mlassets.core.config import ConfigError, parse_config
from mlassets.core.diagnose.profile import analyze
from mlassets.core.train.job import TrainJob
from mlassets.core.train.launch import train_command
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.synthetic import tiny_config, write_splits
from mlassets.core.train.torch_run.process import run_training

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")
REPO = Path(__file__).resolve().parents[3]
TRAINING = {"epochs": 1, "batch_size": 64, "checkpoint_every_steps": 4, "nproc": 2}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_splits(tmp_path_factory.mktemp("data"), 64 * 12, 256)


def _torchrun(data: tuple[Path, Path], out: Path, **faults: object) -> dict[int, list[dict]]:
    out.mkdir(parents=True)
    job = TrainJob(tiny_config(**TRAINING, faults=faults), str(data[0]), str(data[1]), str(out), "v1")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(train_command(2, job.to_json(out / "job.json")), capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r: pq.read_table(out / "telemetry" / f"rank{r}.parquet").to_pylist()[1:] for r in (0, 1)}


def _median(rows: list[dict], part: str) -> float:
    return statistics.median(r[part] for r in rows)


@pytest.mark.e2e  # three torchrun jobs of two ranks: 20 s, outside the inner loop
def test_slow_input_on_one_rank_and_slow_checkpoints_draw_no_random_numbers(data, tmp_path: Path) -> None:
    clean = _torchrun(data, tmp_path / "clean")
    slow = _torchrun(data, tmp_path / "slow", slow_input_rank=1, slow_input_ms=40, slow_checkpoint_ms=2000)
    assert _median(slow[1], "t_data_wait") - _median(clean[1], "t_data_wait") >= 0.030  # rank 1's input path
    assert _median(slow[0], "t_data_wait") < 0.015  # rank 0's batches arrive as before
    assert _median(slow[0], "t_sync") - _median(clean[0], "t_sync") >= 0.020  # rank 0 waits for rank 1
    # a save waits for the previous, slow, write: 2 s is far more than 4 steps take on a busy machine, and a busy
    # machine only lengthens the wait (a sum over two runs compared, before, could go either way under load)
    assert max(r["t_checkpoint"] for r in slow[0]) >= 0.5
    weights = [json.loads((tmp_path / n / "result.json").read_text())["final_weights_sha256"]
               for n in ("clean", "slow")]
    assert weights[0] == weights[1]


def test_profile_records_a_trace_per_rank_that_hta_reads(data, tmp_path: Path) -> None:
    config = tiny_config(epochs=1, batch_size=64, profile={"steps": 3, "wait": 1, "warmup": 1})
    run_training(TrainJob(config, str(data[0]), str(data[1]), str(tmp_path), "v1"), PrintReporter(stream=io.StringIO()))
    assert (tmp_path / "profile" / "rank0.json").is_file()
    report = analyze(tmp_path / "profile")
    assert report.ranks == [0] and not report.gpu and len(report.steps[0]) >= 2  # HTA drops a cut-off last step
    phases = set(report.phases["phase"])
    assert {"data loader", "forward + loss", "optimizer"} <= phases
    assert report.notes  # CPU-only: says why HTA's temporal breakdown is not shown
    assert report.phases["share"].sum() == pytest.approx(1.0, abs=0.02)


def test_profile_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="training.profile.steps"):
        parse_config(tiny_config(profile={"steps": -1}))
