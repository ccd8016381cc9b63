"""The gate's rules, each a ``RuleResult`` with value, limit, pass/fail and one plain sentence on failure.

``mlassets.core.gate.evaluate_gate`` runs them; see its module for the list.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mlassets.core.bootstrap import GROUPS, GroupBootstrap, bootstrap_relative_change, interval
from mlassets.core.config import GateConfig
from mlassets.core.evaluate import get_metric, metric_value, slice_groups

MB = 1024 * 1024


@dataclass
class RuleResult:
    name: str
    value: float
    limit: float
    passed: bool
    reason: str = ""


def rule(name: str, value: float, limit: float, passed: bool, reason: str) -> RuleResult:
    return RuleResult(name, float(value), float(limit), bool(passed), "" if passed else reason)


def pct(x: float, digits: int = 1) -> str:
    return f"{x * 100:+.{digits}f}%"


def limit_pct(x: float) -> str:
    return f"{x * 100:+g}%"


def sanity_rules(cfg: GateConfig, pred: np.ndarray) -> list[RuleResult]:
    finite = np.isfinite(pred)
    bad = int(pred.size - finite.sum())
    rules = [rule("sanity_finite", bad, 0, bad == 0,
                  f"{bad} of {pred.size} predictions are not finite (NaN or infinite)")]
    outside = (pred < cfg.prediction_min) | (pred > cfg.prediction_max)
    share = float(outside.mean()) if pred.size else 0.0
    seen = pred[finite]
    lo, hi = (float(seen.min()), float(seen.max())) if seen.size else (float("nan"), float("nan"))
    rules.append(rule(
        "sanity_range", share, 0, share == 0,
        f"{int(outside.sum())} predictions ({share:.2%}) fall outside "
        f"[{cfg.prediction_min:g}, {cfg.prediction_max:g}]; predictions seen range from {lo:.2f} to {hi:.2f}",
    ))
    return rules


def main_rule(cfg: GateConfig, y: np.ndarray, cand: np.ndarray, champ: np.ndarray | None) -> RuleResult:
    metric = get_metric(cfg.main_metric)
    value = metric_value(metric.name, y, cand)
    if champ is None:
        limit = cfg.absolute_max_metric
        if not np.isfinite(value):
            return rule("absolute_main_metric", value, limit, False, f"candidate {metric.label} is not finite")
        return rule(
            "absolute_main_metric", value, limit, bool(value <= limit),
            f"{metric.label} {metric.fmt(value)} is above the absolute limit {metric.fmt(limit)} "
            "for a first model (no champion)",
        )
    base = metric_value(metric.name, y, champ)
    limit = base * (1 + cfg.tolerance)
    if not np.isfinite(value):
        return rule("main_metric", value, limit, False, f"candidate {metric.label} is not finite")
    with np.errstate(invalid="ignore", divide="ignore"):
        change = value / base - 1 if base else float("inf")
    return rule(
        "main_metric", value, limit, bool(value <= limit),
        f"{metric.label} {metric.fmt(value)} vs champion {metric.fmt(base)} "
        f"({pct(change)}, limit {limit_pct(cfg.tolerance)})",
    )


def slice_rules(
    cfg: GateConfig, frame: pd.DataFrame, y: np.ndarray, cand: np.ndarray, champ: np.ndarray,
    slices: list[str], seed: int,
) -> list[RuleResult]:
    """One rule per slice of at least ``slice_min_rows`` rows, in the main metric.

    A slice fails only when its point change exceeds ``slice_max_regression`` *and* the paired bootstrap
    interval of the change lies entirely above zero; only slices over the limit are resampled.
    """
    metric = get_metric(cfg.main_metric)
    loss_c, loss_h = metric.loss(y, cand), metric.loss(y, champ)
    grouped: GroupBootstrap | None = None
    rules = []
    for col in slices:
        codes, labels, counts = slice_groups(frame, col)
        sum_c = np.bincount(codes, weights=loss_c, minlength=len(labels))
        sum_h = np.bincount(codes, weights=loss_h, minlength=len(labels))
        with np.errstate(invalid="ignore", divide="ignore"):
            value_c, value_h = metric.finish(sum_c / counts), metric.finish(sum_h / counts)
            change = value_c / value_h - 1.0
        big_enough = [k for k in range(len(labels)) if counts[k] >= max(cfg.slice_min_rows, 1)]
        order = sorted(big_enough, key=lambda i: labels[i])
        regressed = {k for k in order if change[k] > cfg.slice_max_regression}  # NaN: undefined, passes
        lo, hi = np.zeros(len(labels)), np.zeros(len(labels))
        large = [k for k in sorted(regressed) if counts[k] > GROUPS]
        for k in regressed.difference(large):
            # exact row bootstrap, a generator per slice: results do not depend on other slices
            rows = np.flatnonzero(codes == k)
            rng = np.random.default_rng([seed, zlib.crc32(f"slice {col}={labels[k]}".encode())])
            boot = bootstrap_relative_change(loss_c[rows], loss_h[rows], cfg.bootstrap_samples, rng, metric.root)
            (lo[k],), (hi[k],) = interval(boot[:, None], cfg.confidence)
        if large:  # random-group bootstrap (see mlassets.core.bootstrap)
            grouped = grouped or GroupBootstrap(y.size, cfg.bootstrap_samples, seed, GROUPS)
            gc = grouped.group_sums(codes, len(labels), loss_c)[large]
            gh = grouped.group_sums(codes, len(labels), loss_h)[large]
            lo[large], hi[large] = interval(grouped.relative_change(gc, gh, metric.root), cfg.confidence)
        for k in order:
            name = f"slice {col}={labels[k]}"
            passed = k not in regressed or not lo[k] > 0
            rules.append(rule(
                name, change[k], cfg.slice_max_regression, passed,
                f"{name}: {metric.label} {metric.fmt(value_c[k], True)} vs champion "
                f"{metric.fmt(value_h[k], True)} ({pct(change[k])}, limit {limit_pct(cfg.slice_max_regression)}); "
                f"{cfg.confidence * 100:g}% interval [{pct(lo[k])}, {pct(hi[k])}]",
            ))
    return rules


@dataclass
class GateInputs:
    """Measurements beyond the predictions: candidate p99 single-row latency, bundle size, calibration."""

    latency_p99_ms: float | None = None
    size_bytes: float | None = None
    ece: float | None = None  # binary task only


def budget_rules(cfg: GateConfig, inputs: GateInputs) -> list[RuleResult]:
    """``latency_p99``, ``model_size`` and ``calibration_ece`` for the measurements that are present."""
    rules = []
    if inputs.latency_p99_ms is not None:
        ms, budget = float(inputs.latency_p99_ms), cfg.latency_p99_ms
        rules.append(rule("latency_p99", ms, budget, bool(ms <= budget),
                          f"p99 latency {ms:.1f} ms > budget {budget:g} ms (single row)"))
    if inputs.size_bytes is not None:
        mb, budget = float(inputs.size_bytes) / MB, cfg.max_size_mb
        rules.append(rule("model_size", mb, budget, bool(mb <= budget),
                          f"model size {mb:.2f} MB > budget {budget:g} MB"))
    if inputs.ece is not None:
        ece, limit = float(inputs.ece), cfg.calibration_max_ece
        reason = (f"calibration error (ECE) {ece:.3f} > limit {limit:g}" if np.isfinite(ece)
                  else "calibration error (ECE) is undefined (no finite predictions)")
        rules.append(rule("calibration_ece", ece, limit, bool(ece <= limit), reason))
    return rules
