"""Rebuild a registered model from its registry record alone and compare its predictions.

The record names the code (git sha), the data (store commit and backend), the config (MLflow run artifact),
the seed, world size and thread count. The rebuild checks the code out in a git worktree and runs this
module's ``--worker`` there, so the recorded code prepares the features through the pipeline's feature store
and trains through the pipeline's launcher; then both models score the same holdout rows here.

    python -m mlassets.core.registry.rebuild --worker --config cfg.json --data-commit ID --store local --out DIR
"""

from __future__ import annotations

import argparse
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

from mlassets.core import lineage, paths, tracking
from mlassets.core.config import canonical_hash, parse_config
from mlassets.core.data.store import open_store
from mlassets.core.features.store import export_splits, write_features
from mlassets.core.registry import versions
from mlassets.core.registry.record import RegistryRecord
from mlassets.core.registry.warm import verified_bundle
from mlassets.core.train import plugin
from mlassets.core.train.artifact import load_bundle
from mlassets.core.train.launch import prepare_job, train_command
from mlassets.core.train.outcome import read_outcome


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


def environment_reasons(record: RegistryRecord) -> list[str]:
    """Why a rebuild on this machine cannot be expected to be bit-identical to the record."""
    reasons = []
    if record.git_dirty:
        reasons.append("the record's code tree was dirty: the recorded sha is not exactly the code that trained it")
    recorded = {**record.environment.to_dict(), "lock_hash": record.lock_hash}
    here = {**lineage.environment(record.family), "lock_hash": lineage.lock_hash()}
    for key, value in here.items():
        if key in recorded and str(recorded[key]) != value:
            reasons.append(f"{key} was {recorded[key]!r}, here it is {value!r}")
    return reasons


def _config(record: RegistryRecord) -> dict:
    try:
        config = mlflow.artifacts.load_dict(f"runs:/{record.mlflow_run_id}/{tracking.CONFIG_ARTIFACT}")
    except Exception as exc:  # noqa: BLE001 - MLflow raises several types for a missing artifact
        raise RebuildError(f"run {record.mlflow_run_id}: no recorded config ({exc})") from None
    if canonical_hash(config) != record.config_hash:  # hashed as recorded: newer code may add fields
        raise RebuildError(f"run {record.mlflow_run_id}: recorded config does not match config_hash")
    return config


def _git(*args: str) -> None:
    result = subprocess.run(["git", "-C", str(lineage.PROJECT_ROOT), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RebuildError(f"git {' '.join(args[:2])}: {result.stderr.strip()}")


def _train_in_worktree(record: RegistryRecord, config: dict, scratch: Path, init_bundle: str = "") -> Path:
    tree, out = scratch / "code", scratch / "out"
    _git("worktree", "add", "--detach", str(tree), record.git_sha)
    try:
        out.mkdir()
        (scratch / "config.json").write_text(json.dumps(config))
        env = {**os.environ, "PYTHONPATH": str(tree)}
        cmd = [sys.executable, "-m", "mlassets.core.registry.rebuild", "--worker", "--config",
               str(scratch / "config.json"), "--data-commit", record.data_commit, "--store", record.store_backend,
               "--out", str(out)]
        if record.warm_start_from:  # it began from that version's weights: so does the rebuild
            cmd += ["--init-bundle", init_bundle, "--warm-start-from", record.warm_start_from]
        done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RebuildError(f"training at {record.git_sha[:12]} failed:\n{done.stderr[-3000:]}")
    finally:
        _git("worktree", "remove", "--force", str(tree))
    return out


def rebuild(name: str, version: str) -> RebuildReport:
    """Retrain ``name`` version ``version`` from its record; compare with the registered model."""
    tracking.configure()
    registered = versions.get_version(name, version)
    record = versions.record_of(registered)
    report = RebuildReport(name, str(version), not_exact_because=environment_reasons(record))
    versions.verified_bundle_dir(registered)  # an edited model folder is refused before any work
    config = _config(record)
    if record.plugin:  # the module's code lives outside the recorded git tree: it must be the same file again
        try:
            plugin.check_unchanged(record.plugin, record.plugin_sha256)
        except plugin.PluginError as exc:
            raise RebuildError(str(exc)) from None
    scratch = Path(tempfile.mkdtemp(prefix="mlassets-rebuild-", dir=paths.work_dir("rebuild")))
    try:
        init = verified_bundle(name, record.warm_start_from) if record.warm_start_from else ""
        out = _train_in_worktree(record, config, scratch, init)
        holdout = pd.read_parquet(out / "data" / "holdout.parquet")
        bundle = versions.load_version_bundle(registered)
        original, rebuilt = bundle.predict(holdout), load_bundle(out / "model").predict(holdout)
        ended = read_outcome(out)
        result = ended.result if ended is not None else None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report.rows = len(holdout)
    report.identical = bool(np.array_equal(original, rebuilt))
    report.max_abs_diff = float(np.max(np.abs(original - rebuilt))) if len(holdout) else 0.0
    report.weights_match = result is not None and result.weights_sha256 == record.weights_sha256
    return report


# ------------------------------------------------------------------ the worker, run with the recorded code


def worker(config: dict, data_commit: str, backend: str, out: Path, init_bundle: str = "",
           warm_start_from: str = "") -> Path:
    """The pipeline's own path with this checkout's code: features from the store, then the training launcher."""
    cfg = parse_config(config)
    store = open_store(backend)  # the local root or lakeFS settings come from the environment, as in the pipeline
    write_features(store, cfg, data_commit, {"rebuild": "true"})  # reuses the cached frames of this code version
    export_splits(store, cfg, data_commit, out / "data", ("holdout",))
    job_path = prepare_job(store, cfg, data_commit, out, config=config, init_bundle=init_bundle,
                           warm_start_from=warm_start_from)
    env = {**os.environ, "OMP_NUM_THREADS": str(cfg.training.threads)}
    env.pop("DAGSTER_PIPES_CONTEXT", None)
    subprocess.run(train_command(cfg.training.nproc, job_path), check=True, env=env, cwd=out)
    return out / "model"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mlassets.core.registry.rebuild")
    parser.add_argument("--worker", action="store_true", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--data-commit", required=True)
    parser.add_argument("--store", default="local", help="the store backend the record names")
    parser.add_argument("--out", required=True)
    parser.add_argument("--init-bundle", default="", help="a warm start: the bundle the record's model began from")
    parser.add_argument("--warm-start-from", default="", help="... and its registered version")
    args = parser.parse_args(argv)
    config = json.loads(Path(args.config).read_text())
    print(worker(config, args.data_commit, args.store, Path(args.out), args.init_bundle, args.warm_start_from))


if __name__ == "__main__":
    main()
