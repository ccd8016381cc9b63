"""Regenerate tests/fixtures/telemetry/: real 2-rank training runs (torchrun, gloo) with injected faults.

    .venv/bin/python scripts/make_telemetry_fixtures.py [--only NAME ...]

A clean run is measured first; every fault is then sized to at least 5x its median step time (heavy compute
by timing one of its matmuls), and the script fails if a run's faulted part grew by less than that. Each
fixture folder keeps the per-rank Parquet files and ``fixture.json`` (faults, clean step, what grew).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mlassets.core.train.faults import HEAVY_SIZE  # noqa: E402
from mlassets.core.train.job import TrainJob  # noqa: E402
from mlassets.core.train.launch import train_command  # noqa: E402
from mlassets.core.train.synthetic import tiny_config, write_splits  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "telemetry"
FACTOR = 6.0  # faults are sized to 6x the clean step, checked against 5x
TRAINING = {"epochs": 1, "batch_size": 64, "nproc": 2, "checkpoint_every_steps": 0, "telemetry_every_steps": 0}
ROWS = 64 * 24  # 24 steps


def faults_for(name: str, delay_ms: float, matmuls: int) -> tuple[dict, dict, str]:
    """(faults, extra training settings, the telemetry part that must grow) of fixture ``name``."""
    return {
        "clean": ({}, {}, ""),
        "slow_loader": ({"slow_loader_ms": delay_ms}, {}, "t_data_wait"),
        "heavy_compute": ({"heavy_compute": matmuls}, {}, "t_compute"),
        "allreduce_delay": ({"allreduce_delay_ms": delay_ms}, {}, "t_sync"),
        "slow_rank_compute": ({"slow_rank": 1, "slow_rank_ms": delay_ms}, {}, "t_compute"),
        "slow_rank_input": ({"slow_input_rank": 1, "slow_input_ms": delay_ms}, {}, "t_data_wait"),
        "slow_checkpoint": ({"slow_checkpoint_ms": delay_ms}, {"checkpoint_every_steps": 1}, "t_checkpoint"),
    }[name]


NAMES = ("clean", "slow_loader", "heavy_compute", "allreduce_delay", "slow_rank_compute", "slow_rank_input",
         "slow_checkpoint")


def run(name: str, data: tuple[Path, Path], work: Path, faults: dict, extra: dict) -> Path:
    out = work / name
    out.mkdir(parents=True)
    config = tiny_config(**{**TRAINING, **extra, "faults": faults})
    job = TrainJob(config, str(data[0]), str(data[1]), str(out), "fixture").to_json(out / "job.json")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    env = {k: v for k, v in env.items() if not k.startswith("DAGSTER_PIPES_")}
    proc = subprocess.run(train_command(2, job), capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode:
        raise SystemExit(f"{name}: training failed\n{proc.stderr[-3000:]}")
    return out / "telemetry"


def medians(telemetry: Path, part: str) -> dict[int, float]:
    """Median ms of ``part`` per rank (the first step left out)."""
    out = {}
    for path in sorted(telemetry.glob("rank*.parquet")):
        rows = pq.read_table(path).to_pylist()[1:]
        out[int(rows[0]["rank"])] = 1000 * statistics.median(r[part] for r in rows)
    return out


def matmul_ms() -> float:
    """Milliseconds of one heavy-compute matmul on one thread (the fault's unit of work)."""
    torch.set_num_threads(1)
    a = torch.full((HEAVY_SIZE, HEAVY_SIZE), 1.0 / HEAVY_SIZE)
    for _ in range(20):
        a @ a
    start = time.perf_counter()
    for _ in range(200):
        a @ a
    return 1000 * (time.perf_counter() - start) / 200


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=NAMES, help="regenerate these (the clean run always runs)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="telemetry-fixtures-") as tmp:
        work = Path(tmp)
        data = write_splits(work / "data", ROWS, 256)
        clean_dir = run("clean", data, work, {}, {})
        clean = statistics.median(medians(clean_dir, "t_step").values())
        delay = round(max(FACTOR * clean, 30.0))
        matmuls = max(1, round(FACTOR * 1.5 * clean / matmul_ms()))
        print(f"clean median step {clean:.2f} ms: delays {delay} ms, heavy compute {matmuls} matmuls")
        for name in args.only or NAMES:
            faults, extra, part = faults_for(name, delay, matmuls)
            telemetry = clean_dir if name == "clean" else run(name, data, work, faults, extra)
            grew = {}
            if part:
                base, now = medians(clean_dir, part), medians(telemetry, part)
                grew = {r: now[r] - base[r] for r in now}
                if max(grew.values()) < 5 * clean:
                    raise SystemExit(f"{name}: {part} grew {grew} ms, less than 5x the clean step ({clean:.2f} ms)")
            target = OUT / name
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            for path in sorted(telemetry.glob("rank*.parquet")):
                shutil.copy(path, target / path.name)
            meta = {"faults": faults, "training": {**TRAINING, **extra}, "ranks": 2, "rows": ROWS,
                    "clean_median_step_ms": round(clean, 3), "part": part,
                    "part_growth_ms": {str(r): round(v, 3) for r, v in grew.items()}}
            (target / "fixture.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
            print(f"{name}: {part or 'baseline'} {meta['part_growth_ms']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
