"""Training a candidate: the job handed to the training process, and what gets recorded about it."""

from __future__ import annotations

from pathlib import Path

from mlassets.core import lineage
from mlassets.core.config import PipelineConfig
from mlassets.core.feature_store import export_splits
from mlassets.core.store import VersionedStore
from mlassets.core.train import TrainJob


def prepare_job(store: VersionedStore, cfg: PipelineConfig, data_version: str, out_dir: Path) -> Path:
    """Export the train and validation splits next to a job file; return the job file's path."""
    files = export_splits(store, cfg, data_version, out_dir / "data", ("train", "validation"))
    job = TrainJob(
        config=cfg.to_dict(),
        train_path=str(files["train"]),
        validation_path=str(files["validation"]),
        out_dir=str(out_dir),
        data_version=data_version,
    )
    path = out_dir / "job.json"
    job.to_json(path)
    return path


def record(cfg: PipelineConfig, data_version: str, result: dict[str, object]) -> dict[str, str]:
    """The reproducibility record of a candidate: registry tags and materialization metadata."""
    return {
        "data_commit": data_version,
        "git_sha": lineage.git_sha(),
        "git_dirty": str(lineage.git_dirty()).lower(),
        "config_hash": cfg.config_hash(),
        "lock_hash": lineage.lock_hash(),
        "seed": str(result["seed"]),
        "world_size": str(result["world_size"]),
        "threads": str(result["threads"]),
        "torch_version": str(result["torch_version"]),
        "cpu_capability": str(result["cpu_capability"]),
        "weights_sha256": str(result["weights_sha256"]),
    }
