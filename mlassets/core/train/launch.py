"""Launching a training run: the job handed to the training process, the command that runs it, and what the
launcher records afterwards (its checkpoints in the store, its provenance)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from mlassets.core import lineage
from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import derived_repo
from mlassets.core.data.store import VersionedStore
from mlassets.core.features.store import BRANCH, export_splits
from mlassets.core.train.checkpoint.files import verify
from mlassets.core.train.job import TrainJob, train_command  # noqa: F401 (its callers read it here)
from mlassets.core.train.outcome import clear_outcome
from mlassets.core.train.result import CheckpointSet, Provenance, TrainingResult


def prepare_job(store: VersionedStore, cfg: PipelineConfig, data_version: str, out_dir: Path,
                config: dict[str, Any] | None = None, init_bundle: str = "", warm_start_from: str = "",
                force_budget: bool = False) -> Path:
    """Export the train and validation splits next to a job file; return the job file's path. What an earlier attempt
    in ``out_dir`` left of its outcome is cleared: the new attempt ends on its own.

    ``config``: the config as recorded (a rebuild), when it should be handed on exactly as it was stored.
    ``init_bundle``/``warm_start_from``: a warm start from that registered version's bundle.
    """
    files = export_splits(store, cfg, data_version, out_dir / "data", ("train", "validation"))
    job = TrainJob(
        config=config if config is not None else cfg.to_dict(),
        train_path=str(files["train"]),
        validation_path=str(files["validation"]),
        out_dir=str(out_dir),
        data_version=data_version,
        init_bundle=init_bundle,
        warm_start_from=warm_start_from,
        force_budget=force_budget,
    )
    path = out_dir / "job.json"
    job.to_json(path)
    clear_outcome(out_dir)
    return path


def provenance(cfg: PipelineConfig, result: TrainingResult, store_backend: str, mlflow_run_id: str,
               warm_start_from: str = "", native_model_uri: str = "") -> Provenance:
    """How a candidate was made: the reproducibility part of its registry record."""
    return Provenance(
        dataset=cfg.dataset.name, data_commit=result.data_version, source=cfg.dataset.source,
        store_backend=store_backend, git_sha=lineage.git_sha(), git_dirty=lineage.git_dirty(),
        config_hash=cfg.config_hash(), lock_hash=lineage.lock_hash(), seed=result.seed,
        environment=result.environment, weights_sha256=result.weights_sha256, mlflow_run_id=mlflow_run_id,
        image_digest=os.environ.get("MLASSETS_IMAGE_DIGEST", ""), warm_start_from=warm_start_from,
        owners=list(cfg.automation.owners), family=result.family, plugin=result.model_code.get("plugin", ""),
        plugin_sha256=result.model_code.get("plugin_sha256", ""), native_model_uri=native_model_uri,
    )


def node_args(nnodes: int, nproc: int, endpoint: str, rdzv_id: str, node_rank: int | None = None,
              is_host: bool | None = None) -> list[str]:
    """torchrun's arguments for one node of ``nnodes`` meeting at ``endpoint`` (host:port) by c10d rendezvous; the
    same on every node (the k8s manifests, the README, the two-node test). ``node_rank``/``is_host`` pin what the
    rendezvous would otherwise decide (which node hosts the store; on one machine both would think they are it)."""
    args = [f"--nnodes={nnodes}", f"--nproc-per-node={nproc}", "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}",
            f"--rdzv-id={rdzv_id}", "--max-restarts=0"]
    if node_rank is not None:
        args.append(f"--node-rank={node_rank}")
    if is_host is not None:
        args.append(f"--rdzv-conf=is_host={str(is_host).lower()}")
    return args


def node_command(job_path: Path, nnodes: int, nproc: int, endpoint: str, rdzv_id: str, node_rank: int | None = None,
                 is_host: bool | None = None) -> list[str]:
    """The command one node runs to train ``job_path`` across ``nnodes`` nodes (see ``node_args``)."""
    script = Path(sys.executable).with_name("torchrun")
    launcher = [str(script)] if script.is_file() else [sys.executable, "-m", "torch.distributed.run"]
    return [*launcher, *node_args(nnodes, nproc, endpoint, rdzv_id, node_rank, is_host),
            "-m", "mlassets.core.train", "--job", str(job_path)]


def commit_checkpoints(store: VersionedStore, cfg: PipelineConfig, run_key: str, result: TrainingResult,
                       working_area: Path) -> CheckpointSet:
    """Commit the final and the best checkpoint to the derived repository (never the watched branch).

    Each is checked against its manifest first.
    """
    repo = derived_repo(cfg)
    store.create_repo(repo, default_branch=BRANCH)
    changes: dict[str, bytes | None] = {}
    prefixes, names = {}, {}
    for kind, path in (("final", result.final_checkpoint), ("best", result.best_checkpoint)):
        if path is None:
            raise ValueError(f"training result of {result.data_version[:12]} names no {kind} checkpoint")
        directory = Path(path)
        verify(directory)
        prefixes[kind], names[kind] = f"checkpoints/{result.data_version}/{run_key}/{kind}", directory.name
        for file in sorted(directory.iterdir()):
            changes[f"{prefixes[kind]}/{file.name}"] = file.read_bytes()
    meta = {"data_version": result.data_version, "run": run_key, **names}
    commit = store.commit(repo, BRANCH, changes, f"Checkpoints of {result.data_version[:12]} (run {run_key})", meta)
    return CheckpointSet(commit=commit.id, final_uri=store.uri(repo, commit.id, prefixes["final"]),
                         best_uri=store.uri(repo, commit.id, prefixes["best"]), working_area=str(working_area))
