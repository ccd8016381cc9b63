"""The gate's budget rules, each read off the evaluation's measurements of the candidate where it took them:
single-row latency (against the champion and against a budget), the saved model's size and its calibration."""

from __future__ import annotations

from mlassets.core.config import GateConfig
from mlassets.core.evaluate.gate_rules import MB, RuleResult, limit_pct, pct, rule
from mlassets.core.evaluate.latency import loaded_host
from mlassets.core.evaluate.record import Evaluation


def judge_latency(cfg: GateConfig, perf: dict[str, float], confidence: float) -> list[RuleResult]:
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


def latency_rules(cfg: GateConfig, evaluation: Evaluation) -> list[RuleResult]:
    """The latency rules on the candidate's timings, where the evaluation timed it (``judge_latency``)."""
    return judge_latency(cfg, evaluation.performance.get("candidate", {}), evaluation.confidence)


def size_rules(cfg: GateConfig, evaluation: Evaluation) -> list[RuleResult]:
    """``model_size``: the saved model's MB against ``max_size_mb``, where the evaluation measured it."""
    perf = evaluation.performance.get("candidate", {})
    if "size_bytes" not in perf:
        return []
    mb, budget = float(perf["size_bytes"]) / MB, cfg.max_size_mb
    return [rule("model_size", mb, budget, bool(mb <= budget), f"model size {mb:.2f} MB > budget {budget:g} MB")]


def calibration_rules(cfg: GateConfig, evaluation: Evaluation) -> list[RuleResult]:
    """``calibration_ece``: binary and multiclass models (multiclass: top-label ECE) against
    ``calibration_max_ece``, where the evaluation measured it."""
    import numpy as np

    report = (evaluation.calibration or {}).get("candidate")
    if evaluation.task not in ("binary", "multiclass") or report is None:
        return []
    ece, limit = float(report["ece"]), cfg.calibration_max_ece
    reason = (f"calibration error (ECE) {ece:.3f} > limit {limit:g}" if np.isfinite(ece)
              else "calibration error (ECE) is undefined (no finite predictions)")
    return [rule("calibration_ece", ece, limit, bool(ece <= limit), reason)]
