"""Metrics for a candidate model and the champion it may replace, overall and per slice.

Pure numpy/pandas. Regression models get MAE/RMSE/bias; binary models (target 0/1, predictions are
P(1)) get log loss, Brier score and calibration. Every metric is a mean of a per-row loss (RMSE: the
root of one), so slice numbers are ``np.bincount`` sums over factorized slice codes: a million rows with
a hundred slice values take milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mlassets.core.calibration import DEFAULT_BINS, binary_metrics, calibration_report, log_losses

SLICE_COLUMNS = ["slice", "value", "n"]


@dataclass(frozen=True)
class Metric:
    """A lower-is-better metric: ``finish(mean(loss(y, p)))``; ``digits`` for messages."""

    name: str
    label: str
    loss: Callable[[np.ndarray, np.ndarray], np.ndarray]
    root: bool = False  # the metric is the square root of the mean loss (RMSE)
    digits: int = 2
    slice_digits: int = 1

    def finish(self, mean: Any) -> Any:
        return np.sqrt(mean) if self.root else mean

    def fmt(self, value: float, for_slice: bool = False) -> str:
        return f"{value:.{self.slice_digits if for_slice else self.digits}f}"


def _abs_err(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    return np.abs(p - y)


def _sq_err(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    d = p - y
    return d * d


METRICS: dict[str, Metric] = {
    "mae": Metric("mae", "MAE", _abs_err),
    "rmse": Metric("rmse", "RMSE", _sq_err, root=True),
    "logloss": Metric("logloss", "log loss", log_losses, digits=4, slice_digits=4),
    "brier": Metric("brier", "Brier score", _sq_err, digits=4, slice_digits=4),
}


def get_metric(name: str) -> Metric:
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r} (known: {', '.join(METRICS)})")
    return METRICS[name]


def as_array(values: Any) -> np.ndarray:
    """A 1-D float64 array from a list, Series or array."""
    arr = np.asarray(values, dtype=np.float64)
    return arr.reshape(-1)


def metric_value(name: str, y_true: Any, y_pred: Any) -> float:
    """One metric over all rows (NaN for no rows)."""
    y, p = as_array(y_true), as_array(y_pred)
    if y.shape != p.shape:
        raise ValueError(f"y_true has {y.size} rows but y_pred has {p.size}")
    if y.size == 0:
        return float("nan")
    metric = get_metric(name)
    return float(metric.finish(np.mean(metric.loss(y, p))))


def regression_metrics(y_true: Any, y_pred: Any) -> dict[str, float]:
    """``mae``, ``rmse``, ``bias`` (mean of prediction - truth) and ``n`` (row count, as a float)."""
    y, p = as_array(y_true), as_array(y_pred)
    if y.shape != p.shape:
        raise ValueError(f"y_true has {y.size} rows but y_pred has {p.size}")
    if y.size == 0:
        nan = float("nan")
        return {"mae": nan, "rmse": nan, "bias": nan, "n": 0.0}
    err = p - y
    return {
        "mae": float(np.mean(np.abs(err))),
        "rmse": float(np.sqrt(np.mean(err * err))),
        "bias": float(np.mean(err)),
        "n": float(y.size),
    }


def model_metrics(task: str, y_true: Any, y_pred: Any, bins: int = DEFAULT_BINS) -> dict[str, float]:
    """The overall metrics of one model for a ``regression`` or ``binary`` task."""
    if task == "binary":
        return binary_metrics(y_true, y_pred, bins)
    if task == "regression":
        return regression_metrics(y_true, y_pred)
    raise ValueError(f"unknown task {task!r} (expected 'regression' or 'binary')")


def slice_groups(frame: pd.DataFrame, col: str) -> tuple[np.ndarray, list[str], np.ndarray]:
    """``(codes, labels, rows per label)`` of slice column ``col``; KeyError if the frame lacks it."""
    if col not in frame.columns:
        raise KeyError(f"slice column {col!r} is not in the frame")
    codes, labels = slice_codes(frame[col])
    return codes, labels, np.bincount(codes, minlength=len(labels))


def slice_codes(column: pd.Series | np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Integer codes per row and the string label of each code (missing values form a ``nan`` group).

    A categorical column's own codes are used (no hashing of a million strings); its unused categories
    are labels without rows.
    """
    series = pd.Series(column, copy=False)
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy().astype(np.intp)
        labels = [str(c) for c in series.cat.categories]
        if (codes < 0).any():
            codes[codes < 0] = len(labels)
            labels.append("nan")
        return codes, labels
    codes, uniques = pd.factorize(series, use_na_sentinel=False)
    return codes.astype(np.intp, copy=False), [str(u) for u in uniques]


