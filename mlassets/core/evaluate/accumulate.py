"""Overall metrics of a streamed holdout, added up chunk by chunk: sums and counts, never rows.

``ModelSums`` gives one model's ``model_metrics`` (regression: MAE, RMSE, bias; binary: log loss, Brier score, the
calibration bins and so the ECE) and ``PredictionSums`` the candidate's ``PredictionStats``; each holds a few numbers
(and ``DEFAULT_BINS`` calibration bins) whatever the number of rows. Each metric is its ``metric_defs`` definition
(per-row values, ``MeanSums``, finish), as in ``model_metrics``, which is the one-chunk case: the two agree to float
rounding (sums are added in another order).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from mlassets.core.evaluate.calibration import DEFAULT_BINS, bin_sums, ece_of_table, report_of_table, table_of_sums
from mlassets.core.evaluate.record import PredictionStats
from mlassets.core.metric_defs import OVERALL, MeanSums, row_metric

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


class ModelSums:
    """One model's overall metrics of a ``regression`` or ``binary`` task, from per-chunk sums of each metric's
    per-row values (``metric_defs.OVERALL``)."""

    def __init__(self, task: str, bins: int = DEFAULT_BINS) -> None:
        import numpy as np

        if task not in OVERALL:
            raise ValueError(f"streamed metrics need a regression or binary task, got {task!r}")
        self.task, self.n = task, 0
        self.sums = {name: MeanSums() for name in OVERALL[task]}
        self.bins = [np.zeros(bins, np.int64), np.zeros(bins), np.zeros(bins)]  # rows, sum p, sum y (binary)

    def add(self, y: np.ndarray, p: np.ndarray) -> None:
        self.n += int(y.size)
        for name, sums in self.sums.items():
            self.sums[name] = sums + MeanSums.of(row_metric(name).loss(y, p))
        if self.task == "binary":
            for total, part in zip(self.bins, bin_sums(y, p, len(self.bins[0])), strict=True):
                total += part

    def metrics(self) -> dict[str, float]:
        """What ``metrics.model_metrics`` gives on every row added."""
        means = {name: row_metric(name).value(sums) for name, sums in self.sums.items()}
        if self.task == "regression":
            return {**means, "n": float(self.n)}
        return {"logloss": means["logloss"], "brier": means["brier"], "ece": ece_of_table(self.table()),
                "mean_predicted": means["mean_predicted"], "positive_rate": means["positive_rate"],
                "n": float(self.n)}

    def table(self) -> pd.DataFrame:
        """The reliability table of the rows added (binary)."""
        return table_of_sums(*self.bins)

    def calibration(self) -> dict[str, Any]:
        """What ``calibration_report`` gives on every row added (binary)."""
        return report_of_table(self.table())


class PredictionSums:
    """The candidate's ``PredictionStats`` (non-finite, outside ``[low, high]``, range seen), chunk by chunk."""

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high
        self.n = self.non_finite = self.outside = 0
        self.seen_min, self.seen_max = math.inf, -math.inf

    def add(self, pred: np.ndarray) -> None:
        import numpy as np

        finite = np.isfinite(pred)
        self.n += int(pred.size)
        self.non_finite += int(pred.size - finite.sum())
        self.outside += int(((pred < self.low) | (pred > self.high)).sum())
        if finite.any():
            seen = pred[finite]
            self.seen_min, self.seen_max = min(self.seen_min, float(seen.min())), max(self.seen_max, float(seen.max()))

    def stats(self) -> PredictionStats:
        seen = self.n > self.non_finite
        return PredictionStats(n=self.n, non_finite=self.non_finite, outside_range=self.outside,
                               range_min=float(self.low), range_max=float(self.high),
                               seen_min=self.seen_min if seen else math.nan,
                               seen_max=self.seen_max if seen else math.nan)
