"""Where the embedded default stack keeps its state: ``$MLASSETS_HOME`` or ``./.mlassets``."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """The root of the embedded stack (created on first use)."""
    root = Path(os.environ.get("MLASSETS_HOME") or Path.cwd() / ".mlassets").resolve()
    root.mkdir(parents=True, exist_ok=True)
    return root


def dagster_home() -> Path:
    path = home() / "dagster"
    path.mkdir(parents=True, exist_ok=True)
    return path


def store_root() -> Path:
    return home() / "store"


def mlflow_tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{home() / 'mlflow.db'}"


def mlflow_artifact_root() -> str:
    return (home() / "mlartifacts").as_uri()


def work_dir(*parts: str) -> Path:
    """A scratch area for runs (training outputs, checkpoints); never versioned."""
    path = home().joinpath("work", *parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def records_root() -> Path:
    """Where the records that assets hand each other are kept (one JSON file per asset and partition)."""
    return Path(os.environ.get("MLASSETS_RECORDS") or home() / "records")
