"""What a task trains on and how its validation is scored: losses, and the validation metric per task."""

from __future__ import annotations

import numpy as np
from torch import nn

LOSSES = {"l1": nn.L1Loss, "mse": nn.MSELoss, "huber": nn.HuberLoss, "bce": nn.BCEWithLogitsLoss}
VAL_METRIC = {"regression": "mae", "binary": "logloss"}  # the validation metric per task (lower is better)


def resolve_loss(task: str, loss: str) -> str:
    """The loss a task trains with: ``auto`` is l1 for regression and bce (on logits) for binary."""
    if task not in VAL_METRIC:
        raise ValueError(f"dataset.task: unknown task {task!r} (expected 'regression' or 'binary')")
    if loss == "auto":
        return "bce" if task == "binary" else "l1"
    if loss not in LOSSES:
        raise ValueError(f"training.loss: unknown loss {loss!r}")
    if (loss == "bce") != (task == "binary"):
        fits = "bce (or auto)" if task == "binary" else "l1, mse, huber (or auto)"
        raise ValueError(f"training.loss: {loss!r} does not fit dataset.task {task!r}; use {fits}")
    return loss


def validation_metric(task: str, out: np.ndarray, y: np.ndarray, center: float, scale: float) -> float:
    """Lower is better. Regression: MAE in target units; binary: log loss from the logits (float64)."""
    if task == "binary":  # log(1 + e^z) - y z: exact for any logit z, no clipping
        return float(np.mean(np.logaddexp(0.0, out) - y * out))
    return float(np.mean(np.abs(out * scale + center - y)))
