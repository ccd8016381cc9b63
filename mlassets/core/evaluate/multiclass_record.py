"""The evaluation record of a multiclass task: both models' class probabilities on the same holdout rows.

Overall metrics and the top-label calibration per model (``multiclass`` defines them), a slice row per value of
every configured slice column (log loss, accuracy, macro-F1) and per true class (the slice named after the target:
log loss and accuracy, which on one class's rows is its recall), each with the main metric's change and its
paired bootstrap interval, a ``ClassRow`` per class (precision, recall, F1, rows predicted), and the sanity counts
of the candidate's probabilities. A holdout class that a model never saw is scored, counted and marked, never an
error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate import multiclass as mc
from mlassets.core.evaluate.record import ClassRow, Evaluation

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mlassets.core.evaluate.derived import Derived

ROW_METRICS = ("logloss", "accuracy")  # means of per-row values: the ones a slice rule and its bootstrap can use


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


def evaluate_multiclass(
    frame: pd.DataFrame, y_true: Any, prob_candidate: pd.DataFrame, prob_champion: pd.DataFrame | None,
    cfg: PipelineConfig, *, champion_version: str | None = None, data_version: str = "",
    performance: dict[str, dict[str, float]] | None = None, predictions_uri: str = "", dropped_missing_target: int = 0,
    derived: Derived | None = None,
) -> Evaluation:
    """Measure both models on the same rows: ``y_true`` holds the class labels, ``prob_<model>`` one column of
    probabilities per class the model knows (named by the class), ``frame`` the slice columns. The rows are one chunk
    of the streamed evaluation (``stream.evaluate_scored``)."""
    import pandas as pd

    from mlassets.core.evaluate.stream import evaluate_scored
    from mlassets.core.train.outputs import class_frame

    target, main = cfg.dataset.target, cfg.gate.main_metric
    truth = pd.Series(y_true, copy=False)
    if truth.isna().any():  # a metric of a missing target would blame the model
        raise ValueError(f"evaluation: {int(truth.isna().sum())} holdout rows have no value of the target "
                         f"{target!r}; set dataset.drop_missing_target: true (or fix the data)")
    for what, arr in (("prob_candidate", prob_candidate), ("prob_champion", prob_champion), ("frame", frame)):
        if arr is not None and len(arr) != len(truth):
            raise ValueError(f"{what} has {len(arr)} rows but y_true has {len(truth)}")
    if main not in ROW_METRICS:
        raise ValueError(f"gate.main_metric: {main!r} is not a multiclass gate metric ({', '.join(ROW_METRICS)})")
    parts = [pd.DataFrame({col: frame[col].to_numpy() for col in cfg.dataset.slices}),
             pd.DataFrame({"y": truth.to_numpy(dtype=object)})]
    for model, prob in (("candidate", prob_candidate), ("champion", prob_champion)):
        if prob is not None:
            parts.append(class_frame([str(c) for c in prob.columns], prob.to_numpy(dtype="float64"), model))
    scored = pd.concat(parts, axis=1)
    return evaluate_scored(scored, cfg, prob_champion is not None, derived=derived, performance=performance,
                           champion_version=champion_version, data_version=data_version,
                           predictions_uri=predictions_uri, dropped_missing_target=dropped_missing_target)
