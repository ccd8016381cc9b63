"""The promotion gate: may a candidate model replace the champion? It reads the evaluation record only.

Every rule is reported with its value, its limit and whether it passed, so a rejection always says why. Each is
registered once, in ``RULES``, with the names of its results, the ``GateConfig`` keys that set its limits and the
function that judges it (``gate_rules``, ``gate_budget``):

* ``sanity_finite`` / ``sanity_range``: predictions are finite and inside the configured range (multiclass: every
  class probability finite and in [0, 1]; ``sanity_sum``: each row's probabilities sum to 1);
* ``main_metric`` (with a champion): the candidate is at most ``tolerance`` worse overall in
  ``main_metric`` (``mae``/``rmse`` for regression, ``logloss``/``brier`` for binary models, ``logloss``/
  ``accuracy`` for multiclass ones); ``absolute_main_metric`` (first model): the candidate is under
  ``absolute_max_metric``; without one, ``baseline_main_metric``: it beats a naive baseline on the same holdout
  (``mlassets.core.evaluate.derived``, which also derives the sanity range when ``prediction_min`` /
  ``prediction_max`` are unset). Accuracy is higher-is-better: its limits are minimums (``bound: min``), "worse"
  is lower, and a first model must reach ``absolute_min_metric`` (or beat the baseline's accuracy);
* ``slice <col>=<value>`` (with a champion, slice values of at least ``slice_min_rows`` rows; multiclass also one
  slice per true class, named after the target), and ``slice <col>=(N values under M rows, pooled)``: a column's
  smaller values judged together when they reach ``slice_min_rows`` together: the candidate
  rejects only if its main metric on the slice is worse than the champion's by more than
  ``slice_max_regression`` *and* the paired bootstrap interval of the relative change lies entirely on the worse
  side of zero (``mlassets.core.evaluate.bootstrap`` says how it is resampled); the intervals are Bonferroni-
  corrected for the number of slices judged (``slice_sums``), so many slices do not reject a healthy model by chance;
* ``unjudged_slices`` (with a champion): the slice values too small to judge, even pooled, are listed in the result;
  ``gate.small_slices: hold`` keeps the candidate back while there are any;
* ``latency_vs_champion`` (with a champion, both timed interleaved in one process: fails only when the bootstrap
  interval of the single-row latency change lies entirely above ``latency_max_regression``), ``latency_budget``
  (the candidate's median of round medians vs ``latency_budget_ms``; a p99 is shown, never gated: it measures the
  machine's load as much as the model), ``model_size`` (MB vs ``max_size_mb``) and ``calibration_ece`` (binary
  models; multiclass: top-label, vs ``calibration_max_ece``), where the evaluation measured them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mlassets.core.config import GateConfig
from mlassets.core.evaluate.gate_budget import calibration_rules, latency_rules, size_rules
from mlassets.core.evaluate.gate_rules import (
    RuleResult,
    UnjudgedSlice,
    judged_slices,
    main_rules,
    sanity_rules,
    slice_rules,
    summarize_unjudged,
    unjudged_rules,
)
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.records import Record

__all__ = ["GENERAL_KEYS", "RULES", "GateResult", "GateRule", "RuleResult", "UnjudgedSlice", "evaluate_gate"]


@dataclass(frozen=True)
class GateRule:
    """One rule of the gate, registered once: the names its results carry (``slice`` for ``slice <col>=<value>``),
    the ``GateConfig`` keys that set its limits (read by ``judge``, or by the evaluation that measured what it
    judges), and ``judge``, which returns its results (none where nothing was measured for it)."""

    names: tuple[str, ...]
    keys: tuple[str, ...]
    judge: Callable[[GateConfig, Evaluation], list[RuleResult]]


RULES: tuple[GateRule, ...] = (  # in the order a gate result lists them
    GateRule(("sanity_finite", "sanity_range", "sanity_sum"), ("prediction_min", "prediction_max"), sanity_rules),
    GateRule(("main_metric", "absolute_main_metric", "baseline_main_metric"),
             ("tolerance", "absolute_max_metric", "absolute_min_metric"), main_rules),
    GateRule(("slice",), ("slice_min_rows", "slice_max_regression", "bootstrap_samples", "confidence"), slice_rules),
    GateRule(("unjudged_slices",), ("slice_min_rows", "small_slices"), unjudged_rules),
    GateRule(("latency_vs_champion", "latency_budget"), ("latency_max_regression", "latency_budget_ms"),
             latency_rules),
    GateRule(("model_size",), ("max_size_mb",), size_rules),
    GateRule(("calibration_ece",), ("calibration_max_ece",), calibration_rules),
)
GENERAL_KEYS = {  # the GateConfig keys of no one rule, and why
    "main_metric": "the metric the evaluation measured and every metric rule judges",
    "promotion": "what a passing version does next (the registry's promotion), not a rule",
    "latency_p99_ms": "the former name of latency_budget_ms, moved to it when the config is read",
}


@dataclass(frozen=True, kw_only=True)
class GateResult(Record):
    """The verdict, stored once (the ``gate_result`` asset); registry tags and metadata mirror it."""

    flat_in_tags = False  # one JSON tag in the registry record

    passed: bool
    has_champion: bool
    rules: list[RuleResult] = field(default_factory=list)
    unjudged: list[UnjudgedSlice] = field(default_factory=list)
    gated_against: str = "none"  # the champion version it was judged against ("none": a first model)
    dropped_missing_target: int = 0  # rows without a target left out of training and of this holdout

    def failures(self) -> list[RuleResult]:
        return [r for r in self.rules if not r.passed]

    def reasons(self) -> list[str]:
        return [r.reason for r in self.failures()]

    def summary(self) -> str:
        reasons = self.reasons()
        if self.passed or not reasons:
            text = "pass" if self.passed else "rejected"
        else:  # a verdict: "rejected", never "fail" (a view that says "failed" beside it would say it twice)
            more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
            text = f"rejected: {reasons[0]}{more}"
        if self.unjudged and self.passed:
            text += f"; not judged (too few rows): {summarize_unjudged(self.unjudged)}"
        if self.dropped_missing_target:
            text += f"; {self.dropped_missing_target} rows without a target were left out"
        return text


def evaluate_gate(cfg: GateConfig, evaluation: Evaluation) -> GateResult:
    """Run every registered rule (``RULES``) on the evaluation record; the candidate passes when all of them
    pass."""
    if evaluation.main_metric != cfg.main_metric:
        raise ValueError(f"the evaluation measured {evaluation.main_metric!r}, the gate judges {cfg.main_metric!r}")
    rules = [result for registered in RULES for result in registered.judge(cfg, evaluation)]
    _, unjudged = judged_slices(cfg, evaluation)
    return GateResult(passed=all(r.passed for r in rules), has_champion=evaluation.has_champion, rules=rules,
                      unjudged=unjudged, gated_against=evaluation.champion_version or "none",
                      dropped_missing_target=evaluation.dropped_missing_target)
