"""Score the candidate and the champion on the same holdout rows, through each one's own preprocessing."""

from __future__ import annotations

import tempfile
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd

from mlassets.core.artifact import ModelBundle
from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate import Evaluation, evaluate_models
from mlassets.core.gate import GateResult, evaluate_gate

PREDICTIONS = "predictions.parquet"


def score_holdout(
    holdout: pd.DataFrame, cfg: PipelineConfig, candidate: ModelBundle, champion: ModelBundle | None
) -> pd.DataFrame:
    """One row per holdout row: slice columns, the target, and each model's prediction."""
    frame = holdout[cfg.dataset.slices].astype(str).copy()
    frame["y"] = holdout[cfg.dataset.target].to_numpy(dtype=np.float64)
    frame["candidate"] = candidate.predict(holdout)
    frame["champion"] = champion.predict(holdout) if champion is not None else np.nan
    return frame


def evaluation_of(predictions: pd.DataFrame, cfg: PipelineConfig) -> Evaluation:
    champion = predictions["champion"].to_numpy()
    has_champion = not np.isnan(champion).all()
    return evaluate_models(
        predictions, predictions["y"].to_numpy(), predictions["candidate"].to_numpy(),
        champion if has_champion else None, cfg.dataset.slices,
    )


def gate_of(predictions: pd.DataFrame, cfg: PipelineConfig) -> GateResult:
    champion = predictions["champion"].to_numpy()
    return evaluate_gate(
        cfg.gate, predictions["y"].to_numpy(), predictions["candidate"].to_numpy(),
        None if np.isnan(champion).all() else champion, predictions, cfg.dataset.slices, seed=cfg.training.seed,
    )


def log_predictions(predictions: pd.DataFrame, artifact_path: str) -> str:
    """Store the scored holdout in the active MLflow run; return its artifact URI."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / PREDICTIONS
        predictions.to_parquet(path, index=False)
        mlflow.log_artifact(str(path), artifact_path=artifact_path)
    return f"{mlflow.get_artifact_uri(artifact_path)}/{PREDICTIONS}"


def load_predictions(uri: str) -> pd.DataFrame:
    return pd.read_parquet(mlflow.artifacts.download_artifacts(artifact_uri=uri))
