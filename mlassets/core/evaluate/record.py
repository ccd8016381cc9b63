"""The evaluation record: candidate and champion measured once, on the same holdout rows.

Everything the gate judges is here, so the gate recomputes nothing: overall metrics of both models, one row
per slice value (its metrics, the relative change of the main metric and its paired bootstrap interval),
how many predictions are not finite or outside the configured range, latency and size, and calibration; for a
multiclass task also a row per class (``ClassRow``; ``multiclass_record`` builds that record).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate.bootstrap import GroupBootstrap, slice_intervals
from mlassets.core.evaluate.calibration import calibration_report
from mlassets.core.evaluate.metrics import (
    as_array,
    get_metric,
    model_metrics,
    slice_groups,
    slice_means,
    slice_metric_names,
)
from mlassets.core.records import Record

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mlassets.core.evaluate.derived import Derived

NAN = float("nan")


@dataclass(frozen=True, kw_only=True)
class SliceRow(Record):
    """One value of a slice column: rows, each model's metrics, and the main metric's change vs the champion."""

    slice: str
    value: str
    n: int
    candidate: dict[str, float]
    champion: dict[str, float] | None = None
    change: float = NAN  # candidate / champion - 1 in the main metric (NaN: no champion or undefined)
    ci_low: float = NAN  # paired bootstrap interval of ``change``
    ci_high: float = NAN


@dataclass(frozen=True, kw_only=True)
class ClassRow(Record):
    """One class of a multiclass task: its holdout rows and, per model, precision, recall, F1 and rows predicted."""

    value: str
    n: int  # holdout rows of this class
    candidate: dict[str, float]
    champion: dict[str, float] | None = None
    candidate_knows: bool = True  # the model was trained on this class (else it can never predict it)
    champion_knows: bool | None = None


@dataclass(frozen=True, kw_only=True)
class PredictionStats(Record):
    """What the sanity rules read: non-finite predictions and those outside the configured range (multiclass: rows,
    with a probability outside [0, 1], and rows whose probabilities do not sum to 1)."""

    n: int
    non_finite: int
    outside_range: int
    range_min: float
    range_max: float
    seen_min: float
    seen_max: float
    sum_not_one: int = 0  # multiclass only
    max_sum_error: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Evaluation(Record):
    """Candidate and champion on one holdout; the champion is the promotion log's live version."""

    task: str
    main_metric: str
    holdout_rows: int
    candidate: dict[str, float]
    champion: dict[str, float] | None
    slices: list[SliceRow]
    predictions: PredictionStats
    confidence: float  # of the slice intervals
    champion_version: str | None = None
    data_version: str = ""
    calibration: dict[str, Any] | None = None  # binary task: {"candidate": report, "champion": report}
    performance: dict[str, dict[str, float]] = field(default_factory=dict)  # per model: latency and size
    predictions_uri: str = ""  # the scored holdout rows (MLflow artifact)
    dropped_missing_target: int = 0  # rows of the version without a target, dropped before the split
    classes: list[ClassRow] = field(default_factory=list)  # multiclass: one row per class, in label order
    baseline: dict[str, float] | None = None  # a naive model's metrics on this holdout (a first model beats it)
    derived: list[str] = field(default_factory=list)  # thresholds derived from the data, one sentence each

    @property
    def has_champion(self) -> bool:
        return self.champion is not None

    def slice_frame(self) -> pd.DataFrame:
        """The slice rows as a table (``<model>_<metric>`` columns), for display and MLflow."""
        import pandas as pd

        records = []
        for row in self.slices:
            rec: dict[str, Any] = {"slice": row.slice, "value": row.value, "n": row.n}
            rec.update({f"candidate_{k}": v for k, v in row.candidate.items()})
            rec.update({f"champion_{k}": v for k, v in (row.champion or {}).items()})
            rec.update({"change": row.change, "ci_low": row.ci_low, "ci_high": row.ci_high})
            records.append(rec)
        return pd.DataFrame.from_records(records, columns=None if records else ["slice", "value", "n"])

    def class_frame(self) -> pd.DataFrame:
        """The class rows (multiclass) as a table: class, rows, ``<model>_knows`` and ``<model>_<metric>`` columns."""
        import pandas as pd

        records = []
        for row in self.classes:
            rec: dict[str, Any] = {"class": row.value, "n": row.n, "candidate_knows": row.candidate_knows}
            rec.update({f"candidate_{k}": v for k, v in row.candidate.items()})
            if row.champion is not None:
                rec["champion_knows"] = bool(row.champion_knows)
                rec.update({f"champion_{k}": v for k, v in row.champion.items()})
            records.append(rec)
        return pd.DataFrame.from_records(records, columns=None if records else ["class", "n"])


def prediction_stats(pred: np.ndarray, low: float, high: float) -> PredictionStats:
    import numpy as np

    finite = np.isfinite(pred)
    seen = pred[finite]
    outside = (pred < low) | (pred > high)
    return PredictionStats(
        n=int(pred.size), non_finite=int(pred.size - finite.sum()), outside_range=int(outside.sum()),
        range_min=float(low), range_max=float(high),
        seen_min=float(seen.min()) if seen.size else NAN, seen_max=float(seen.max()) if seen.size else NAN,
    )


