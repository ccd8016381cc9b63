"""The promotion gate: may a candidate model replace the champion?

Every rule is reported with its value, its limit and whether it passed, so a rejection always says why:

* ``sanity_finite`` / ``sanity_range``: predictions are finite and inside the configured range;
* ``main_metric`` (with a champion): the candidate is at most ``tolerance`` worse overall;
  ``absolute_main_metric`` (first model): the candidate is under ``absolute_max_metric``;
* ``slice <col>=<value>`` (with a champion, slices of at least ``slice_min_rows`` rows): the candidate
  rejects only if it is worse than the champion by more than ``slice_max_regression`` *and* a paired
  bootstrap interval of the relative MAE change lies entirely above zero.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mlassets.core.config import GateConfig
from mlassets.core.evaluate import as_array, regression_metrics, slice_codes

# Elements of one bootstrap index chunk (resamples x rows): keeps the gather cache-friendly.
_CHUNK_ELEMENTS = 2_000_000


@dataclass
class RuleResult:
    name: str
    value: float
    limit: float
    passed: bool
    reason: str = ""


@dataclass
class GateResult:
    passed: bool
    has_champion: bool
    rules: list[RuleResult] = field(default_factory=list)

    def failures(self) -> list[RuleResult]:
        return [r for r in self.rules if not r.passed]

    def reasons(self) -> list[str]:
        return [r.reason for r in self.failures()]

    def summary(self) -> str:
        reasons = self.reasons()
        if self.passed or not reasons:
            return "pass" if self.passed else "fail"
        more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
        return f"fail: {reasons[0]}{more}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": bool(self.passed),
            "has_champion": bool(self.has_champion),
            "rules": [
                {**asdict(r), "value": float(r.value), "limit": float(r.limit), "passed": bool(r.passed)}
                for r in self.rules
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateResult:
        rules = [
            RuleResult(
                name=str(r["name"]),
                value=float(r["value"]),
                limit=float(r["limit"]),
                passed=bool(r["passed"]),
                reason=str(r.get("reason", "")),
            )
            for r in data.get("rules", [])
        ]
        return cls(passed=bool(data["passed"]), has_champion=bool(data["has_champion"]), rules=rules)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> GateResult:
        return cls.from_dict(json.loads(text))


def _pct(x: float, digits: int = 1) -> str:
    return f"{x * 100:+.{digits}f}%"


def _limit_pct(x: float) -> str:
    return f"{x * 100:+g}%"


def _rule(name: str, value: float, limit: float, passed: bool, reason: str) -> RuleResult:
    return RuleResult(name, float(value), float(limit), bool(passed), "" if passed else reason)


def bootstrap_relative_change(
    abs_cand: np.ndarray, abs_champ: np.ndarray, samples: int, rng: np.random.Generator
) -> np.ndarray:
    """``samples`` paired resamples of ``mean(abs_cand) / mean(abs_champ) - 1`` (same rows for both)."""
    n = abs_cand.size
    chunk = max(1, min(samples, _CHUNK_ELEMENTS // max(n, 1)))
    out = np.empty(samples)
    for start in range(0, samples, chunk):
        k = min(chunk, samples - start)
        idx = rng.integers(0, n, size=(k, n))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + k] = np.take(abs_cand, idx).sum(1) / np.take(abs_champ, idx).sum(1) - 1.0
    return out


def _sanity_rules(cfg: GateConfig, pred: np.ndarray) -> list[RuleResult]:
    finite = np.isfinite(pred)
    bad = int(pred.size - finite.sum())
    rules = [
        _rule(
            "sanity_finite",
            bad,
            0,
            bad == 0,
            f"{bad} of {pred.size} predictions are not finite (NaN or infinite)",
        )
    ]
    outside = (pred < cfg.prediction_min) | (pred > cfg.prediction_max)
    share = float(outside.mean()) if pred.size else 0.0
    seen = pred[finite]
    lo, hi = (float(seen.min()), float(seen.max())) if seen.size else (float("nan"), float("nan"))
    rules.append(
        _rule(
            "sanity_range",
            share,
            0,
            share == 0,
            f"{int(outside.sum())} predictions ({share:.2%}) fall outside "
            f"[{cfg.prediction_min:g}, {cfg.prediction_max:g}]; "
            f"predictions seen range from {lo:.2f} to {hi:.2f}",
        )
    )
    return rules


def _main_rule(cfg: GateConfig, y: np.ndarray, cand: np.ndarray, champ: np.ndarray | None) -> RuleResult:
    metric = cfg.main_metric
    label = metric.upper()
    value = regression_metrics(y, cand)[metric]
    if champ is None:
        limit = cfg.absolute_max_metric
        if not np.isfinite(value):
            return _rule("absolute_main_metric", value, limit, False, f"candidate {label} is not finite")
        return _rule(
            "absolute_main_metric",
            value,
            limit,
            bool(value <= limit),
            f"{label} {value:.2f} is above the absolute limit {limit:.2f} for a first model (no champion)",
        )
    base = regression_metrics(y, champ)[metric]
    limit = base * (1 + cfg.tolerance)
    if not np.isfinite(value):
        return _rule("main_metric", value, limit, False, f"candidate {label} is not finite")
    with np.errstate(invalid="ignore", divide="ignore"):
        change = value / base - 1 if base else float("inf")
    return _rule(
        "main_metric",
        value,
        limit,
        bool(value <= limit),
        f"{label} {value:.2f} vs champion {base:.2f} ({_pct(change)}, limit {_limit_pct(cfg.tolerance)})",
    )


def _slice_rules(
    cfg: GateConfig,
    frame: pd.DataFrame,
    y: np.ndarray,
    cand: np.ndarray,
    champ: np.ndarray,
    slices: list[str],
    seed: int,
) -> list[RuleResult]:
    abs_c, abs_h = np.abs(cand - y), np.abs(champ - y)
    alpha = 1.0 - cfg.confidence
    rules = []
    for col in slices:
        if col not in frame.columns:
            raise KeyError(f"slice column {col!r} is not in the frame")
        codes, labels = slice_codes(frame[col].to_numpy())
        counts = np.bincount(codes, minlength=len(labels))
        sum_c = np.bincount(codes, weights=abs_c, minlength=len(labels))
        sum_h = np.bincount(codes, weights=abs_h, minlength=len(labels))
        for k in sorted(range(len(labels)), key=lambda i: labels[i]):
            if counts[k] < cfg.slice_min_rows:
                continue
            name = f"slice {col}={labels[k]}"
            mae_c, mae_h = sum_c[k] / counts[k], sum_h[k] / counts[k]
            with np.errstate(invalid="ignore", divide="ignore"):
                change = float(np.float64(mae_c) / np.float64(mae_h) - 1.0)
            if not change > cfg.slice_max_regression:  # within limit (or undefined): no bootstrap needed
                rules.append(_rule(name, change, cfg.slice_max_regression, True, ""))
                continue
            rows = np.flatnonzero(codes == k)
            # A generator per slice, seeded by (seed, slice name): results do not depend on other slices.
            rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
            boot = bootstrap_relative_change(abs_c[rows], abs_h[rows], cfg.bootstrap_samples, rng)
            # 0/0 (both models exact on a resample) is no change; x/0 is an unbounded regression.
            boot = np.nan_to_num(boot, nan=0.0, posinf=1e12, neginf=-1e12)
            lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
            passed = not lo > 0
            rules.append(
                _rule(
                    name,
                    change,
                    cfg.slice_max_regression,
                    passed,
                    f"{name}: MAE {mae_c:.1f} vs champion {mae_h:.1f} ({_pct(change)}, "
                    f"limit {_limit_pct(cfg.slice_max_regression)}); "
                    f"{cfg.confidence * 100:g}% interval [{_pct(lo)}, {_pct(hi)}]",
                )
            )
    return rules


def evaluate_gate(
    cfg: GateConfig,
    y_true: Any,
    pred_candidate: Any,
    pred_champion: np.ndarray | None,
    frame: pd.DataFrame,
    slices: list[str],
    seed: int = 0,
) -> GateResult:
    """Run every gate rule; the candidate passes when all of them pass."""
    y, cand = as_array(y_true), as_array(pred_candidate)
    champ = None if pred_champion is None else as_array(pred_champion)
    for what, arr in (("pred_candidate", cand), ("pred_champion", champ)):
        if arr is not None and arr.size != y.size:
            raise ValueError(f"{what} has {arr.size} rows but y_true has {y.size}")
    if len(frame) != y.size:
        raise ValueError(f"frame has {len(frame)} rows but y_true has {y.size}")
    rules = _sanity_rules(cfg, cand)
    rules.append(_main_rule(cfg, y, cand, champ))
    if champ is not None:
        rules.extend(_slice_rules(cfg, frame, y, cand, champ, slices, seed))
    return GateResult(passed=all(r.passed for r in rules), has_champion=champ is not None, rules=rules)
