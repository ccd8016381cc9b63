"""Counts of a multiclass holdout kept by label id, chunk by chunk (``multiclass_sums``): labels get ids in the order
they are first seen (``LabelIds``) and every count is put on the sorted label space only at the end (``on_sorted``).

``ClassSums`` holds one model's overall numbers (log loss and hit sums, rows of classes it never saw, the (true,
predicted) counts, top-label calibration bins) and ``SliceConfusion`` one slice column's (true, predicted) counts per
value, for its macro-F1. They equal ``multiclass``'s functions of the same rows to float rounding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mlassets.core.evaluate import multiclass as mc
from mlassets.core.evaluate.calibration import DEFAULT_BINS, bin_sums, ece_of_table, report_of_table, table_of_sums
from mlassets.core.evaluate.metrics import slice_codes
from mlassets.core.metric_defs import TASK_METRICS, MeanSums, get_metric

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


class LabelIds:
    """Class labels in the order first seen, each with a fixed id; ``order()`` lists the ids in sorted label order."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._id: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.names)

    def ids(self, labels: Sequence[str]) -> np.ndarray:
        """The id of each label (new labels get the next ids)."""
        import numpy as np
        import pandas as pd

        codes, uniques = pd.factorize(pd.Series(labels, dtype=object))
        for label in uniques:
            if label not in self._id:
                self._id[label] = len(self.names)
                self.names.append(label)
        return np.array([self._id[u] for u in uniques], dtype=np.intp)[codes]

    def order(self) -> np.ndarray:
        import numpy as np

        return np.array(sorted(range(len(self.names)), key=self.names.__getitem__), dtype=np.intp)


def _grown(counts: np.ndarray, k: int) -> np.ndarray:
    """``[..., j, j]`` counts padded with zeros to ``[..., k, k]`` (labels seen since)."""
    import numpy as np

    pad = k - counts.shape[-1]
    return np.pad(counts, [(0, 0)] * (counts.ndim - 2) + [(0, pad), (0, pad)]) if pad else counts


def on_sorted(counts: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``[..., k, k]`` counts by label id, on the sorted label space."""
    counts = _grown(counts, len(order))
    return counts[..., order, :][..., order]


class ClassSums:
    """One model on the rows added: log loss and hit sums, rows of classes it never saw, (true, predicted) counts and
    top-label calibration bins; its classes are its probability columns."""

    def __init__(self, bins: int = DEFAULT_BINS) -> None:
        import numpy as np

        self.classes: list[str] | None = None
        self.class_ids = np.zeros(0, np.intp)
        self.n, self.unseen = 0, 0
        self.sums = {name: MeanSums() for name in TASK_METRICS["multiclass"]}  # log loss and hits
        self.confusion = np.zeros((0, 0), np.int64)
        self.bins = [np.zeros(bins, np.int64), np.zeros(bins), np.zeros(bins)]  # rows, sum confidence, sum hits

    def add(self, prob: pd.DataFrame, y: np.ndarray, ids: LabelIds) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """One chunk: the model's probabilities and each row's true label id; its per-row values and predictions."""
        import numpy as np

        columns = sorted(prob.columns, key=str)  # ties go to the first class in sorted order, as on the label space
        if self.classes is None:
            self.classes = [str(c) for c in columns]
            self.class_ids = ids.ids(self.classes)
        matrix = prob[columns].to_numpy(dtype=np.float64)
        local = np.full(len(ids), -1, np.intp)
        local[self.class_ids] = np.arange(len(self.class_ids))
        at, rows = local[y], np.arange(len(y))
        p_true = np.where(at >= 0, matrix[rows, np.maximum(at, 0)], 0.0)  # 0: a class the model never saw
        top = mc.predicted(matrix)
        pred = self.class_ids[top]
        values = {name: get_metric(name).class_rows(y, pred, p_true) for name in self.sums}
        self.n += len(y)
        self.sums = {name: sums + MeanSums.of(values[name]) for name, sums in self.sums.items()}
        self.unseen += int(np.sum(at < 0))
        k = len(ids)
        self.confusion = _grown(self.confusion, k) + np.bincount(y * k + pred, minlength=k * k).reshape(k, k)
        for total, part in zip(self.bins, bin_sums(values["accuracy"], matrix[rows, top], len(self.bins[0])),
                               strict=True):
            total += part
        return values, pred

    def metrics(self, order: np.ndarray) -> dict[str, float]:
        """What ``multiclass.model_metrics`` gives on every row added."""
        if not self.n:
            return {"logloss": math.nan, "accuracy": math.nan, "macro_f1": math.nan, "ece": math.nan, "n": 0.0,
                    "unseen_class_rows": 0.0}
        return {**{name: get_metric(name).value(sums) for name, sums in self.sums.items()},
                "macro_f1": float(mc.macro_f1(on_sorted(self.confusion, order)[None])[0]),
                "ece": ece_of_table(table_of_sums(*self.bins)), "n": float(self.n),
                "unseen_class_rows": float(self.unseen)}

    def calibration(self) -> dict[str, Any]:
        return report_of_table(table_of_sums(*self.bins))


class SliceConfusion:
    """One slice column's (true, predicted) counts per value and model: each value's macro-F1."""

    def __init__(self, models: list[str]) -> None:
        import numpy as np

        self.values: dict[str, int] = {}
        self.counts = {model: np.zeros((0, 0, 0), np.int64) for model in models}

    def add(self, values: pd.Series, y: np.ndarray, preds: dict[str, np.ndarray], k: int) -> None:
        import numpy as np

        codes, labels = slice_codes(values)
        for label in labels:
            self.values.setdefault(label, len(self.values))
        v = len(self.values)
        at = np.array([self.values[label] for label in labels], dtype=np.intp)[codes]
        for model, pred in preds.items():
            counts = _grown(self.counts[model], k)
            counts = np.pad(counts, [(0, v - counts.shape[0]), (0, 0), (0, 0)])
            counts += np.bincount((at * k + y) * k + pred, minlength=v * k * k).reshape(v, k, k)
            self.counts[model] = counts

    def macro_f1(self, order: np.ndarray) -> dict[str, dict[str, float]]:
        """``{model: {value: macro-F1}}``."""
        return {model: dict(zip(self.values, mc.macro_f1(on_sorted(counts, order)).tolist(), strict=True))
                for model, counts in self.counts.items()}
