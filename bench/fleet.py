"""The fleet on fake GPU slots with a real (small) training run: how long a preempted job takes to give its GPUs
back, how long a frozen rank's job holds them after its last heartbeat, and what a resume costs against the
checkpoint interval. Every run must end with the unpreempted run's weights, or the benchmark crashes. Smoke mode: a
2 s lease, and the frozen rank with one checkpoint interval (2 steps)."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from bench.registry import Result, benchmark, toy
from mlassets.core.config import parse_config
from mlassets.core.fleet.config import parse_fleet
from mlassets.core.fleet.scheduler import Scheduler
from mlassets.core.fleet.service import submit
from mlassets.core.fleet.spec import job_spec
from mlassets.core.fleet.table import FleetTable
from mlassets.core.train.job import TrainJob
from mlassets.core.train.launch import train_command
from mlassets.core.train.outcome import read_outcome
from mlassets.core.train.synthetic import tiny_config, write_splits

FLEET = {"pools": {"spot": {"gpus": 1, "capacity": "spot", "price_per_gpu_hour": 100.0}},
         "teams": {"research": {"gpu_quota": 1, "budget": 1e6}, "product": {"gpu_quota": 1, "budget": 1e6}},
         "priority_classes": {"batch": {"value": 100}, "urgent": {"value": 1000, "preempts": ["batch"]}},
         "lease": {"seconds": 5.0, "heartbeat_s": 0.5}, "grace_s": 30}
URGENT = "import time; from mlassets.core.fleet import heartbeat as hb; hb.start_from_env(); time.sleep(0.5)"
TRIGGER_STEP = 5  # of 16 (2 epochs of 8 steps)
FREEZE_EVERY = (2, 8)  # checkpoint intervals of the frozen runs


def _fleet() -> dict:
    return toy(FLEET, {**FLEET, "lease": {"seconds": 2.0, "heartbeat_s": 0.5}})


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[1])
    return {**{k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}, "PYTHONPATH": root,
            "OMP_NUM_THREADS": "1"}


def _run(work: Path, data: tuple[Path, Path], name: str, every: int, trigger: str = "") -> dict[str, float]:
    """Train under the fleet; ``trigger`` 'preempt' (an urgent job) or 'freeze' (SIGSTOP) at TRIGGER_STEP."""
    out = work / name
    out.mkdir()
    job = TrainJob(tiny_config(epochs=2, checkpoint_every_steps=every, keep_last=2, lr_schedule="cosine",
                               faults={"slow_loader_ms": 150}), str(data[0]), str(data[1]), str(out), "v1")
    job.to_json(out / "job.json")
    fleet = parse_fleet(_fleet())
    sched = Scheduler(fleet, FleetTable(out / "fleet.db"), _env())
    spec = job_spec(parse_config(job.config), {"team": "research"})
    job_id = submit(sched.table, fleet, name, spec, train_command(1, out / "job.json"), str(out))[0]
    started, fired, resumed = time.monotonic(), None, None
    try:
        while sched.table.job(job_id)["state"] != "done":
            if time.monotonic() - started > 600:
                raise RuntimeError(f"{name}: not done in 600 s: {sched.table.job(job_id)}")
            sched.tick()
            row = sched.table.job(job_id)
            if row["state"] == "failed":
                raise RuntimeError(f"{name}: the training job failed: {row['reason']}")
            step = max((b["step"] for b in sched.table.heartbeats(job_id)), default=0)
            if trigger and fired is None and row["state"] == "running" and step >= TRIGGER_STEP:
                if trigger == "preempt":
                    urgent = job_spec(parse_config(job.config), {"team": "product", "priority": "urgent",
                                                                 "preemptible": False})
                    submit(sched.table, fleet, "urgent", urgent, [sys.executable, "-c", URGENT])
                else:
                    os.kill(row["pid"], signal.SIGSTOP)
                fired = time.time()
            if fired is not None and resumed is None and row["attempts"] == 2 and step > 0:
                resumed = time.time()  # the requeued attempt trained its first step past the checkpoint
            time.sleep(0.05 if trigger == "preempt" else fleet.lease.heartbeat_s)
    finally:
        sched.close()
    resumed = resumed or time.time()  # (its last steps ran between two looks: at most the time it finished)
    events = [e for e in sched.table.events() if e["job_id"] == job_id]
    unsaved = trigger == "preempt" and not read_outcome(out).result.resumed_from_step  # SIGTERM always checkpoints
    if trigger and (len(events) != 1 or fired is None or unsaved):
        raise RuntimeError(f"{name}: expected one {trigger} and a resume, got {events}")
    freed = events[0]["time"] - fired if trigger else 0.0  # the event is written as the GPUs are released
    return {"wall": time.monotonic() - started, "freed": freed, "lost": sum(e["lost_steps"] for e in events),
            "restart": (resumed - events[0]["time"]) if trigger else 0.0,
            "sha": read_outcome(out).result.final_weights_sha256}  # type: ignore[dict-item]


def _same(runs: dict[str, dict], reference: str) -> None:
    for name, run in runs.items():
        if run["sha"] != runs[reference]["sha"]:
            raise RuntimeError(f"{name}: final weights differ from the unpreempted run's")


@benchmark("fleet_preemption", goal="SIGTERM to GPUs free, over the grace period", better="lower", target=1.0)
def fleet_preemption() -> Result:
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        work = Path(tmp)
        data = write_splits(work, 1000, 300)
        runs = {"plain": _run(work, data, "plain", 4), "preempted": _run(work, data, "preempted", 4, "preempt")}
        _same(runs, "plain")
    p = runs["preempted"]
    if p["lost"] != 0:
        raise RuntimeError(f"the preempted run lost {p['lost']} steps; 0 expected")
    return Result(p["freed"] / FLEET["grace_s"], "x grace",
                  f"GPUs free {p['freed']:.2f} s after the urgent job was submitted (grace {FLEET['grace_s']} s); "
                  f"0 steps lost; the requeued run trained again {p['restart']:.1f} s after it was released "
                  "(the urgent job's 0.5 s, process start, restore); same weights as unpreempted")


@benchmark("fleet_lease_release", goal="frozen rank to GPUs free, over lease + one heartbeat", better="lower",
           target=1.0)
def fleet_lease_release() -> Result:
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        work = Path(tmp)
        data = write_splits(work, 1000, 300)
        runs = {"plain": _run(work, data, "plain", 2)}
        every = toy(FREEZE_EVERY, FREEZE_EVERY[:1])
        runs.update({f"every{k}": _run(work, data, f"every{k}", k, "freeze") for k in every})
        _same(runs, "plain")
    lease = _fleet()["lease"]
    bound = lease["seconds"] + lease["heartbeat_s"]
    worst = max(runs[f"every{k}"]["freed"] for k in every)
    detail = "; ".join(f"checkpoint every {k} steps: {runs[f'every{k}']['lost']:.0f} steps redone, trained again "
                       f"{runs[f'every{k}']['restart']:.1f} s after release" for k in every)
    return Result(worst / bound, "x bound", f"released {worst:.2f} s after SIGSTOP (lease {lease['seconds']}"
                  f" s + heartbeat {lease['heartbeat_s']} s); {detail}; same weights")
