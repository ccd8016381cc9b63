"""The evaluation record: candidate and champion measured once, on the same holdout rows.

Everything the gate judges is here, so the gate recomputes nothing: overall metrics of both models, one row
per slice value (its metrics, the relative change of the main metric and its paired bootstrap interval),
how many predictions are not finite or outside the configured range, latency and size, and calibration; for a
multiclass task also a row per class (``ClassRow``; ``multiclass_record`` builds that record).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlassets.core.config import PipelineConfig
from mlassets.core.records import Record

if TYPE_CHECKING:
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
    pooled: int = 0  # > 0: the column's values under ``gate.slice_min_rows`` rows, this many, judged as one slice


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
    confidence: float  # ``gate.confidence``: of the latency interval, and of all slice rules together
    slice_confidence: float | None = None  # each slice interval's level (Bonferroni; None: ``confidence``, old records)
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


def prediction_range(cfg: PipelineConfig, derived: Derived | None) -> tuple[float, float]:
    """The configured sanity range, else the derived one, else unbounded."""
    low = cfg.gate.prediction_min if cfg.gate.prediction_min is not None else (
        derived.prediction_min if derived else -math.inf)
    high = cfg.gate.prediction_max if cfg.gate.prediction_max is not None else (
        derived.prediction_max if derived else math.inf)
    return low, high
