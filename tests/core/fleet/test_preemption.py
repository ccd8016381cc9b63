"""Preemption that loses no work, with a real (small) training run on fake GPU slots: an urgent job finds the fleet
full, the batch run gets SIGTERM, writes the checkpoint of the step it is at, ends as preempted (not failed), is
requeued and resumes when the slot frees, and ends with the weights of a run never preempted."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mlassets.core.config import parse_config
from mlassets.core.fleet.config import parse_fleet
from mlassets.core.fleet.scheduler import Scheduler
from mlassets.core.fleet.service import submit, view
from mlassets.core.fleet.spec import job_spec
from mlassets.core.fleet.table import FleetTable
from mlassets.core.train.job import TrainJob
from mlassets.core.train.launch import train_command
from mlassets.core.train.outcome import read_outcome
from mlassets.core.train.reporting import PrintReporter
from mlassets.core.train.synthetic import tiny_config, write_splits
from mlassets.core.train.torch_run.process import run_training
from tests.core.fleet.ticks import until

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore:torch.distributed is disabled")]
REPO = Path(__file__).resolve().parents[3]
TRAINING = {"epochs": 2, "checkpoint_every_steps": 4, "keep_last": 2, "lr_schedule": "cosine"}  # 16 steps
FLEET = {"pools": {"spot": {"gpus": 2, "capacity": "spot", "price_per_gpu_hour": 100.0}},
         "teams": {"research": {"gpu_quota": 2, "budget": 1000.0}, "product": {"gpu_quota": 2, "budget": 1000.0}},
         "priority_classes": {"batch": {"value": 100}, "urgent": {"value": 1000, "preempts": ["batch"]}},
         "lease": {"seconds": 60, "heartbeat_s": 0.2}, "grace_s": 60}
URGENT = "import time; from mlassets.core.fleet import heartbeat as hb; hb.start_from_env(); time.sleep(1)"


def _env() -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    return {**base, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_splits(tmp_path_factory.mktemp("data"), 1000, 300)


def _job(data: tuple[Path, Path], out: Path, **training: object) -> TrainJob:
    out.mkdir(parents=True, exist_ok=True)
    job = TrainJob(tiny_config(**{**TRAINING, **training}), str(data[0]), str(data[1]), str(out), "v1")
    job.to_json(out / "job.json")
    return job


@pytest.fixture(scope="module")
def references(data, tmp_path_factory: pytest.TempPathFactory) -> dict[int, str]:
    """The final weights' sha256 of runs never preempted, by rank count."""
    shas = {}
    for nproc in (1, 2):
        reference = _job(data, tmp_path_factory.mktemp(f"reference{nproc}"), nproc=nproc)
        if nproc == 1:
            run_training(reference, PrintReporter(stream=io.StringIO()))
        else:
            proc = subprocess.run(train_command(nproc, Path(reference.out_dir) / "job.json"), env=_env(),
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr[-3000:]
        shas[nproc] = read_outcome(reference.out_dir).result.final_weights_sha256
    return shas


@pytest.mark.parametrize("nproc", [1, 2])
def test_a_preempted_run_resumes_to_the_weights_of_an_unpreempted_one(data, references, tmp_path: Path,
                                                                      nproc: int) -> None:
    batch = _job(data, tmp_path / "batch", nproc=nproc, faults={"slow_loader_ms": 150})
    sched = Scheduler(parse_fleet(FLEET), FleetTable(tmp_path / "fleet.db"), _env())
    try:
        spec = job_spec(parse_config(batch.config), {"team": "research", "gpus_per_rank": 2 // nproc})
        command = train_command(nproc, Path(batch.out_dir) / "job.json")
        batch_id = submit(sched.table, sched.fleet, "batch", spec, command, batch.out_dir)[0]
        until(sched, lambda: max((b["step"] for b in sched.table.heartbeats(batch_id)), default=0) >= 5)
        urgent_spec = job_spec(parse_config(batch.config), {"team": "product", "priority": "urgent", "ranks": 2,
                                                            "gpus_per_rank": 1, "preemptible": False})
        urgent_id = submit(sched.table, sched.fleet, "urgent", urgent_spec, [sys.executable, "-c", URGENT])[0]
        sched.tick()
        assert sched.table.job(batch_id)["state"] == "stopping"
        until(sched, lambda: sched.table.job(urgent_id)["state"] in ("running", "done"))
        (event,) = [e for e in sched.table.events() if e["kind"] == "preempted"]
        assert event["job_id"] == batch_id and event["lost_steps"] == 0  # the checkpoint of the step it was at
        assert event["detail"].startswith("exit 76; checkpoint at step ")  # the ranks' status, not torchrun's 1
        step = int(event["detail"].rsplit(" ", 1)[1])
        assert 5 <= step < 16 and (Path(batch.out_dir) / "checkpoints" / f"step-{step:09d}").is_dir()
        assert sched.table.job(batch_id)["state"] in ("queued", "running")  # requeued, not failed
        until(sched, lambda: sched.table.job(batch_id)["state"] == "done")
        assert sched.table.job(batch_id)["attempts"] == 2 and sched.table.job(urgent_id)["state"] == "done"
    finally:
        sched.close()
    result = read_outcome(batch.out_dir).result
    assert result.resumed_from_step == step
    assert result.final_weights_sha256 == references[nproc]
    assert [e["kind"] for e in view(sched.table, sched.fleet).events] == ["preempted"]


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_one_frozen_rank_of_two_loses_the_lease_and_the_run_resumes_to_the_same_weights(data, references,
                                                                                      tmp_path: Path) -> None:
    batch = _job(data, tmp_path / "batch", nproc=2, faults={"slow_loader_ms": 150})
    fleet = parse_fleet({**FLEET, "lease": {"seconds": 15, "heartbeat_s": 0.2}})
    sched = Scheduler(fleet, FleetTable(tmp_path / "fleet.db"), _env())
    try:
        spec = job_spec(parse_config(batch.config), {"team": "research"})
        job_id = submit(sched.table, fleet, "batch", spec, train_command(2, Path(batch.out_dir) / "job.json"),
                        batch.out_dir)[0]
        until(sched, lambda: max((b["step"] for b in sched.table.heartbeats(job_id)), default=0) >= 5)
        (rank1,) = [p for p in _children(sched.table.job(job_id)["pid"])
                    if "RANK=1\0" in Path(f"/proc/{p}/environ").read_text(errors="replace")]
        os.kill(rank1, signal.SIGSTOP)  # rank 0 keeps beating (and waits in its all-reduce); rank 1 is frozen
        until(sched, lambda: any(e["kind"] == "lease-lost" for e in sched.table.events()))
        assert not Path(f"/proc/{rank1}").exists() or "State:\tZ" in Path(f"/proc/{rank1}/status").read_text()
        (event,) = sched.table.events()
        assert event["lost_steps"] <= TRAINING["checkpoint_every_steps"]  # at most the steps since the checkpoint
        until(sched, lambda: sched.table.job(job_id)["state"] == "done")
        assert sched.table.job(job_id)["attempts"] == 2, sched.table.events()
    finally:
        sched.close()
    result = read_outcome(batch.out_dir).result
    assert result.resumed_from_step > 0 and result.final_weights_sha256 == references[2]
