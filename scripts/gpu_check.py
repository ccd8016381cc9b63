"""GPU check: nccl DDP on every visible NVIDIA GPU through the platform's training entry point.

    .venv/bin/python scripts/gpu_check.py                # all visible GPUs, fp32
    .venv/bin/python scripts/gpu_check.py --bf16         # bf16 autocast
    .venv/bin/python scripts/gpu_check.py --cpu --nproc 2  # the same path on CPU with gloo (a dry run)

Trains a wide MLP on synthetic rows with telemetry and checkpoints on, then prints throughput, the share of
each step part per rank, GPU utilization and memory (NVML), and the checkpoints. Exit status 2 without GPUs.
"""

from __future__ import annotations

import argparse
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

from mlassets.core.config import parse_config  # noqa: E402
from mlassets.core.train.job import TrainJob  # noqa: E402
from mlassets.core.train.launch import train_command  # noqa: E402
from mlassets.core.train.outcome import RESULT, read_outcome  # noqa: E402
from mlassets.core.train.synthetic import tiny_config, write_splits  # noqa: E402
from mlassets.core.train.torch_run.loader import load_data  # noqa: E402
from mlassets.core.train.torch_run.mlp import build_model  # noqa: E402
from mlassets.core.train.torch_run.timing import PARTS  # noqa: E402


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nproc", type=int, default=0, help="ranks (default: every visible GPU)")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast")
    parser.add_argument("--cpu", action="store_true", help="gloo on CPU instead (checks the script itself)")
    parser.add_argument("--steps", type=int, default=60, help="optimizer steps (one epoch)")
    parser.add_argument("--batch", type=int, default=0, help="global batch (default 8192 on GPU, 512 on CPU)")
    parser.add_argument("--width", type=int, default=0, help="hidden width (default 4096 on GPU, 256 on CPU)")
    parser.add_argument("--every", type=int, default=0, help="checkpoint every N steps (default: steps / 5)")
    parser.add_argument("--keep", type=Path, help="copy the run's result.json and telemetry into this folder")
    return parser.parse_args()


def _report(out: Path, nproc: int, batch: int) -> None:
    result = read_outcome(out).result
    assert result is not None, f"no result in {out}"
    print(f"\n{nproc} rank(s), backend {result.backend}, device {result.device}, precision "
          f"{result.precision}, torch {result.environment.torch_version}, {result.steps} steps of {batch} rows")
    header = f"{'rank':>4} {'step ms':>8} {'samples/s':>10} " + " ".join(f"{p[2:]:>10}" for p in PARTS)
    print(header + f" {'covered':>8} {'gpu util%':>9} {'gpu MiB':>8}")
    steps = []
    for rank in range(nproc):
        rows = pq.read_table(out / "telemetry" / f"rank{rank}.parquet").to_pylist()[3:]  # warm-up dropped
        total = sum(r["t_step"] for r in rows)
        step = statistics.median(r["t_step"] for r in rows)
        steps.append(step)
        shares = " ".join(f"{sum(r[p] for r in rows) / total:>10.1%}" for p in PARTS)
        covered = sum(sum(r[p] for r in rows) for p in PARTS) / total
        util = statistics.median(r["gpu_util"] for r in rows)
        mem = max(r["gpu_mem_mb"] for r in rows)
        print(f"{rank:>4} {1000 * step:>8.1f} {batch / nproc / step:>10.0f} {shares} {covered:>8.1%} "
              f"{util:>9.0f} {mem:>8.0f}")
    print(f"throughput: {batch / max(steps):,.0f} samples/s (slowest rank's median step "
          f"{1000 * max(steps):.1f} ms); train_seconds {result.train_seconds} (loop "
          f"{result.loop_seconds}, validation {result.validation_seconds})")
    rows = pq.read_table(out / "telemetry" / "rank0.parquet").to_pylist()
    saves = [r for r in rows if r["t_checkpoint"] > 2 * statistics.median(x["t_checkpoint"] for x in rows) + 1e-3]
    print(f"rank 0: first step {1000 * rows[0]['t_step']:.1f} ms; checkpoint part of the steps that saved: "
          + ", ".join(f"step {r['step']} {1000 * r['t_checkpoint']:.1f} ms" for r in saves))
    print("checkpoints: " + ", ".join(f"{c['name']} (val_{result.val_metric_name} {c['val_metric']})"
                                      for c in result.checkpoints))


def _stall(out: Path, config: dict, splits: tuple[Path, Path], every: int) -> None:
    """Training time blocked per checkpoint (async) against a blocking ``torch.save`` of the same state."""
    rows = pq.read_table(out / "telemetry" / "rank0.parquet").to_pylist()
    per_save = [sum(r["t_checkpoint"] for r in rows if s <= r["step"] < s + every)
                for s in range(every, len(rows) - every + 1, every)]
    if len(per_save) < 2:
        return
    data = load_data(parse_config(config), str(splits[0]), str(splits[1]), None)
    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    model = build_model(config["model"], data.pre.cardinalities, len(data.pre.numeric)).to(device)
    optimizer = torch.optim.AdamW(model.parameters())
    model(data.x_cat[:8].to(device), data.x_num[:8].to(device)).sum().backward()
    optimizer.step()
    seconds = []
    for _ in range(4):
        if device.type == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        torch.save({"model": model.state_dict(), "optim": optimizer.state_dict()}, out / "blocking.pt")
        os.sync()
        seconds.append(time.perf_counter() - started)
    a, b = statistics.median(per_save[1:]), statistics.median(seconds[1:])
    print(f"checkpoint stall: {1000 * a:.1f} ms per save (median of {len(per_save) - 1} after the first, which "
          f"took {1000 * per_save[0]:.1f} ms) vs blocking torch.save + sync {1000 * b:.1f} ms: {a / b:.4f}x")


def main() -> int:
    args = _args()
    gpus = torch.cuda.device_count()
    if not args.cpu and gpus == 0:
        print("gpu_check: no CUDA device visible (use --cpu for a dry run on CPU)", file=sys.stderr)
        return 2
    nproc = args.nproc or (gpus if not args.cpu else 2)
    batch = args.batch or (8192 if not args.cpu else 512)
    every = args.every or max(args.steps // 5, 1)
    width = args.width or (4096 if not args.cpu else 256)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        root = Path(tmp)
        train, val = write_splits(root / "data", batch * args.steps, 8192)
        config = tiny_config(model={"hidden": [width, width, width], "embedding_dim": 16}, epochs=1,
                             batch_size=batch, nproc=nproc, threads=4 if not args.cpu else 1,
                             backend="gloo" if args.cpu else "nccl", precision="bf16" if args.bf16 else "fp32",
                             checkpoint_every_steps=every, telemetry_every_steps=10)
        job = TrainJob(config, str(train), str(val), str(root / "run"), "gpu-check").to_json(root / "job.json")
        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": str(config["training"]["threads"])}
        command = train_command(nproc, job, torchrun=not args.cpu)  # one GPU too: DDP over NCCL
        print(f"gpu_check: {nproc} rank(s) on {'CPU (gloo)' if args.cpu else f'{gpus} GPU(s) (nccl)'}: "
              f"{' '.join(command)}", flush=True)
        proc = subprocess.run(command, env=env, cwd=REPO)
        if proc.returncode != 0:
            print(f"gpu_check: training failed with exit status {proc.returncode}", file=sys.stderr)
            return 1
        _report(root / "run", nproc, batch)
        _stall(root / "run", config, (train, val), every)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / "run" / RESULT, args.keep / RESULT)
            for path in (root / "run" / "telemetry").glob("rank*.parquet"):
                shutil.copy(path, args.keep / path.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
