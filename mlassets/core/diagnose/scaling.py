"""Measure how training scales on this machine: short runs at 1..N ranks -> efficiency per doubling.

Strong scaling, as in ``cost.SOURCE_PRESET``'s table: the same global batch at every rank count, so N ranks share each
step's work. Also measured: the stall of one checkpoint and the restart cost (process start-up, data load,
process-group join), the inputs of the spot-versus-on-demand comparison.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from mlassets.core.diagnose.cost import fit_efficiency
from mlassets.core.train.job import TrainJob
from mlassets.core.train.launch import train_command
from mlassets.core.train.outcome import read_outcome
from mlassets.core.train.synthetic import tiny_config, write_splits

CHECKPOINT_EVERY = 4


def rank_counts(max_ranks: int) -> list[int]:
    """1, 2, 4, ... up to ``max_ranks``."""
    counts, n = [], 1
    while n <= max_ranks:
        counts.append(n)
        n *= 2
    return counts


def _run(job_path: Path, nproc: int, threads: int) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_PIPES_")}
    env.update({"OMP_NUM_THREADS": str(threads)})
    started = time.perf_counter()
    proc = subprocess.run(train_command(nproc, job_path, torchrun=nproc > 1), capture_output=True, text=True,
                          env=env, timeout=900)
    if proc.returncode:
        raise RuntimeError(f"scaling run with {nproc} rank(s) failed: {proc.stderr[-2000:]}")
    return time.perf_counter() - started


def _telemetry(out: Path) -> tuple[float, float, int]:
    """(median step seconds of the slowest rank, mean checkpoint stall per save, steps) of one run."""
    step_medians, stalls, steps = [], [], 0
    for path in sorted((out / "telemetry").glob("rank*.parquet")):
        rows = pq.read_table(path).to_pylist()[1:]  # the first step is warm-up
        steps = len(rows) + 1
        step_medians.append(statistics.median(r["t_step"] for r in rows))
        saves = max((steps - 1) // CHECKPOINT_EVERY, 1)
        stalls.append(sum(r["t_checkpoint"] for r in rows) / saves)
    return max(step_medians), statistics.mean(stalls), steps


def measure(work: Path, model: dict[str, Any], batch_size: int, max_ranks: int = 2, rows: int = 4096,
            threads: int = 1) -> dict[str, Any]:
    """Train briefly at 1, 2, 4 ... ``max_ranks`` ranks on synthetic rows; the measurements as a dict."""
    data = write_splits(work / "data", rows, 512)
    throughput, stall, restart, steps = {}, 0.0, 0.0, 0
    for n in rank_counts(max_ranks):
        out = work / f"ranks-{n}"
        out.mkdir(parents=True, exist_ok=True)
        config = tiny_config(model=model, epochs=1, batch_size=batch_size, threads=threads, nproc=n,
                             checkpoint_every_steps=CHECKPOINT_EVERY, telemetry_every_steps=0)
        job = TrainJob(config, str(data[0]), str(data[1]), str(out), "scaling").to_json(out / "job.json")
        wall = _run(job, n, threads)
        step_s, stall, steps = _telemetry(out)
        throughput[n] = batch_size / step_s
        ended = read_outcome(out)
        result = ended.result if ended is not None else None
        restart = wall - (result.loop_seconds + result.validation_seconds if result is not None else 0.0)
    return {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} CPUs ({platform.machine()}), {threads} thread(s) per rank",
        "ranks": list(throughput), "throughput": {str(n): round(t, 3) for n, t in throughput.items()},
        "efficiency_per_doubling": round(fit_efficiency(throughput), 4) if len(throughput) > 1 else 1.0,
        "checkpoint_stall_s": round(stall, 4), "restart_s": round(restart, 3),
        "steps": steps, "batch_size": batch_size, "model": model,
    }
