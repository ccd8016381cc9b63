"""On a CUDA machine: training on the GPU with telemetry from NVML, bf16 autocast, exact resume, the GPU check."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mlassets.core.faults import InjectedCrash
from mlassets.core.reporting import PrintReporter
from mlassets.core.synthetic import tiny_config, write_splits
from mlassets.core.train import run_training
from mlassets.core.train_job import TrainJob

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore:torch.distributed is disabled")]
REPO = Path(__file__).resolve().parents[2]


def _train(data: tuple[Path, Path], out: Path, **training: object) -> dict:
    config = tiny_config(backend="nccl", epochs=2, checkpoint_every_steps=4, **training)
    return run_training(TrainJob(config, str(data[0]), str(data[1]), str(out), "v1"),
                        PrintReporter(stream=io.StringIO()))


def test_gpu_training_resumes_exactly_and_samples_the_gpu(tmp_path: Path) -> None:
    data = write_splits(tmp_path / "data", 1000, 300)
    reference = _train(data, tmp_path / "reference")
    assert reference["device"].startswith("cuda")
    rows = pq.read_table(Path(reference["telemetry_dir"]) / "rank0.parquet").to_pylist()
    assert all(r["gpu_mem_mb"] > 0 for r in rows)
    with pytest.raises(InjectedCrash):
        _train(data, tmp_path / "run", faults={"crash_at_step": 12})
    resumed = _train(data, tmp_path / "run")
    assert resumed["resumed_from_step"] == 8
    assert resumed["final_weights_sha256"] == reference["final_weights_sha256"]


def test_bf16_autocast_trains(tmp_path: Path) -> None:
    data = write_splits(tmp_path / "data", 1000, 300)
    result = _train(data, tmp_path / "bf16", precision="bf16")
    assert result["precision"] == "bf16" and result["val_mae"] < 20


def test_gpu_check_script_runs() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_check.py"), "--steps", "12"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "throughput:" in proc.stdout and "backend nccl" in proc.stdout
