"""The gate's rules, each read off the evaluation record: value, limit, pass/fail and one plain sentence.

``mlassets.core.evaluate.gate.evaluate_gate`` runs them; see its module for the list. Nothing here touches a
prediction: every number was measured once, by the evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlassets.core.config import GateConfig
from mlassets.core.evaluate.latency import loaded_host
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


def sanity_rules(evaluation: Evaluation) -> list[RuleResult]:
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


def slice_rules(cfg: GateConfig, evaluation: Evaluation) -> tuple[list[RuleResult], list[UnjudgedSlice]]:
    """A rule per slice value of at least ``slice_min_rows`` rows, and one per column for its smaller values pooled
    (``SliceRow.pooled``, when there are enough of them: ``slice_sums.POOL_MIN_ROWS``); the small values of a column
    without a pooled row are listed as unjudged. Each interval is at the evaluation's Bonferroni-corrected level."""
    if evaluation.champion is None:
        return [], []
    minimum = max(cfg.slice_min_rows, 1)
    judged = [r for r in evaluation.slices if r.n >= minimum or r.pooled]
    pooled = {r.slice for r in judged if r.pooled}
    level = evaluation.slice_confidence or evaluation.confidence
    note = bonferroni_note(evaluation.confidence, level, len(judged))
    rules = [slice_rule(cfg, r, level, note) for r in judged]
    unjudged = [UnjudgedSlice(slice=r.slice, value=r.value, n=r.n, min_rows=minimum)
                for r in evaluation.slices if r.n < minimum and r.slice not in pooled]
    return rules, unjudged


def unjudged_rule(cfg: GateConfig, unjudged: list[UnjudgedSlice]) -> RuleResult:
    """``gate.small_slices``: ``pass`` lists the unjudged slices; ``hold`` keeps the candidate back for them."""
    listed = summarize_unjudged(unjudged)
    return rule("unjudged_slices", len(unjudged), 0, cfg.small_slices == "pass" or not unjudged,
                f"{len(unjudged)} slice value(s) have too few holdout rows to judge (gate.small_slices: hold): "
                f"{listed}")


def latency_rules(cfg: GateConfig, perf: dict[str, float], confidence: float) -> list[RuleResult]:
    """``latency_vs_champion`` (timed interleaved with it: fails only when the whole interval of the change lies
    above ``latency_max_regression``) and ``latency_budget`` (the median of round medians, single row). Both are
    unjudged (passed, the note says why) when the process was on a CPU less than ``LOADED_CPU_SHARE`` of the time
    it timed the calls (``cpu_share``): the host's load, not the model, set those wall times."""
    rules, loaded = [], loaded_host(perf.get("cpu_share"))
    if "vs_champion_change" in perf:
        change, low, high = (float(perf[f"vs_champion_{k}"]) for k in ("change", "ci_low", "ci_high"))
        limit = cfg.latency_max_regression
        said = (f"single-row latency {1 + change:.2f}x the champion's ({pct(change)}, limit {limit_pct(limit)}), "
                f"timed side by side; {confidence * 100:g}% interval [{pct(low)}, {pct(high)}]")
        # a passing record says the change and its interval beside the verdict too: past the limit, it passes
        # because the interval is not wholly above it
        why = loaded or ("past the limit, but the interval is not wholly above it" if change > limit
                         else "within the limit")
        rules.append(rule("latency_vs_champion", change, limit, bool(loaded) or not low > limit, said,
                          note=f"passed ({why}): {said}"))
    if "single_median_ms" in perf:
        ms, budget, rounds = float(perf["single_median_ms"]), cfg.latency_budget_ms, int(perf.get("latency_rounds", 0))
        measured = f"single-row latency {ms:.1f} ms (median of {rounds} rounds' medians)"
        rules.append(rule("latency_budget", ms, budget, bool(loaded) or ms <= budget,
                          f"{measured} > budget {budget:g} ms", note=loaded and f"passed ({loaded}): {measured}, "
                          f"budget {budget:g} ms"))
    return rules


def budget_rules(cfg: GateConfig, evaluation: Evaluation) -> list[RuleResult]:
    """The latency rules, ``model_size`` and ``calibration_ece`` for the measurements that are present."""
    import numpy as np

    perf = evaluation.performance.get("candidate", {})
    rules = latency_rules(cfg, perf, evaluation.confidence)
    if "size_bytes" in perf:
        mb, budget = float(perf["size_bytes"]) / MB, cfg.max_size_mb
        rules.append(rule("model_size", mb, budget, bool(mb <= budget),
                          f"model size {mb:.2f} MB > budget {budget:g} MB"))
    report = (evaluation.calibration or {}).get("candidate")
    if evaluation.task in ("binary", "multiclass") and report is not None:  # multiclass: top-label ECE
        ece, limit = float(report["ece"]), cfg.calibration_max_ece
        reason = (f"calibration error (ECE) {ece:.3f} > limit {limit:g}" if np.isfinite(ece)
                  else "calibration error (ECE) is undefined (no finite predictions)")
        rules.append(rule("calibration_ece", ece, limit, bool(ece <= limit), reason))
    return rules
