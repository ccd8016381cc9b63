"""Probabilistic (binary) model quality: log loss, Brier score, expected calibration error, reliability.

The target is 0/1 and a model's prediction is its probability of 1. Calibration uses ``bins`` equal-width
bins on [0, 1] (a prediction of exactly 1.0 falls in the last bin); the expected calibration error is the
row-weighted mean over bins of ``|mean predicted - observed rate|``. Everything is a ``np.bincount``, so a
million rows take milliseconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


DEFAULT_BINS = 10
EPS = 1e-15  # probabilities are clipped to [EPS, 1 - EPS] for the log loss
RELIABILITY_COLUMNS = ["bin", "lower", "upper", "count", "mean_predicted", "observed_rate"]


def _arrays(y_true: Any, prob: Any) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    y = np.asarray(y_true, dtype=np.float64).reshape(-1)
    p = np.asarray(prob, dtype=np.float64).reshape(-1)
    if y.shape != p.shape:
        raise ValueError(f"y_true has {y.size} rows but the probabilities have {p.size}")
    return y, p


def log_losses(y_true: Any, prob: Any) -> np.ndarray:
    """Per-row log loss ``-(y log p + (1 - y) log(1 - p))`` with ``p`` clipped away from 0 and 1."""
    import numpy as np

    y, p = _arrays(y_true, prob)
    p = np.clip(p, EPS, 1.0 - EPS)  # NaN stays NaN: the sanity rule reports it
    return -(y * np.log(p) + (1.0 - y) * np.log1p(-p))


def _bin_index(p: np.ndarray, bins: int) -> np.ndarray:
    import numpy as np

    return np.clip(np.floor(np.nan_to_num(p, nan=0.0) * bins), 0, bins - 1).astype(np.intp)


def reliability_table(y_true: Any, prob: Any, bins: int = DEFAULT_BINS) -> pd.DataFrame:
    """One row per bin: ``bin``, ``lower``, ``upper``, ``count``, ``mean_predicted``, ``observed_rate``.

    Empty bins have NaN means; counts sum to the number of finite predictions.
    """
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    return table_of_sums(*bin_sums(*_arrays(y_true, prob), bins))


def bin_sums(y: np.ndarray, prob: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, sum of predictions and sum of targets per bin over the finite predictions (``table_of_sums`` adds
    them up chunk by chunk)."""
    import numpy as np

    keep = np.isfinite(prob)
    idx = _bin_index(prob[keep], bins)
    return (np.bincount(idx, minlength=bins), np.bincount(idx, weights=prob[keep], minlength=bins),
            np.bincount(idx, weights=y[keep], minlength=bins))


def table_of_sums(count: np.ndarray, sum_p: np.ndarray, sum_y: np.ndarray) -> pd.DataFrame:
    """The reliability table from rows, sum of predictions and sum of targets per bin."""
    import numpy as np
    import pandas as pd

    bins = len(count)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p = sum_p / count
        rate = sum_y / count
    edges = np.round(np.linspace(0.0, 1.0, bins + 1), 12)
    return pd.DataFrame({
        "bin": np.arange(bins, dtype=np.int64), "lower": edges[:-1], "upper": edges[1:],
        "count": count.astype(np.int64), "mean_predicted": mean_p, "observed_rate": rate,
    })


def ece_of_table(table: pd.DataFrame) -> float:
    """Expected calibration error of a reliability table (NaN when it holds no rows)."""
    import numpy as np

    count = table["count"].to_numpy(dtype=np.float64)
    total = count.sum()
    if total == 0:
        return float("nan")
    gap = np.abs(table["mean_predicted"].to_numpy() - table["observed_rate"].to_numpy())
    return float(np.sum(np.where(count > 0, gap, 0.0) * count) / total)


def expected_calibration_error(y_true: Any, prob: Any, bins: int = DEFAULT_BINS) -> float:
    """Row-weighted mean over equal-width bins of ``|mean predicted - observed rate|``."""
    return ece_of_table(reliability_table(y_true, prob, bins))


def binary_metrics(y_true: Any, prob: Any, bins: int = DEFAULT_BINS) -> dict[str, float]:
    """``logloss``, ``brier``, ``ece``, ``mean_predicted``, ``positive_rate`` and ``n`` (as a float)."""
    import numpy as np

    y, p = _arrays(y_true, prob)
    if y.size == 0:
        nan = float("nan")
        return {"logloss": nan, "brier": nan, "ece": nan, "mean_predicted": nan, "positive_rate": nan, "n": 0.0}
    return {
        "logloss": float(np.mean(log_losses(y, p))),
        "brier": float(np.mean((p - y) ** 2)),
        "ece": expected_calibration_error(y, p, bins),
        "mean_predicted": float(np.mean(p)),
        "positive_rate": float(np.mean(y)),
        "n": float(y.size),
    }


def calibration_report(y_true: Any, prob: Any, bins: int = DEFAULT_BINS) -> dict[str, Any]:
    """JSON-ready ``{"ece": float, "bins": int, "table": [records]}`` for one model."""
    return report_of_table(reliability_table(y_true, prob, bins))


def report_of_table(table: pd.DataFrame) -> dict[str, Any]:
    """``calibration_report`` of a reliability table."""
    import numpy as np

    records = [
        {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
        for row in table.to_dict(orient="records")
    ]
    return {"ece": ece_of_table(table), "bins": len(table), "table": records}