def slice_rows(
    frame: pd.DataFrame, y: np.ndarray, cand: np.ndarray, champ: np.ndarray | None, cfg: PipelineConfig,
) -> list[SliceRow]:
    """One row per value of each slice column (config order, values sorted); intervals with a champion."""
    names = slice_metric_names(cfg.dataset.task, cfg.gate.main_metric)
    per_model = {"candidate": cand} if champ is None else {"candidate": cand, "champion": champ}
    losses = {model: {m: get_metric(m).loss(y, p) for m in names} for model, p in per_model.items()}
    return grouped_slice_rows([(col, *slice_groups(frame, col)) for col in cfg.dataset.slices], losses, cfg)


SliceGroups = tuple[str, "np.ndarray", list[str], "np.ndarray"]  # (slice name, code per row, labels, rows per label)


def grouped_slice_rows(
    groups: Sequence[SliceGroups], losses: dict[str, dict[str, np.ndarray]], cfg: PipelineConfig,
    extra: dict[str, dict[str, dict[str, np.ndarray]]] | None = None,
) -> list[SliceRow]:
    """The slice rows of each group from per-row values: ``losses[model][metric]`` (a metric is the mean of its
    per-row values, RMSE the root of one); ``extra[slice][model][metric]`` adds per-value metrics measured
    otherwise. The main metric's change gets its paired bootstrap interval when a champion is scored."""
    import numpy as np

    gate, main = cfg.gate, get_metric(cfg.gate.main_metric)
    champ = "champion" in losses
    grouped: GroupBootstrap | None = None
    rows: list[SliceRow] = []
    for col, codes, labels, counts in groups:
        values = {model: {m: slice_means(codes, len(labels), counts, get_metric(m), loss) for m, loss in per.items()}
                  for model, per in losses.items()}
        for model, more in (extra or {}).get(col, {}).items():
            values[model].update(more)
        change = lo = hi = np.full(len(labels), NAN)
        if champ:
            with np.errstate(invalid="ignore", divide="ignore"):
                change = values["candidate"][main.name] / values["champion"][main.name] - 1.0
            lo, hi, grouped = slice_intervals(col, labels, codes, counts, losses["candidate"][main.name],
                                              losses["champion"][main.name], gate.bootstrap_samples,
                                              gate.confidence, cfg.training.seed, main.root, grouped)
        for k in sorted((k for k in range(len(labels)) if counts[k] > 0), key=lambda i: labels[i]):
            rows.append(SliceRow(
                slice=col, value=labels[k], n=int(counts[k]),
                candidate={m: float(v[k]) for m, v in values["candidate"].items()},
                champion={m: float(v[k]) for m, v in values["champion"].items()} if champ else None,
                change=float(change[k]), ci_low=float(lo[k]), ci_high=float(hi[k]),
            ))
    return rows


def evaluate_models(
    frame: pd.DataFrame, y_true: Any, pred_candidate: Any, pred_champion: Any | None, cfg: PipelineConfig,
    *, champion_version: str | None = None, data_version: str = "",
    performance: dict[str, dict[str, float]] | None = None, predictions_uri: str = "", dropped_missing_target: int = 0,
    derived: Derived | None = None,
) -> Evaluation:
    """Measure both models on the same rows (``frame`` holds the slice columns); a regression or binary task (a
    multiclass one: ``multiclass_record.evaluate_multiclass``). ``derived`` gives the sanity range and naive
    baseline where the config leaves them out (``mlassets.core.evaluate.derived``)."""
    import numpy as np

    if cfg.dataset.task == "multiclass":
        raise ValueError("evaluate_models scores one value per row; a multiclass task's class probabilities are "
                         "measured by mlassets.core.evaluate.multiclass_record.evaluate_multiclass")
    y, cand = as_array(y_true), as_array(pred_candidate)
    champ = None if pred_champion is None else as_array(pred_champion)
    if np.isnan(y).any():  # a metric of a missing target would be NaN, and the gate would blame the model
        raise ValueError(f"evaluation: {int(np.isnan(y).sum())} holdout rows have no value of the target "
                         f"{cfg.dataset.target!r}; set dataset.drop_missing_target: true (or fix the data)")
    for what, arr in (("pred_candidate", cand), ("pred_champion", champ), ("frame", frame)):
        if arr is not None and len(arr) != y.size:
            raise ValueError(f"{what} has {len(arr)} rows but y_true has {y.size}")
    task = cfg.dataset.task
    calibration = None
    if task == "binary":
        calibration = {"candidate": calibration_report(y, cand)}
        if champ is not None:
            calibration["champion"] = calibration_report(y, champ)
    return Evaluation(
        task=task, main_metric=cfg.gate.main_metric, holdout_rows=int(y.size),
        candidate=model_metrics(task, y, cand), champion=None if champ is None else model_metrics(task, y, champ),
        slices=slice_rows(frame, y, cand, champ, cfg),
        predictions=prediction_stats(cand, *_prediction_range(cfg, derived)),
        confidence=cfg.gate.confidence, champion_version=champion_version, data_version=data_version,
        calibration=calibration, performance=dict(performance or {}), predictions_uri=predictions_uri,
        dropped_missing_target=dropped_missing_target, baseline=derived.baseline if derived else None,
        derived=list(derived.lines) if derived else [],
    )


def _prediction_range(cfg: PipelineConfig, derived: Derived | None) -> tuple[float, float]:
    """The configured sanity range, else the derived one, else unbounded."""
    low = cfg.gate.prediction_min if cfg.gate.prediction_min is not None else (
        derived.prediction_min if derived else -math.inf)
    high = cfg.gate.prediction_max if cfg.gate.prediction_max is not None else (
        derived.prediction_max if derived else math.inf)
    return low, high
