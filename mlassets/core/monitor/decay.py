"""How fast a champion's accuracy decays with its age, and how often to retrain because of it.

A point is one evaluation that scored a champion on a later data version's holdout: the champion's main metric
there, and the model's age (days between the newest day of the data version it was trained on and the newest
day of the evaluated version; versions later where the dataset has no time column). Its change is relative to
the model's own evaluation (age 0: the holdout of its own version, where it was the candidate). A positive change
is always a loss: ``metric / base - 1`` for lower-is-better metrics, ``1 - metric / base`` for accuracy.

The recommendation fits one straight line ``change = a + b * age`` through every model's points (their own
evaluations included) and gives the largest age at which the line is still within ``monitoring.decay_tolerance``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlassets.core.records import Record

MIN_POINTS = 3  # later evaluations (age > 0) needed for a trend ...
MIN_AGES = 2  # ... at this many different ages


@dataclass(frozen=True, kw_only=True)
class DecayPoint(Record):
    """A champion's metric on one evaluated holdout, at an age."""

    model_version: str
    model_data_version: str  # the data version it was trained on
    data_version: str  # the evaluated one (the model's own for age 0)
    age: float
    metric: float
    change: float  # metric / metric at age 0 - 1 (higher-is-better metrics: 1 - metric / metric at age 0)
    within: bool  # change <= tolerance


@dataclass(frozen=True, kw_only=True)
class DecayReport(Record):
    """Every point per model, the fitted trend and the recommended retrain cadence."""

    metric: str
    age_unit: str  # days or versions
    tolerance: float
    points: list[DecayPoint]
    intercept: float | None  # of the trend (None: not enough data)
    slope: float | None  # change per unit of age
    cadence: float | None  # the largest age within tolerance by the trend (None: not enough data, or no decay)
    recommendation: str


def point(model_version: str, model_data_version: str, data_version: str, age: float, metric: float,
          base: float, tolerance: float, higher_is_better: bool = False) -> DecayPoint:
    """A point whose change is relative to ``base`` (the model's metric at its own evaluation); > 0 is worse."""
    change = (1.0 - metric / base if higher_is_better else metric / base - 1.0) if base else math.nan
    return DecayPoint(model_version=model_version, model_data_version=model_data_version, data_version=data_version,
                      age=float(age), metric=float(metric), change=float(change), within=bool(change <= tolerance))


def fit(points: list[DecayPoint]) -> tuple[float, float] | None:
    """``(intercept, slope)`` of the least-squares line through the points; None without enough later ones."""
    import numpy as np

    usable = [p for p in points if math.isfinite(p.change) and math.isfinite(p.age)]
    later = [p for p in usable if p.age > 0]
    if len(later) < MIN_POINTS or len({p.age for p in later}) < MIN_AGES:
        return None
    slope, intercept = np.polyfit([p.age for p in usable], [p.change for p in usable], 1)
    return float(intercept), float(slope)


def _age(value: float, unit: str) -> str:
    """``2 versions`` (whole versions, rounded down: "at least every" stays true), ``12.5 days``."""
    text = str(math.floor(value)) if unit == "versions" else f"{value:.1f}".removesuffix(".0")
    return f"{text} {unit[:-1] if text == '1' else unit}"


def decay_report(points: list[DecayPoint], metric: str, age_unit: str, tolerance: float) -> DecayReport:
    """The trend through ``points`` and one sentence that recommends a retrain cadence (or says why not)."""
    points = sorted(points, key=lambda p: (int(p.model_version) if p.model_version.isdigit() else 0,
                                           p.model_version, p.age))
    trend = fit(points)
    later = [p for p in points if p.age > 0]
    limit = f"within {tolerance:.0%} of its {metric.upper()} at its own evaluation"
    if trend is None:
        return DecayReport(metric=metric, age_unit=age_unit, tolerance=tolerance, points=points, intercept=None,
                           slope=None, cadence=None,
                           recommendation=f"not enough data: {len(later)} evaluation(s) of a champion on a later "
                                          f"version (a trend needs {MIN_POINTS} at {MIN_AGES} or more ages)")
    intercept, slope = trend
    oldest = max(p.age for p in later)
    if slope <= 0:
        text = (f"no decay seen: the champion's {metric.upper()} does not worsen with age up to "
                f"{_age(oldest, age_unit)} (trend {slope:+.2%} per {age_unit[:-1]}); retrain when drift says so, "
                f"or at least every {_age(oldest, age_unit)}")
        return DecayReport(metric=metric, age_unit=age_unit, tolerance=tolerance, points=points, intercept=intercept,
                           slope=slope, cadence=None, recommendation=text)
    cadence = max((tolerance - intercept) / slope, 0.0)
    beyond = f" (extrapolated: the oldest point is {_age(oldest, age_unit)})" if cadence > oldest else ""
    text = (f"retrain at least every {_age(cadence, age_unit)}: by the trend ({slope:+.2%} per {age_unit[:-1]}) "
            f"the champion stays {limit} until then{beyond}")
    return DecayReport(metric=metric, age_unit=age_unit, tolerance=tolerance, points=points, intercept=intercept,
                       slope=slope, cadence=cadence, recommendation=text)
