"""What a task trains on and how its validation is scored: losses, and the validation metric per task.

The validation metric is the evaluation's own (``metric_defs``): MAE of the predictions in target units, or the log
loss of the logits. Torch-free: the boosted trees score their validation split with the same ``validation_metric``
as the network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlassets.core.metric_defs import MeanSums, get_metric

if TYPE_CHECKING:
    import numpy as np

TORCH_LOSSES = {"l1": "L1Loss", "mse": "MSELoss", "huber": "HuberLoss", "bce": "BCEWithLogitsLoss",
                "cross_entropy": "CrossEntropyLoss"}  # loss name -> torch.nn class
VAL_METRIC = {"regression": "mae", "binary": "logloss", "multiclass": "logloss"}  # lower is better
AUTO_LOSS = {"regression": "l1", "binary": "bce", "multiclass": "cross_entropy"}
TASK_LOSSES = {"regression": ("l1", "mse", "huber"), "binary": ("bce",), "multiclass": ("cross_entropy",)}


def resolve_loss(task: str, loss: str) -> str:
    """The loss a task trains with: ``auto`` is l1 (regression), bce on logits (binary), cross_entropy (multiclass)."""
    if task not in VAL_METRIC:
        raise ValueError(f"dataset.task: unknown task {task!r} (expected one of {', '.join(VAL_METRIC)})")
    if loss == "auto":
        return AUTO_LOSS[task]
    if loss not in TORCH_LOSSES:
        raise ValueError(f"training.loss: unknown loss {loss!r}")
    if loss not in TASK_LOSSES[task]:
        raise ValueError(f"training.loss: {loss!r} does not fit dataset.task {task!r}; use "
                         f"{', '.join(TASK_LOSSES[task])} (or auto)")
    return loss


def validation_metric(task: str, out: np.ndarray, y: np.ndarray, center: float, scale: float) -> float:
    """Lower is better, float64. Regression: MAE in target units (``out`` standardized); binary: log loss from the
    logits; multiclass: log loss from the logits [n, k] and class indices."""
    return validation_value(task, MeanSums.of(validation_losses(task, out, y, center, scale)))


def validation_losses(task: str, out: np.ndarray, y: np.ndarray, center: float, scale: float) -> np.ndarray:
    """Each row's value of ``VAL_METRIC[task]`` (float64): a split scored in chunks sums these, holding no rows."""
    metric = get_metric(VAL_METRIC[task])
    if task == "regression":
        return metric.loss(y, out * scale + center)
    return metric.logit_rows(y, out)


def validation_value(task: str, sums: MeanSums) -> float:
    """The validation metric of the merged sums of ``validation_losses`` (NaN for no rows)."""
    return get_metric(VAL_METRIC[task]).value(sums)
