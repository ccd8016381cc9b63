"""Gate thresholds derived from the data where the config leaves them out, so a dataset needs no flights numbers.

* ``gate.absolute_max_metric`` unset: a first model (no champion) must beat a naive baseline on the same holdout:
  the training median for every row (MAE), the training mean (RMSE), the training base rate (log loss, Brier);
  multiclass (``absolute_min_metric`` for accuracy): the training class shares for every row (log loss), the most
  frequent training class (accuracy).
* ``gate.prediction_min`` / ``prediction_max`` unset: the sanity range is the training target's range widened by
  ``MARGIN`` of its width on each side (a binary model's outputs: [0, 1]).

Each derivation is said in one line (``Derived.lines``), kept in the evaluation record and printed by the commands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate.metrics import model_metrics
from mlassets.core.evaluate.train_target import TrainTarget, as_train_target
from mlassets.core.metric_defs import TASK_METRICS, MeanSums, get_metric

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

MARGIN = 0.5  # of the training target's width, on each side of its range


@dataclass(frozen=True)
class Derived:
    """What the evaluation uses where the config is silent: the sanity range and the naive baseline."""

    prediction_min: float
    prediction_max: float
    baseline: dict[str, float] | None = None  # the naive baseline's metrics on the holdout (no champion only)
    lines: list[str] = field(default_factory=list)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def naive_constant(cfg: PipelineConfig, train_y: np.ndarray | TrainTarget) -> tuple[float, str]:
    """The constant a naive model predicts for every row, and its name (of the finite training targets)."""
    stats = as_train_target(train_y)
    if cfg.dataset.task == "binary":
        return stats.mean, "the training base rate"
    if cfg.gate.main_metric == "rmse":
        return stats.mean, "the training mean"
    return stats.median, "the training median"


def baseline_constant(cfg: PipelineConfig, train_y: np.ndarray | TrainTarget) -> float | None:
    """What the naive baseline predicts for every row (``naive_constant`` of the finite training targets); None for
    a multiclass task or without training rows."""
    if cfg.dataset.task == "multiclass":
        return None
    stats = as_train_target(train_y)
    return naive_constant(cfg, stats)[0] if stats.n else None


def derive(cfg: PipelineConfig, train_y: np.ndarray | TrainTarget, holdout_y: np.ndarray | None,
           has_champion: bool, baseline_metrics: dict[str, float] | None = None) -> Derived:
    """The values of the unset keys for this version (configured ones are kept as given). ``train_y``: the training
    target, or (regression, binary) its ``TrainTarget`` (a streamed evaluation never holds the column).
    ``baseline_metrics``: the naive baseline's metrics accumulated over a streamed holdout (predicting
    ``baseline_constant``, or for a multiclass task ``naive_shares``), used instead of ``holdout_y``."""
    import numpy as np

    gate, lines = cfg.gate, []
    if cfg.dataset.task == "multiclass":
        return _derive_multiclass(cfg, train_y, holdout_y, has_champion, baseline_metrics)
    stats = as_train_target(train_y)
    low, high = gate.prediction_min, gate.prediction_max
    if low is None or high is None:
        if cfg.dataset.task == "binary":
            derived = (0.0, 1.0)
            what = "a probability"
        elif stats.n:
            lo, hi = stats.low, stats.high
            width = max(hi - lo, abs(hi), 1.0) if hi == lo else hi - lo
            derived = (lo - MARGIN * width, hi + MARGIN * width)
            what = f"the training target's [{_fmt(lo)}, {_fmt(hi)}] widened by {MARGIN:.0%} of its width"
        else:
            derived, what = (-np.inf, np.inf), "no training rows"
        declared = cfg.dataset.columns.get(cfg.dataset.target)  # the target's declared bounds hold the range in
        floor = max((b for b in (getattr(declared, "min", None), cfg.model.output_min) if b is not None), default=None)
        ceiling = getattr(declared, "max", None)
        if floor is not None and derived[0] < floor:
            derived = (float(floor), derived[1])
            what += f", floored at the target's declared minimum {_fmt(floor)}"
        if ceiling is not None and derived[1] > ceiling:
            derived = (derived[0], float(ceiling))
            what += f", capped at its declared maximum {_fmt(ceiling)}"
        low = derived[0] if low is None else low
        high = derived[1] if high is None else high
        lines.append(f"sanity range [{_fmt(low)}, {_fmt(high)}]: {what} (gate.prediction_min / prediction_max)")
    baseline = None
    if not has_champion and gate.absolute_max_metric is None and stats.n:
        value, name = naive_constant(cfg, stats)
        if baseline_metrics is not None:
            baseline = dict(baseline_metrics)
        else:
            y = np.asarray(holdout_y, dtype=np.float64)
            baseline = model_metrics(cfg.dataset.task, y, np.full(y.shape, value))
        metric = get_metric(gate.main_metric)
        lines.append(f"a first model must beat the naive baseline: {metric.label} {metric.fmt(baseline[metric.name])} "
                     f"on this holdout, predicting {name} ({_fmt(value)}) for every row (gate.absolute_max_metric)")
    return Derived(float(low), float(high), baseline, lines)


def naive_shares(cfg: PipelineConfig, train_y: np.ndarray, has_champion: bool) -> pd.Series | None:
    """The training class shares a naive multiclass model predicts for every row (most frequent first), when a first
    model must beat it; None with a champion, a configured threshold or no training rows."""
    import pandas as pd

    from mlassets.core.train.splits import class_label

    gate = cfg.gate
    limit = gate.absolute_min_metric if get_metric(gate.main_metric).higher_is_better else gate.absolute_max_metric
    train = pd.Series(train_y, dtype=object).dropna().map(class_label)
    if has_champion or limit is not None or train.empty:
        return None
    return train.value_counts(normalize=True)


def naive_class_rows(shares: pd.Series, truth: pd.Series) -> dict[str, np.ndarray]:
    """Per holdout row (its class label), the naive model's per-row values (``metric_defs``): its log loss (it gives
    each class its training share) and its hit (1.0: the most frequent class is the true one)."""
    import numpy as np

    y = truth.to_numpy()
    p_true = truth.map(shares).fillna(0.0).to_numpy(dtype=np.float64)
    pred = np.full(y.shape, shares.index[0], dtype=object)
    return {name: get_metric(name).class_rows(y, pred, p_true) for name in TASK_METRICS["multiclass"]}


def _derive_multiclass(cfg: PipelineConfig, train_y: np.ndarray, holdout_y: np.ndarray | None, has_champion: bool,
                       baseline_metrics: dict[str, float] | None = None) -> Derived:
    """Class probabilities are checked against [0, 1] whatever the config; the naive baseline predicts the
    training class shares (log loss) and the most frequent training class (accuracy)."""
    import pandas as pd

    from mlassets.core.train.splits import class_label

    shares = naive_shares(cfg, train_y, has_champion)
    if shares is None:
        return Derived(0.0, 1.0)
    if baseline_metrics is not None:
        baseline = dict(baseline_metrics)
    else:
        rows = naive_class_rows(shares, pd.Series(holdout_y, dtype=object).dropna().map(class_label))
        baseline = {name: get_metric(name).value(MeanSums.of(values)) for name, values in rows.items()}
    metric = get_metric(cfg.gate.main_metric)
    key = "gate.absolute_min_metric" if metric.higher_is_better else "gate.absolute_max_metric"
    return Derived(0.0, 1.0, baseline, [
        f"a first model must beat the naive baseline: {metric.label} {metric.fmt(baseline[metric.name])} on this "
        f"holdout, predicting the training class shares (most frequent: {shares.index[0]}) for every row ({key})"])
