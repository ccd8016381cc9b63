"""Helpers of the boosted-trees tests: a small config of either family, and jobs on synthetic flights-like rows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mlassets.core.config import load_config, parse_config, shipped_configs
from mlassets.core.config.families import FAMILIES as TABLE
from mlassets.core.train.job import TrainJob
from mlassets.core.train.synthetic import write_splits

FAMILIES = tuple(name for name, facts in TABLE.items() if facts.trees)  # every boosted-trees family: its row
SAMPLED = {"feature_fraction": 0.7, "bagging_fraction": 0.8}  # both sampling streams on: what resume must replay


def tree_config(family: str, params: dict[str, Any] | None = None, task: str = "regression",
                **training: Any) -> dict[str, Any]:
    """The shipped flights config with ``family`` and small trees, as a checked dict."""
    data = load_config(shipped_configs()["flights"]).to_dict()
    data["model"].update({"family": family, "params": {"rounds": 40, "num_leaves": 15, "min_child_samples": 10,
                                                       **(params or {})}})
    data["training"].update({"threads": 1, "checkpoint_every_steps": 10, **training})
    data["tuning"]["params"] = []  # the family's default search
    if task != "regression":  # arr_delay holds 0/1 (binary) or a class name (multiclass): see ``labelled``
        data["dataset"]["task"] = task
        data["dataset"]["columns"]["arr_delay"] = {"dtype": "int" if task == "binary" else "str"}
        data["training"]["loss"] = "auto"
        data["gate"]["main_metric"] = "logloss"
    return parse_config(data).to_dict()


def labelled(directory: Path, task: str, rows: tuple[int, int] = (3000, 800)) -> None:
    """Synthetic splits whose ``arr_delay`` is a binary label (late by more than 40 minutes) or one of three classes
    (early, on_time, late), learnable from the same features."""
    write_splits(directory, *rows)
    for name in ("train", "validation"):
        path = directory / f"{name}.parquet"
        frame = pd.read_parquet(path)
        delay = frame["arr_delay"].to_numpy()
        if task == "binary":
            frame["arr_delay"] = (delay > 40).astype(np.int64)
        else:
            frame["arr_delay"] = np.select([delay < 28, delay < 47], ["early", "on_time"], "late")
        frame.to_parquet(path)


def streamable(tmp: Path) -> tuple[Path, Path]:
    """The tests' splits in row groups of 1000 rows, every 37th row without a target (reads come out short)."""
    paths = write_splits(tmp / "data", 3000, 800)
    for path in paths:
        frame = pd.read_parquet(path)
        frame.loc[frame.index % 37 == 5, "arr_delay"] = np.nan
        frame.to_parquet(path, row_group_size=1000)
    return paths


def tree_job(tmp: Path, config: dict[str, Any], name: str, rows: tuple[int, int] = (3000, 800)) -> Path:
    """A job file under ``tmp/name`` on the synthetic splits (the same rows for every job of one ``tmp``)."""
    data = tmp / "data"
    if not (data / "train.parquet").is_file():
        write_splits(data, *rows)
    out = tmp / name
    out.mkdir(parents=True, exist_ok=True)
    job = TrainJob(config=config, train_path=str(data / "train.parquet"),
                   validation_path=str(data / "validation.parquet"), out_dir=str(out), data_version="v1")
    return job.to_json(out / "job.json")


def command(job: Path) -> list[str]:
    return [sys.executable, "-m", "mlassets.core.train", "--job", str(job)]


def model_bytes(out: Path) -> bytes:
    bundle = json.loads((out / "model" / "bundle.json").read_text())
    return (out / "model" / bundle["weights_file"]).read_bytes()


def kill_after(job: Path, checkpoint: str, env: dict[str, str]) -> int:
    """Start training ``job``, SIGKILL it as soon as ``checkpoint`` exists (the next chunk is running); the round
    it had reached (from its telemetry-free progress: the newest checkpoint)."""
    out = job.parent
    proc = subprocess.Popen(command(job), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (out / "checkpoints" / checkpoint).is_dir():
        assert proc.poll() is None, proc.stderr.read()[-2000:] if proc.stderr else ""
        assert time.monotonic() < deadline, "no checkpoint within 2 minutes"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    return len(list((out / "checkpoints").glob("step-*")))
