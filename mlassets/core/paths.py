"""Where the embedded default stack keeps its state: ``$MLASSETS_HOME`` or ``./.mlassets``."""

from __future__ import annotations

import os
from pathlib import Path

from mlassets.core import settings


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
    """``$MLFLOW_TRACKING_URI``; embedded: sqlite in the home (production: the variable is required)."""
    return settings.service_env(settings.TRACKING_ENV) or f"sqlite:///{home() / 'mlflow.db'}"


def optuna_storage() -> str:
    """``$MLASSETS_OPTUNA_STORAGE`` (an RDB URL); embedded: sqlite in the home (production: it is required)."""
    return settings.service_env("MLASSETS_OPTUNA_STORAGE") or f"sqlite:///{home() / 'optuna.db'}"


def mlflow_artifact_root() -> str:
    """Where new experiments keep artifacts; "" in production with an MLflow server (the server decides)."""
    if settings.production():
        return settings.artifact_root()
    return (home() / "mlartifacts").as_uri()


def work_dir(*parts: str) -> Path:
    """A scratch area for runs (training outputs, checkpoints); never versioned."""
    path = home().joinpath("work", *parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def records_root() -> Path:
    """Where the records that assets hand each other are kept (one JSON file per asset and partition)."""
    return Path(os.environ.get("MLASSETS_RECORDS") or home() / "records")


def configs_dir() -> Path:
    """The dataset configs this embedded stack was used with (``mlassets demo``/``ingest`` register them here)."""
    return home() / "configs"
