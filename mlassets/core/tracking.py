"""MLflow tracking on the embedded stack: one experiment, candidate models logged with their bundle."""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
import yaml
from mlflow.models import ModelSignature

from mlassets.core import paths
from mlassets.core.artifact import ModelBundle, load_bundle

EXPERIMENT = "mlassets"
CONFIG_ARTIFACT = "config/pipeline.json"  # the full recorded config of a training run (rebuild reads it)
PYFUNC_CODE = Path(__file__).with_name("mlflow_pyfunc.py")


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


def log_training(config: Mapping[str, Any], result: Mapping[str, Any]) -> None:
    """Params (and the whole config as JSON), per-epoch curves and final metrics into the active run."""
    mlflow.log_dict(dict(config), CONFIG_ARTIFACT)
    params = flatten("", config)
    for chunk_start in range(0, len(params), 100):
        mlflow.log_params(dict(list(params.items())[chunk_start : chunk_start + 100]))
    name = f"val_{result['val_metric_name']}"  # val_mae (regression) or val_logloss (binary)
    for point in result["curves"]:
        step = int(point["epoch"])
        mlflow.log_metrics({"train_loss": point["train_loss"], name: point["val_metric"]}, step=step)
    mlflow.log_metrics({f"best_{name}": float(result["val_metric"]), "train_seconds": result["train_seconds"]})


def pip_requirements() -> list[str]:
    import pandas
    import torch

    torch_version = torch.__version__.split("+")[0]
    return [f"torch=={torch_version}", f"pandas=={pandas.__version__}", f"mlflow=={mlflow.__version__}"]


def signature_of(bundle: ModelBundle, rows: pd.DataFrame, n: int = 20) -> ModelSignature:
    """The model's input/output signature, inferred from a few raw rows and their predictions."""
    sample = rows[[*bundle.preprocessor.categorical, *bundle.preprocessor.numeric]].head(n).reset_index(drop=True)
    with warnings.catch_warnings():  # its hint on integer columns: the source's dtypes are fixed per column
        warnings.filterwarnings("ignore", message="Hint: Inferred schema contains integer")
        return mlflow.models.infer_signature(sample, bundle.predict(sample))


def log_model(bundle_dir: str | Path, rows: pd.DataFrame | None = None, name: str = "model") -> str:
    """Log a model bundle as an MLflow pyfunc model in the active run; return its model URI.

    With ``rows`` (raw feature rows) the model gets its input/output signature and an input example at once.
    """
    signature = example = None
    if rows is not None:
        bundle = load_bundle(bundle_dir)
        signature = signature_of(bundle, rows)
        example = rows[[*bundle.preprocessor.categorical, *bundle.preprocessor.numeric]].head(5)
    info = mlflow.pyfunc.log_model(
        name=name,
        python_model=str(PYFUNC_CODE),
        artifacts={"bundle": str(bundle_dir)},
        pip_requirements=pip_requirements(),
        signature=signature,
        input_example=example,
    )
    return info.model_uri


def bundle_path(model_uri: str) -> Path:
    """Local path of the bundle inside a logged model (downloaded if the store is remote)."""
    root = Path(mlflow.artifacts.download_artifacts(artifact_uri=model_uri))
    spec = yaml.safe_load((root / "MLmodel").read_text())
    return root / spec["flavors"]["python_function"]["artifacts"]["bundle"]["path"]
