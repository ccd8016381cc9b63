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
from mlassets.core.evaluate.metrics import slice_groups
from mlassets.core.evaluate.record import ClassRow, Evaluation, PredictionStats, grouped_slice_rows

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mlassets.core.evaluate.derived import Derived

ROW_METRICS = ("logloss", "accuracy")  # means of per-row values: the ones a slice rule and its bootstrap can use


def _scored(prob: pd.DataFrame, labels: list[str], y: np.ndarray) -> dict[str, Any]:
    """One model on the label space: probabilities, prediction, which classes it knows, per-row values."""
    import numpy as np

    matrix = mc.on_labels(prob, labels)
    known = np.isin(np.asarray(labels, dtype=object), [str(c) for c in prob.columns])
    pred = mc.predicted(matrix, known)
    return {"prob": matrix, "pred": pred, "known": known,
            "rows": {"logloss": mc.log_losses(y, matrix), "accuracy": mc.hits(y, pred)}}


def _stats(prob: pd.DataFrame) -> PredictionStats:
    import numpy as np

    s = mc.distribution_stats(prob.to_numpy(dtype=np.float64))
    return PredictionStats(n=len(prob), non_finite=s["non_finite"], outside_range=s["outside_range"], range_min=0.0,
                           range_max=1.0, seen_min=s["seen_min"], seen_max=s["seen_max"],
                           sum_not_one=s["sum_not_one"], max_sum_error=s["max_sum_error"])


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
    probabilities per class the model knows (named by the class), ``frame`` the slice columns."""
    import numpy as np
    import pandas as pd

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
    probs = {"candidate": prob_candidate, **({} if prob_champion is None else {"champion": prob_champion})}
    labels = mc.label_space(truth.astype(str).tolist(), *(p.columns for p in probs.values()))
    y = mc.true_index(truth.astype(str).tolist(), labels)
    models = {m: _scored(p, labels, y) for m, p in probs.items()}

    k = len(labels)
    groups = [(col, *slice_groups(frame, col)) for col in cfg.dataset.slices]
    extra = {col: {m: {"macro_f1": mc.macro_f1(mc.confusion(y, s["pred"], k, codes, len(names)))}
                   for m, s in models.items()} for col, codes, names, _ in groups}
    groups.append((target, y, labels, np.bincount(y, minlength=k)))  # a slice per true class
    slices = grouped_slice_rows(groups, {m: s["rows"] for m, s in models.items()}, cfg, extra)
    overall = {m: mc.model_metrics(y, s["prob"], s["known"]) for m, s in models.items()}
    return Evaluation(
        task="multiclass", main_metric=main, holdout_rows=len(y), candidate=overall["candidate"],
        champion=overall.get("champion"), slices=slices, predictions=_stats(prob_candidate),
        confidence=cfg.gate.confidence, champion_version=champion_version, data_version=data_version,
        calibration={m: mc.calibration(s["prob"], y, known=s["known"]) for m, s in models.items()},
        performance=dict(performance or {}), predictions_uri=predictions_uri,
        dropped_missing_target=dropped_missing_target,
        classes=class_rows(labels, {m: mc.confusion(y, s["pred"], k)[0] for m, s in models.items()},
                           {m: s["known"] for m, s in models.items()}),
        baseline=derived.baseline if derived else None, derived=list(derived.lines) if derived else [],
    )
