"""``mlassets rebuild``: retrain a registered version from its record and compare predictions exactly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd

from mlassets.core import lineage, paths, registry, tracking
from mlassets.core.artifact import load_bundle
from mlassets.core.config import canonical_hash

REQUIRED = ("data_commit", "git_sha", "mlflow_run_id", "config_hash", "seed", "world_size", "threads")


class RebuildError(RuntimeError):
    """The record is incomplete or its code, config or data cannot be found."""


@dataclass
class RebuildReport:
    model: str
    version: str
    rows: int = 0
    identical: bool = False
    max_abs_diff: float = float("nan")
    weights_match: bool = False
    not_exact_because: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"rebuild of {self.model} version {self.version}: "
               + ("identical predictions" if self.identical else "predictions DIFFER"),
               f"  holdout rows compared: {self.rows}; max |difference|: {self.max_abs_diff:.3g}; "
               f"weights sha256 {'match' if self.weights_match else 'differ'}"]
        out += [f"  cannot be exact: {reason}" for reason in self.not_exact_because]
        return out


def environment_reasons(tags: dict[str, str]) -> list[str]:
    """Why a rebuild on this machine cannot be expected to be bit-identical to the record."""
    reasons = []
    if tags.get("git_dirty", "true") != "false":
        reasons.append("the record's code tree was dirty: the recorded sha is not exactly the code that trained it")
    now = {**lineage.environment(), "lock_hash": lineage.lock_hash()}
    for key in ("torch_version", "cpu_capability", "lock_hash"):
        if key in tags and tags[key] != now[key]:
            reasons.append(f"{key} was {tags[key]!r}, here it is {now[key]!r}")
    return reasons


def _record(name: str, version: str) -> dict[str, str]:
    tags = dict(registry.get_version(name, version).tags)
    missing = [k for k in REQUIRED if k not in tags]
    if missing:
        raise RebuildError(f"{name} version {version}: the record lacks {', '.join(missing)}")
    return tags


def _config(tags: dict[str, str]) -> dict:
    try:
        config = mlflow.artifacts.load_dict(f"runs:/{tags['mlflow_run_id']}/{tracking.CONFIG_ARTIFACT}")
    except Exception as exc:  # noqa: BLE001 - MLflow raises several types for a missing artifact
        raise RebuildError(f"run {tags['mlflow_run_id']}: no recorded config ({exc})") from None
    if canonical_hash(config) != tags["config_hash"]:  # hashed as recorded: newer code may add fields
        raise RebuildError(f"run {tags['mlflow_run_id']}: recorded config does not match config_hash")
    return config


def _git(*args: str) -> None:
    result = subprocess.run(["git", "-C", str(lineage.PROJECT_ROOT), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RebuildError(f"git {' '.join(args[:2])}: {result.stderr.strip()}")


def _train_in_worktree(tags: dict[str, str], config: dict, scratch: Path) -> Path:
    tree, out = scratch / "code", scratch / "out"
    _git("worktree", "add", "--detach", str(tree), tags["git_sha"])
    try:
        out.mkdir()
        (scratch / "config.json").write_text(json.dumps(config))
        env = {**os.environ, "PYTHONPATH": str(tree)}
        cmd = [sys.executable, "-m", "mlassets.core.rebuild", "--worker", "--config", str(scratch / "config.json"),
               "--data-commit", tags["data_commit"], "--store-root", str(paths.store_root()), "--out", str(out)]
        done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RebuildError(f"training at {tags['git_sha'][:12]} failed:\n{done.stderr[-3000:]}")
    finally:
        _git("worktree", "remove", "--force", str(tree))
    return out


def rebuild(name: str, version: str) -> RebuildReport:
    """Retrain ``name`` version ``version`` from its record; compare with the registered model."""
    tracking.configure()
    tags = _record(name, version)
    report = RebuildReport(name, str(version), not_exact_because=environment_reasons(tags))
    config = _config(tags)
    scratch = Path(tempfile.mkdtemp(prefix="mlassets-rebuild-", dir=paths.work_dir("rebuild")))
    try:
        out = _train_in_worktree(tags, config, scratch)
        holdout = pd.read_parquet(out / "data" / "holdout.parquet")
        registered = registry.load_version_bundle(registry.get_version(name, version))
        original, rebuilt = registered.predict(holdout), load_bundle(out / "model").predict(holdout)
        result = json.loads((out / "result.json").read_text())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report.rows = len(holdout)
    report.identical = bool(np.array_equal(original, rebuilt))
    report.max_abs_diff = float(np.max(np.abs(original - rebuilt))) if len(holdout) else 0.0
    report.weights_match = result.get("weights_sha256") == tags.get("weights_sha256")
    return report
