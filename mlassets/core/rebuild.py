"""Rebuild a registered model from its registry record alone and compare its predictions.

The record names the code (git sha), the data (store commit), the config (MLflow run artifact), the seed,
world size and thread count. The rebuild checks the code out in a git worktree and runs this module's
``--worker`` there, so the recorded code prepares the features and trains; then both models score the
same holdout rows here.

    python -m mlassets.core.rebuild --worker --config cfg.json --data-commit ID --store-root DIR --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from mlassets.core.config import parse_config
from mlassets.core.datasets import read_version, to_parquet_bytes
from mlassets.core.features import prepare_features
from mlassets.core.store import open_store
from mlassets.core.train import TrainJob


def worker(config: dict, data_commit: str, store_root: str, out: Path) -> Path:
    """Features from the raw data at ``data_commit``, then training, with this checkout's code."""
    cfg = parse_config(config)
    parts = prepare_features(read_version(open_store("local", root=store_root), cfg, data_commit), cfg)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    for split, frame in parts.items():
        (data / f"{split}.parquet").write_bytes(to_parquet_bytes(frame))
    job = TrainJob(config=config, train_path=str(data / "train.parquet"),
                   validation_path=str(data / "validation.parquet"), out_dir=str(out), data_version=data_commit)
    job_path = job.to_json(out / "job.json")
    nproc = cfg.training.nproc
    launcher = [sys.executable, "-m", "mlassets.core.train"] if nproc == 1 else [
        os.path.join(os.path.dirname(sys.executable), "torchrun"), "--standalone", "--nnodes=1",
        f"--nproc-per-node={nproc}", "--max-restarts=0", "-m", "mlassets.core.train"]
    env = {**os.environ, "OMP_NUM_THREADS": str(cfg.training.threads)}
    env.pop("DAGSTER_PIPES_CONTEXT", None)
    subprocess.run([*launcher, "--job", str(job_path)], check=True, env=env, cwd=out)
    return out / "model"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mlassets.core.rebuild")
    parser.add_argument("--worker", action="store_true", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--data-commit", required=True)
    parser.add_argument("--store-root", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    config = json.loads(Path(args.config).read_text())
    print(worker(config, args.data_commit, args.store_root, Path(args.out)))


if __name__ == "__main__":
    main()
