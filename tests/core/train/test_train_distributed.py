"""Two ranks under torchrun (gloo on CPU): agreement with one rank, exact resume, telemetry, timeouts, FSDP."""

from __future__ import annotations

import io
import os
import signal
import statistics
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from mlassets.core.train.checkpoint.manager import read_metadata
from mlassets.core.train.job import TrainJob
from mlassets.core.train.launch import train_command
from mlassets.core.train.outcome import CRASH_EXIT, read_outcome
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.result import TrainingResult
from mlassets.core.train.synthetic import tiny_config, write_splits
from mlassets.core.train.torch_run.process import run_training
from mlassets.core.train.torch_run.timing import PARTS

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore:torch.distributed is disabled")]
REPO = Path(__file__).resolve().parents[3]
# 1000 rows at global batch 128: 8 steps per epoch, 16 in all; checkpoints after steps 4, 8, 12, 16
TRAINING = {"epochs": 2, "checkpoint_every_steps": 4, "keep_last": 2, "lr_schedule": "cosine"}


def _job(data: tuple[Path, Path], out: Path, **training: object) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    config = tiny_config(**{**TRAINING, **training})
    return TrainJob(config, str(data[0]), str(data[1]), str(out), "v1").to_json(out / "job.json")


def _env() -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    return {**base, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


def _run(job_path: Path, nproc: int = 2) -> subprocess.CompletedProcess[str]:
    return subprocess.run(train_command(nproc, job_path), capture_output=True, text=True, env=_env(), timeout=300)


def _result(out: Path) -> TrainingResult:
    return read_outcome(out).result


def _weights(out: Path) -> dict[str, torch.Tensor]:
    return torch.load(out / "final_weights.pt", weights_only=True)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_splits(tmp_path_factory.mktemp("data"), 1000, 300)


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("two-ranks")
    proc = _run(_job(data, out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def single(data, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("one-rank")
    job = TrainJob.from_json(_job(data, out))
    run_training(job, PrintReporter(stream=io.StringIO()))
    return out


def test_one_and_two_ranks_with_the_same_global_batch_agree(reference: Path, single: Path) -> None:
    one, two = _weights(single), _weights(reference)
    assert sorted(one) == sorted(two)
    for name in one:
        assert torch.allclose(one[name], two[name], rtol=1e-5), name
    assert _result(reference).environment.world_size == 2 and _result(single).environment.world_size == 1
    for a, b in zip(_result(single).curves, _result(reference).curves, strict=True):
        assert a["val_metric"] == pytest.approx(b["val_metric"], rel=1e-5)


def test_torchrun_with_one_rank_joins_a_process_group_and_trains_the_same_weights(data, single: Path,
                                                                                   tmp_path: Path) -> None:
    command = train_command(1, _job(data, tmp_path), torchrun=True)
    proc = subprocess.run(command, capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = _result(tmp_path)
    assert result.environment.world_size == 1 and result.sharding == "ddp"  # a plain process reports "none"
    assert _result(single).sharding == "none"
    assert result.final_weights_sha256 == _result(single).final_weights_sha256


def _telemetry(out: Path) -> dict[int, list[dict]]:
    return {rank: pq.read_table(out / "telemetry" / f"rank{rank}.parquet").to_pylist() for rank in (0, 1)}


def test_each_rank_logs_every_step_and_the_parts_cover_it(reference: Path) -> None:
    for rank, rows in _telemetry(reference).items():
        assert [r["step"] for r in rows] == list(range(1, 17)) and {r["rank"] for r in rows} == {rank}
        for row in rows:
            assert 0.9 <= sum(row[p] for p in PARTS) / row["t_step"] <= 1.0 + 1e-9, row
        assert statistics.median(r["t_sync"] for r in rows) > 0
    summary = _result(reference).telemetry
    assert summary["ranks"] == 2 and 0.9 <= summary["share_covered"] <= 1.0


def test_loader_and_allreduce_delays_show_on_every_rank(data, reference: Path, tmp_path: Path) -> None:
    proc = _run(_job(data, tmp_path, faults={"slow_loader_ms": 50, "allreduce_delay_ms": 50}))
    assert proc.returncode == 0, proc.stderr[-3000:]
    slow = _telemetry(tmp_path)
    for rank in (0, 1):  # each fault sleeps 50 ms a step inside its part (a sleep is never shorter, whatever the load)
        for part in ("t_data_wait", "t_sync"):
            assert min(r[part] for r in slow[rank]) >= 0.050, (rank, part, [r[part] for r in slow[rank]])
            assert all(0.9 <= sum(r[p] for p in PARTS) / r["t_step"] <= 1.0 + 1e-9 for r in slow[rank])
    assert _result(tmp_path).final_weights_sha256 == _result(reference).final_weights_sha256


def test_crashes_at_three_steps_resume_to_identical_weights(data, reference: Path, tmp_path: Path) -> None:
    for step, rank in ((6, 1), (12, 0), (15, 0)):  # 12: rank 0 dies while the save of step 12 is in flight
        proc = _run(_job(data, tmp_path, faults={"crash_at_step": step, "crash_rank": rank}))
        assert proc.returncode != 0 and f"injected crash at step {step} (rank {rank})" in proc.stderr
        if step == 12:
            assert not (tmp_path / "checkpoints" / "step-000000012").exists()
    proc = _run(_job(data, tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "resumed from checkpoint" in proc.stderr
    result = _result(tmp_path)
    assert result.attempt == 4 and result.resumed_from_step in (8, 12)
    assert result.final_weights_sha256 == _result(reference).final_weights_sha256
    assert result.weights_sha256 == _result(reference).weights_sha256


def _kill_after_first_checkpoint(job_path: Path, nproc: int) -> None:
    """Start training (slowed down), SIGKILL every process of it once a checkpoint is on disk."""
    proc = subprocess.Popen(train_command(nproc, job_path), env=_env(), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = job_path.parent / "checkpoints" / "step-000000004"
    deadline = time.monotonic() + 120
    while not first.is_dir() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL and first.is_dir()
    assert not (job_path.parent / "result.json").exists()


@pytest.mark.parametrize("nproc", [1, 2])
def test_sigkill_resumes_to_identical_weights(data, reference: Path, single: Path, tmp_path: Path,
                                              nproc: int) -> None:
    _kill_after_first_checkpoint(_job(data, tmp_path, faults={"slow_loader_ms": 100}), nproc)
    proc = _run(_job(data, tmp_path), nproc)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "resumed from checkpoint step-" in proc.stderr
    expected = _result(reference if nproc == 2 else single)
    assert _result(tmp_path).final_weights_sha256 == expected.final_weights_sha256


def test_a_stuck_rank_fails_the_run_within_the_collective_timeout(data, tmp_path: Path) -> None:
    """Rank 1 sleeps for an hour in its first step; the others give up after 3 s and the run fails (``_run``'s
    300 s limit raises if it waited for the sleeper instead)."""
    job = _job(data, tmp_path, collective_timeout_s=3, faults={"slow_rank": 1, "slow_rank_ms": 3_600_000})
    proc = _run(job)
    assert proc.returncode != 0
    assert "Timed out" in proc.stderr or "timeout" in proc.stderr.lower()
    assert not (tmp_path / "result.json").exists()


def test_fsdp_writes_sharded_checkpoints_and_resumes(data, reference: Path, tmp_path: Path) -> None:
    proc = _run(_job(data, tmp_path, sharding="fsdp", faults={"crash_at_step": 12}))
    assert proc.returncode != 0 and "injected crash at step 12" in proc.stderr
    assert "exitcode  : 75" in proc.stderr or f"exitcode: {CRASH_EXIT}" in proc.stderr
    proc = _run(_job(data, tmp_path, sharding="fsdp"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = _result(tmp_path)
    assert result.sharding == "fsdp" and result.resumed_from_step == 8
    metadata = read_metadata(Path(result.final_checkpoint) / ".metadata")
    chunks = metadata.state_dict_metadata["model.mlp.0.weight"].chunks
    assert len(chunks) == 2  # each rank holds half of the layer
    one, two = _weights(tmp_path), _weights(reference)
    for name in one:  # sharded or replicated: the same training
        assert torch.allclose(one[name], two[name], rtol=1e-5), name
    uninterrupted = tmp_path / "uninterrupted"
    proc = _run(_job(data, uninterrupted, sharding="fsdp"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _result(uninterrupted).final_weights_sha256 == result.final_weights_sha256
