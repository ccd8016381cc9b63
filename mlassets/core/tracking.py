"""MLflow set-up shared by every stage: the tracking store, the experiment, and a training run's params and curves."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import mlflow

from mlassets.core import paths

EXPERIMENT = "mlassets"
CONFIG_ARTIFACT = "config/pipeline.json"  # the full recorded config of a training run (rebuild reads it)


def configure(tracking_uri: str | None = None, experiment: str = EXPERIMENT) -> str:
    """Point MLflow at the tracking store and make ``experiment`` (artifacts under the home) the active one.

    Never leave runs to MLflow's default experiment: with a sqlite store its artifacts go to ``./mlruns``.
    """
    mlflow.set_tracking_uri(tracking_uri or paths.mlflow_tracking_uri())
    existing = mlflow.get_experiment_by_name(experiment)
    if existing is None:
        try:
            mlflow.create_experiment(experiment, artifact_location=paths.mlflow_artifact_root())
        except mlflow.exceptions.MlflowException:  # created concurrently
            pass
    return mlflow.set_experiment(experiment).experiment_id


def flatten(prefix: str, value: Any) -> dict[str, str]:
    """Nested config -> ``{"training.lr": "0.003", ...}`` for ``log_params``."""
    if isinstance(value, Mapping):
        out: dict[str, str] = {}
        for key, inner in value.items():
            out.update(flatten(f"{prefix}.{key}" if prefix else str(key), inner))
        return out
    text = json.dumps(value) if isinstance(value, list | dict) else str(value)
    return {prefix: text[:6000]}


def log_training(config: Mapping[str, Any], metric_name: str, best: float, train_seconds: float,
                 curves: Sequence[Mapping[str, float]] = ()) -> None:
    """Params (and the whole config as JSON), per-epoch curves and the best validation metric into the active run.

    ``metric_name`` is ``mae`` (regression) or ``logloss`` (binary): logged as ``val_<name>`` and ``best_val_<name>``.
    """
    mlflow.log_dict(dict(config), CONFIG_ARTIFACT)
    params = flatten("", config)
    for chunk_start in range(0, len(params), 100):
        mlflow.log_params(dict(list(params.items())[chunk_start : chunk_start + 100]))
    name = f"val_{metric_name}"
    for point in curves:
        mlflow.log_metrics({"train_loss": point["train_loss"], name: point["val_metric"]}, step=int(point["epoch"]))
    mlflow.log_metrics({f"best_{name}": float(best), "train_seconds": float(train_seconds)})
