"""On a CUDA machine: training on the GPU with telemetry from NVML, bf16 autocast, exact resume, the GPU check."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mlassets.core.train.faults import InjectedCrash
from mlassets.core.train.job import TrainJob
from mlassets.core.train.launch import train_command
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.synthetic import tiny_config, write_splits
from mlassets.core.train.torch_run.process import run_training

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore:torch.distributed is disabled")]
REPO = Path(__file__).resolve().parents[3]


def _train(data: tuple[Path, Path], out: Path, **training: object) -> dict:
    config = tiny_config(backend="nccl", epochs=2, checkpoint_every_steps=4, **training)
    return run_training(TrainJob(config, str(data[0]), str(data[1]), str(out), "v1"),
                        PrintReporter(stream=io.StringIO()))


def test_gpu_training_resumes_exactly_and_samples_the_gpu(tmp_path: Path) -> None:
    data = write_splits(tmp_path / "data", 1000, 300)
    reference = _train(data, tmp_path / "reference")
    assert reference.device.startswith("cuda")
    rows = pq.read_table(Path(reference.telemetry_dir) / "rank0.parquet").to_pylist()
    assert all(r["gpu_mem_mb"] > 0 for r in rows)
    with pytest.raises(InjectedCrash):
        _train(data, tmp_path / "run", faults={"crash_at_step": 12})
    resumed = _train(data, tmp_path / "run")
    assert resumed["resumed_from_step"] == 8
    assert resumed["final_weights_sha256"] == reference.final_weights_sha256


def test_bf16_autocast_trains(tmp_path: Path) -> None:
    data = write_splits(tmp_path / "data", 1000, 300)
    result = _train(data, tmp_path / "bf16", precision="bf16")
    assert result.precision == "bf16" and result.val_metric < 20


def test_gpu_check_script_runs() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_check.py"), "--steps", "12"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "throughput:" in proc.stdout and "backend nccl" in proc.stdout


def _torchrun(data: tuple[Path, Path], out: Path, **training: object) -> subprocess.CompletedProcess[str]:
    """One rank under torchrun: it joins an NCCL process group, so DDP's all-reduce and FSDP2 run on the GPU."""
    out.mkdir(parents=True, exist_ok=True)
    config = tiny_config(backend="nccl", epochs=2, checkpoint_every_steps=4, **training)
    job = TrainJob(config, str(data[0]), str(data[1]), str(out), "v1").to_json(out / "job.json")
    command = train_command(1, job, torchrun=True)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    return subprocess.run(command, capture_output=True, text=True, env={**env, "PYTHONPATH": path}, timeout=300)


@pytest.mark.parametrize("sharding", ["ddp", "fsdp"])
def test_nccl_process_group_resumes_exactly(tmp_path: Path, sharding: str) -> None:
    data = write_splits(tmp_path / "data", 1000, 300)
    proc = _torchrun(data, tmp_path / "reference", sharding=sharding)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reference = json.loads((tmp_path / "reference" / "result.json").read_text())
    assert reference.sharding == sharding and reference.device.startswith("cuda")
    rows = pq.read_table(tmp_path / "reference" / "telemetry" / "rank0.parquet").to_pylist()
    if sharding == "ddp":  # the NCCL all-reduce is timed with CUDA events
        assert all(r["t_sync"] > 0 for r in rows)
    proc = _torchrun(data, tmp_path / "run", sharding=sharding, faults={"crash_at_step": 12})
    assert proc.returncode != 0 and "injected crash at step 12" in proc.stderr
    proc = _torchrun(data, tmp_path / "run", sharding=sharding)
    assert proc.returncode == 0, proc.stderr[-3000:]
    resumed = json.loads((tmp_path / "run" / "result.json").read_text())
    assert resumed["resumed_from_step"] == 8
    assert resumed["final_weights_sha256"] == reference.final_weights_sha256
