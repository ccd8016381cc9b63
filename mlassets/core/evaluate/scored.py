"""Holdout rows scored at once (a frame of predictions, or the arrays of both models) evaluated as one chunk of the
streamed evaluation (``stream.evaluate_scored``): the same accumulators as a holdout read in batches, so a metric, a
slice row or an interval has one implementation. The Python API's entry points, and what tests build records with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate.metrics import as_array
from mlassets.core.evaluate.multiclass_record import ROW_METRICS
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.evaluate.score import has_champion
from mlassets.core.evaluate.stream import evaluate_scored

if TYPE_CHECKING:
    import pandas as pd

    from mlassets.core.evaluate.derived import Derived


def evaluation_of(
    predictions: pd.DataFrame, cfg: PipelineConfig, performance: dict[str, dict[str, float]] | None = None,
    **context: Any,
) -> Evaluation:
    """The evaluation record of a scored holdout (see ``score_holdout``), as one chunk of the streamed evaluation;
    ``performance`` is attached as measured and ``context`` (champion_version, data_version, predictions_uri,
    derived) is recorded as given."""
    return evaluate_scored(predictions, cfg, has_champion(predictions), performance=performance, **context)


def evaluate_models(
    frame: pd.DataFrame, y_true: Any, pred_candidate: Any, pred_champion: Any | None, cfg: PipelineConfig,
    *, champion_version: str | None = None, data_version: str = "",
    performance: dict[str, dict[str, float]] | None = None, predictions_uri: str = "", dropped_missing_target: int = 0,
    derived: Derived | None = None,
) -> Evaluation:
    """Measure both models on the same rows (``frame`` holds the slice columns); a regression or binary task (a
    multiclass one: ``evaluate_multiclass``). ``derived`` gives the sanity range and naive
    baseline where the config leaves them out (``mlassets.core.evaluate.derived``). The rows are one chunk of the
    streamed evaluation (``stream.evaluate_scored``)."""
    import numpy as np
    import pandas as pd

    if cfg.dataset.task == "multiclass":
        raise ValueError("evaluate_models scores one value per row; a multiclass task's class probabilities are "
                         "measured by mlassets.core.evaluate.scored.evaluate_multiclass")
    y, cand = as_array(y_true), as_array(pred_candidate)
    champ = None if pred_champion is None else as_array(pred_champion)
    if np.isnan(y).any():  # a metric of a missing target would be NaN, and the gate would blame the model
        raise ValueError(f"evaluation: {int(np.isnan(y).sum())} holdout rows have no value of the target "
                         f"{cfg.dataset.target!r}; set dataset.drop_missing_target: true (or fix the data)")
    for what, arr in (("pred_candidate", cand), ("pred_champion", champ), ("frame", frame)):
        if arr is not None and len(arr) != y.size:
            raise ValueError(f"{what} has {len(arr)} rows but y_true has {y.size}")
    scored = pd.DataFrame({col: frame[col].to_numpy() for col in cfg.dataset.slices})
    scored["y"], scored["candidate"] = y, cand
    scored["champion"] = champ if champ is not None else np.nan
    return evaluate_scored(scored, cfg, champ is not None, derived=derived, performance=performance,
                           champion_version=champion_version, data_version=data_version,
                           predictions_uri=predictions_uri, dropped_missing_target=dropped_missing_target)


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