def slice_table(
    frame: pd.DataFrame, y_true: Any, preds: dict[str, np.ndarray], slices: list[str],
    metrics: Sequence[str] = ("mae",),
) -> pd.DataFrame:
    """One row per (slice column, value): ``slice``, ``value`` (str), ``n``, ``<model>_<metric>``."""
    y = as_array(y_true)
    if len(frame) != y.size:
        raise ValueError(f"frame has {len(frame)} rows but y_true has {y.size}")
    losses: dict[str, tuple[Metric, np.ndarray]] = {}
    for name, pred in preds.items():
        p = as_array(pred)
        if p.size != y.size:
            raise ValueError(f"predictions {name!r} have {p.size} rows, expected {y.size}")
        for m in metrics:
            metric = get_metric(m)
            losses[f"{name}_{m}"] = (metric, metric.loss(y, p))
    parts = []
    for col in slices:
        codes, labels, counts = slice_groups(frame, col)
        part: dict[str, Any] = {"slice": col, "value": labels, "n": counts.astype(np.int64)}
        with np.errstate(invalid="ignore", divide="ignore"):
            for column, (metric, loss) in losses.items():
                part[column] = metric.finish(np.bincount(codes, weights=loss, minlength=len(labels)) / counts)
        parts.append(pd.DataFrame(part)[counts > 0])
    columns = SLICE_COLUMNS + list(losses)
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=_dtype(c)) for c in columns})
    table = pd.concat(parts, ignore_index=True)
    return table.sort_values(["slice", "value"], kind="stable").reset_index(drop=True)[columns]


def _dtype(column: str) -> str:
    return {"slice": "object", "value": "object", "n": "int64"}.get(column, "float64")


def _native(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def _floats(metrics: dict[str, Any] | None) -> dict[str, float] | None:
    return None if metrics is None else {k: float(v) for k, v in metrics.items()}


@dataclass
class Evaluation:
    candidate: dict[str, float]
    champion: dict[str, float] | None
    slices: pd.DataFrame
    task: str = "regression"
    # binary task: {"candidate": calibration_report, "champion": ...}
    calibration: dict[str, Any] | None = None
    # per model ("candidate", "champion"): latency (measure_latency) and size_bytes, where measured
    performance: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable form; ``slices`` is a list of records (NaN stays a float NaN)."""
        records = [
            {str(k): _native(v) for k, v in row.items()} for row in self.slices.to_dict(orient="records")
        ]
        return {
            "task": self.task,
            "candidate": _floats(self.candidate),
            "champion": _floats(self.champion),
            "slices": records,
            "slice_columns": [str(c) for c in self.slices.columns],
            "calibration": self.calibration,
            "performance": {m: _floats(v) for m, v in self.performance.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evaluation:
        columns = data.get("slice_columns")
        records = data.get("slices") or []
        if records:
            slices = pd.DataFrame.from_records(records, columns=columns)
        else:
            slices = pd.DataFrame({c: pd.Series(dtype=_dtype(c)) for c in (columns or SLICE_COLUMNS)})
        return cls(
            candidate=_floats(data["candidate"]) or {},
            champion=_floats(data.get("champion")),
            slices=slices,
            task=str(data.get("task", "regression")),
            calibration=data.get("calibration"),
            performance={m: _floats(v) or {} for m, v in (data.get("performance") or {}).items()},
        )


def slice_metric_names(task: str, main_metric: str = "mae") -> list[str]:
    """The per-slice metrics of a task: the main metric always among them."""
    names = ["logloss", "brier"] if task == "binary" else ["mae"]
    return names if main_metric in names else [*names, main_metric]


def evaluate_models(
    frame: pd.DataFrame,
    y_true: Any,
    pred_candidate: Any,
    pred_champion: np.ndarray | None,
    slices: list[str],
    task: str = "regression",
    main_metric: str = "mae",
    bins: int = DEFAULT_BINS,
) -> Evaluation:
    """Overall metrics for both models, the per-slice table and (binary) each model's calibration."""
    preds = {"candidate": as_array(pred_candidate)}
    if pred_champion is not None:
        preds["champion"] = as_array(pred_champion)
    calibration = None
    if task == "binary":
        calibration = {name: calibration_report(y_true, pred, bins) for name, pred in preds.items()}
    return Evaluation(
        candidate=model_metrics(task, y_true, preds["candidate"], bins),
        champion=None if pred_champion is None else model_metrics(task, y_true, preds["champion"], bins),
        slices=slice_table(frame, y_true, preds, slices, slice_metric_names(task, main_metric)),
        task=task,
        calibration=calibration,
    )
