"""Training a candidate: the job handed to the training process, and what gets recorded about it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mlassets.core import lineage
from mlassets.core.checkpoint_files import verify
from mlassets.core.config import PipelineConfig
from mlassets.core.datasets import derived_repo
from mlassets.core.feature_store import BRANCH, export_splits
from mlassets.core.store import VersionedStore
from mlassets.core.train_job import TrainJob


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


def train_command(nproc: int, job_path: Path, torchrun: bool = False) -> list[str]:
    """The command that trains ``job_path``: one plain process, or torchrun with ``nproc`` local ranks.

    ``torchrun=True`` launches one rank through torchrun too: it then joins a process group (DDP or FSDP
    over NCCL on one GPU) instead of training as a plain process.

    torchrun never restarts ranks (``--max-restarts=0``): the orchestrator's retry policy restarts the
    whole step, where every restart is visible, and the new attempt resumes from the newest checkpoint.
    """
    if nproc <= 1 and not torchrun:
        return [sys.executable, "-m", "mlassets.core.train", "--job", str(job_path)]
    script = Path(sys.executable).with_name("torchrun")
    launcher = [str(script)] if script.is_file() else [sys.executable, "-m", "torch.distributed.run"]
    return [*launcher, "--standalone", "--nnodes=1", f"--nproc-per-node={nproc}", "--max-restarts=0",
            "-m", "mlassets.core.train", "--job", str(job_path)]


def commit_checkpoints(store: VersionedStore, cfg: PipelineConfig, data_version: str, run_key: str,
                       result: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """Commit the final and the best checkpoint to the derived repository (never the watched branch).

    Each is checked against its manifest first. Returns the commit id and ``{"final": uri, "best": uri}``.
    """
    repo = derived_repo(cfg)
    store.create_repo(repo, default_branch=BRANCH)
    changes: dict[str, bytes | None] = {}
    prefixes = {}
    for kind in ("final", "best"):
        directory = Path(str(result[f"{kind}_checkpoint"]))
        verify(directory)
        prefixes[kind] = f"checkpoints/{data_version}/{run_key}/{kind}"
        for file in sorted(directory.iterdir()):
            changes[f"{prefixes[kind]}/{file.name}"] = file.read_bytes()
    meta = {"data_version": data_version, "run": run_key, "final": directory_name(result, "final"),
            "best": directory_name(result, "best")}
    commit = store.commit(repo, BRANCH, changes, f"Checkpoints of {data_version[:12]} (run {run_key})", meta)
    return commit.id, {kind: store.uri(repo, commit.id, prefix) for kind, prefix in prefixes.items()}


def directory_name(result: dict[str, Any], kind: str) -> str:
    return Path(str(result[f"{kind}_checkpoint"])).name
