"""The gate's rules, each read off the evaluation record: value, limit, pass/fail and one plain sentence.

Here the sanity, main-metric and slice rules, and the result types; the budget rules are in ``gate_budget``.
``mlassets.core.evaluate.gate.RULES`` registers each with its config keys; ``evaluate_gate`` runs them. Nothing
here touches a prediction: every number was measured once, by the evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlassets.core.config import GateConfig
from mlassets.core.evaluate.record import Evaluation, SliceRow
from mlassets.core.metric_defs import Metric, get_metric
from mlassets.core.records import Record

MB = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class RuleResult(Record):
    name: str
    value: float
    limit: float
    passed: bool
    reason: str = ""
    bound: str = "max"  # the limit is a maximum (lower is better) or a minimum ("min": higher is better)
    note: str = ""  # a passing rule whose value is past its limit: why it passes (its interval), said beside it


@dataclass(frozen=True, kw_only=True)
class UnjudgedSlice(Record):
    """A slice value with too few holdout rows for the slice rule to judge it."""

    slice: str
    value: str
    n: int
    min_rows: int

    def describe(self) -> str:
        return f"{self.slice}={self.value} ({self.n} rows < {self.min_rows})"


def summarize_unjudged(unjudged: list[UnjudgedSlice], shown: int = 3) -> str:
    """One clause per slice column, however many values it has: ``46 values of city with 3-41 rows (e.g. abilene
    (12), ...)``; a single value is named as it is."""
    by_column: dict[str, list[UnjudgedSlice]] = {}
    for u in unjudged:
        by_column.setdefault(u.slice, []).append(u)
    parts = []
    for column, values in by_column.items():
        if len(values) == 1:
            parts.append(values[0].describe())
            continue
        ns = [v.n for v in values]
        examples = ", ".join(f"{v.value} ({v.n})" for v in sorted(values, key=lambda v: -v.n)[:shown])
        rows = f"{min(ns)} rows each" if min(ns) == max(ns) else f"{min(ns)}-{max(ns)} rows"
        parts.append(f"{len(values)} values of {column} with {rows} < {values[0].min_rows} (e.g. {examples})")
    return "; ".join(parts)


def rule(name: str, value: float, limit: float, passed: bool, reason: str, bound: str = "max",
         note: str = "") -> RuleResult:
    return RuleResult(name=name, value=float(value), limit=float(limit), passed=bool(passed),
                      reason="" if passed else reason, bound=bound, note=note if passed else "")


def unconfirmed(low: float, high: float, level: float | str) -> str:
    """Why a value past its limit passes: its interval does not lie wholly on the worse side."""
    level = level if isinstance(level, str) else f"{level * 100:g}%"
    return f"passed: past the limit, but its {level} interval [{pct(low)}, {pct(high)}] does not confirm it"


def pct(x: float, digits: int = 1) -> str:
    return f"{x * 100:+.{digits}f}%"


def limit_pct(x: float) -> str:
    return f"{x * 100:+g}%"


def sanity_rules(cfg: GateConfig, evaluation: Evaluation) -> list[RuleResult]:
    """Finite predictions inside the sanity range (``prediction_min`` / ``prediction_max``, which the evaluation
    counted against, so ``cfg`` is not read here); multiclass rows summing to 1."""
    s = evaluation.predictions
    rules = [rule("sanity_finite", s.non_finite, 0, s.non_finite == 0,
                  f"{s.non_finite} of {s.n} predictions are not finite (NaN or infinite)")]
    share = s.outside_range / s.n if s.n else 0.0
    rules.append(rule(
        "sanity_range", share, 0, share == 0,
        f"{s.outside_range} predictions ({share:.2%}) fall outside [{s.range_min:g}, {s.range_max:g}]; "
        f"predictions seen range from {s.seen_min:.2f} to {s.seen_max:.2f}",
    ))
    if evaluation.task == "multiclass":  # rows of class probabilities: each must sum to 1
        rules.append(rule("sanity_sum", s.sum_not_one, 0, s.sum_not_one == 0,
                          f"{s.sum_not_one} of {s.n} rows have class probabilities that do not sum to 1 (largest "
                          f"error {s.max_sum_error:.2g})"))
    return rules


def _unseen(evaluation: Evaluation) -> str:
    """Multiclass: the holdout rows of classes the candidate never saw (each costs -ln(1e-15) in log loss)."""
    rows = int(evaluation.candidate.get("unseen_class_rows", 0) or 0)
    names = [c.value for c in evaluation.classes if c.n and not c.candidate_knows]
    return (f"; {rows} holdout rows are of classes the candidate never saw in training ({', '.join(names)}), "
            "each scored as a wrong prediction with probability 1e-15") if rows else ""


def main_rules(cfg: GateConfig, evaluation: Evaluation) -> list[RuleResult]:
    """``main_metric`` against the champion, or for a first model ``absolute_main_metric`` / ``baseline_main_metric``
    (``main_rule``)."""
    return [main_rule(cfg, evaluation)]


def main_rule(cfg: GateConfig, evaluation: Evaluation) -> RuleResult:
    """Lower-is-better metrics: at most ``tolerance`` above the champion (or under ``absolute_max_metric``);
    higher-is-better ones (accuracy): at most ``tolerance`` below it (or at least ``absolute_min_metric``)."""
    import numpy as np

    metric = get_metric(cfg.main_metric)
    higher, bound = metric.higher_is_better, "min" if metric.higher_is_better else "max"
    value = evaluation.candidate.get(metric.name, np.nan)
    unseen = _unseen(evaluation)
    if evaluation.champion is None and (cfg.absolute_min_metric if higher else cfg.absolute_max_metric) is None:
        return baseline_rule(evaluation, metric, value, unseen)
    if evaluation.champion is None:
        limit = cfg.absolute_min_metric if higher else cfg.absolute_max_metric
        if not np.isfinite(value):
            return rule("absolute_main_metric", value, limit, False, f"candidate {metric.label} is not finite", bound)
        side = "below the absolute minimum" if higher else "above the absolute limit"
        return rule(
            "absolute_main_metric", value, limit, bool(value >= limit if higher else value <= limit),
            f"{metric.label} {metric.fmt(value)} is {side} {metric.fmt(limit)} for a first model (no champion)"
            f"{'; higher is better' if higher else ''}{unseen}", bound,
        )
    base = evaluation.champion.get(metric.name, np.nan)
    limit = base * (1 - cfg.tolerance if higher else 1 + cfg.tolerance)
    if not np.isfinite(value):
        return rule("main_metric", value, limit, False, f"candidate {metric.label} is not finite", bound)
    with np.errstate(invalid="ignore", divide="ignore"):
        change = value / base - 1 if base else float("inf")
    return rule(
        "main_metric", value, limit, bool(value >= limit if higher else value <= limit),
        f"{metric.label} {metric.fmt(value)} vs champion {metric.fmt(base)} "
        f"({pct(change)}, limit {limit_pct(-cfg.tolerance if higher else cfg.tolerance)}"
        f"{'; higher is better' if higher else ''}){unseen}", bound,
    )


def baseline_rule(evaluation: Evaluation, metric: Metric, value: float, unseen: str = "") -> RuleResult:
    """A first model without ``gate.absolute_max_metric`` (``absolute_min_metric`` for accuracy): better than the
    naive baseline on the same holdout."""
    import numpy as np

    higher, bound = metric.higher_is_better, "min" if metric.higher_is_better else "max"
    base = (evaluation.baseline or {}).get(metric.name, np.nan)
    if not np.isfinite(base):  # no baseline measured (no training target): only finiteness is judged
        return rule("baseline_main_metric", value, base, bool(np.isfinite(value)),
                    f"candidate {metric.label} is not finite", bound)
    key = "gate.absolute_min_metric" if higher else "gate.absolute_max_metric"
    return rule("baseline_main_metric", value, base, bool(value > base if higher else value < base),
                f"{metric.label} {metric.fmt(value)} does not beat the naive baseline's {metric.fmt(base)} on the "
                f"same holdout, for a first model (no champion; {key} sets a limit instead){unseen}", bound)


def bonferroni_note(confidence: float, level: float, judged: int) -> str:
    """`` (Bonferroni: 95% over 19 slices)`` after a corrected interval; nothing when uncorrected."""
    return "" if abs(level - confidence) < 1e-12 else f" (Bonferroni: {confidence * 100:g}% over {judged} slices)"


def slice_rule(cfg: GateConfig, row: SliceRow, confidence: float, note: str = "") -> RuleResult:
    """Fails only when the change is worse than ``slice_max_regression`` *and* its interval (at level
    ``confidence``; ``note`` says how it was corrected) lies entirely on the worse side of zero (above it for a loss,
    below it for accuracy)."""
    import numpy as np

    metric = get_metric(cfg.main_metric)
    higher = metric.higher_is_better
    level = f"{confidence * 100:.4g}%"
    name = f"slice {row.slice}={row.value}"
    worse = -row.change if higher else row.change
    regressed = worse > cfg.slice_max_regression  # NaN (undefined): not a regression
    confirmed = row.ci_high < 0 if higher else row.ci_low > 0
    passed = not regressed or not confirmed
    champion = (row.champion or {}).get(metric.name, np.nan)
    limit = -cfg.slice_max_regression if higher else cfg.slice_max_regression
    return rule(
        name, row.change, limit, passed,
        f"{name}: {metric.label} {metric.fmt(row.candidate[metric.name], True)} vs champion "
        f"{metric.fmt(champion, True)} ({pct(row.change)}, limit {limit_pct(limit)}"
        f"{'; higher is better' if higher else ''}; {row.n} rows); {level} interval [{pct(row.ci_low)}, "
        f"{pct(row.ci_high)}]{note}", "min" if higher else "max",
        unconfirmed(row.ci_low, row.ci_high, level) + note if regressed else "",
    )


def judged_slices(cfg: GateConfig, evaluation: Evaluation) -> tuple[list[SliceRow], list[UnjudgedSlice]]:
    """The slice rows judged (values of at least ``slice_min_rows`` rows, and a column's smaller values pooled:
    ``SliceRow.pooled``, when there are enough of them: ``slice_sums.POOL_MIN_ROWS``) and the small values of a column
    without a pooled row, listed as unjudged. Nothing without a champion."""
    if evaluation.champion is None:
        return [], []
    minimum = max(cfg.slice_min_rows, 1)
    judged = [r for r in evaluation.slices if r.n >= minimum or r.pooled]
    pooled = {r.slice for r in judged if r.pooled}
    unjudged = [UnjudgedSlice(slice=r.slice, value=r.value, n=r.n, min_rows=minimum)
                for r in evaluation.slices if r.n < minimum and r.slice not in pooled]
    return judged, unjudged


def slice_rules(cfg: GateConfig, evaluation: Evaluation) -> list[RuleResult]:
    """A rule per judged slice row (``judged_slices``), each interval at the evaluation's Bonferroni-corrected
    level."""
    judged, _ = judged_slices(cfg, evaluation)
    level = evaluation.slice_confidence or evaluation.confidence
    note = bonferroni_note(evaluation.confidence, level, len(judged))
    return [slice_rule(cfg, r, level, note) for r in judged]


def unjudged_rules(cfg: GateConfig, evaluation: Evaluation) -> list[RuleResult]:
    """``gate.small_slices`` (with a champion): ``pass`` lists the unjudged slices; ``hold`` keeps the candidate back
    for them."""
    if not evaluation.has_champion:
        return []
    _, unjudged = judged_slices(cfg, evaluation)
    listed = summarize_unjudged(unjudged)
    return [rule("unjudged_slices", len(unjudged), 0, cfg.small_slices == "pass" or not unjudged,
                 f"{len(unjudged)} slice value(s) have too few holdout rows to judge (gate.small_slices: hold): "
                 f"{listed}")]
