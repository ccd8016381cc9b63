"""The evaluation record of a multiclass task: both models' class probabilities on the same holdout rows.

Overall metrics and the top-label calibration per model (``multiclass`` defines them), a slice row per value of
every configured slice column (log loss, accuracy, macro-F1) and per true class (the slice named after the target:
log loss and accuracy, which on one class's rows is its recall), each with the main metric's change and its
paired bootstrap interval, a ``ClassRow`` per class (precision, recall, F1, rows predicted), and the sanity counts
of the candidate's probabilities. A holdout class that a model never saw is scored, counted and marked, never an
error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlassets.core.evaluate import multiclass as mc
from mlassets.core.evaluate.record import ClassRow
from mlassets.core.metric_defs import TASK_METRICS

if TYPE_CHECKING:
    import numpy as np


ROW_METRICS = TASK_METRICS["multiclass"]  # means of per-row values: the ones a slice rule and its bootstrap can use


def class_rows(labels: list[str], confusions: dict[str, np.ndarray], known: dict[str, np.ndarray]) -> list[ClassRow]:
    """A ``ClassRow`` per label from each model's ``[k, k]`` (true, predicted) counts on the label space and the
    classes it knows (the streamed record builds the same rows from its counts)."""
    support = confusions["candidate"].sum(axis=1)  # rows of each true class
    per = {m: mc.class_metrics(conf) for m, conf in confusions.items()}

    def of(model: str, i: int) -> dict[str, float] | None:
        return {name: float(v[i]) for name, v in per[model].items()} if model in per else None

    return [ClassRow(value=label, n=int(support[i]), candidate=of("candidate", i), champion=of("champion", i),
                     candidate_knows=bool(known["candidate"][i]),
                     champion_knows=bool(known["champion"][i]) if "champion" in known else None)
            for i, label in enumerate(labels)]
