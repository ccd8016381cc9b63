"""Metrics of one model's predictions, overall and per slice value.

Pure numpy/pandas. Regression models get MAE/RMSE/bias; binary models (target 0/1, predictions are
P(1)) get log loss, Brier score and calibration; multiclass models are measured in ``multiclass``. Every
gate metric is a mean of a per-row value (RMSE: the root of one), so slice numbers are ``np.bincount`` sums
over factorized slice codes: a million rows with a hundred slice values take milliseconds. All are
lower-is-better losses except accuracy (the mean of per-row hits), which is higher-is-better.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlassets.core.evaluate.calibration import DEFAULT_BINS, binary_metrics
from mlassets.core.metric_defs import OVERALL, get_metric, row_metric

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


def as_array(values: Any) -> np.ndarray:
    """A 1-D float64 array from a list, Series or array."""
    import numpy as np

    arr = np.asarray(values, dtype=np.float64)
    return arr.reshape(-1)


def metric_value(name: str, y_true: Any, y_pred: Any) -> float:
    """One metric over all rows (NaN for no rows)."""
    y, p = as_array(y_true), as_array(y_pred)
    if y.shape != p.shape:
        raise ValueError(f"y_true has {y.size} rows but y_pred has {p.size}")
    return get_metric(name).of(y, p)


def regression_metrics(y_true: Any, y_pred: Any) -> dict[str, float]:
    """``mae``, ``rmse``, ``bias`` (mean of prediction - truth) and ``n`` (row count, as a float)."""
    y, p = as_array(y_true), as_array(y_pred)
    if y.shape != p.shape:
        raise ValueError(f"y_true has {y.size} rows but y_pred has {p.size}")
    return {**{name: row_metric(name).of(y, p) for name in OVERALL["regression"]}, "n": float(y.size)}


def model_metrics(task: str, y_true: Any, y_pred: Any, bins: int = DEFAULT_BINS) -> dict[str, float]:
    """The overall metrics of one model for a ``regression`` or ``binary`` task."""
    if task == "binary":
        return binary_metrics(y_true, y_pred, bins)
    if task == "regression":
        return regression_metrics(y_true, y_pred)
    raise ValueError(f"unknown task {task!r} (expected 'regression' or 'binary')")


def slice_codes(column: pd.Series | np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Integer codes per row and the string label of each code (missing values form a ``nan`` group).

    A categorical column's own codes are used (no hashing of a million strings); its unused categories
    are labels without rows.
    """
    import numpy as np
    import pandas as pd

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


def slice_metric_names(task: str, main_metric: str = "mae") -> list[str]:
    """The per-slice metrics of a task: the main metric always among them."""
    names = ["logloss", "brier"] if task == "binary" else ["mae"]
    return names if main_metric in names else [*names, main_metric]
