"""The promotion gate: may a candidate model replace the champion?

Every rule is reported with its value, its limit and whether it passed, so a rejection always says why:

* ``sanity_finite`` / ``sanity_range``: predictions are finite and inside the configured range;
* ``main_metric`` (with a champion): the candidate is at most ``tolerance`` worse overall in
  ``main_metric`` (``mae``/``rmse`` for regression, ``logloss``/``brier`` for binary models);
  ``absolute_main_metric`` (first model): the candidate is under ``absolute_max_metric``;
* ``slice <col>=<value>`` (with a champion, slices of at least ``slice_min_rows`` rows): the candidate
  rejects only if its main metric on the slice is worse than the champion's by more than
  ``slice_max_regression`` *and* a paired bootstrap interval of the relative change lies entirely above
  zero (``mlassets.core.bootstrap`` says how it is resampled);
* with ``GateInputs`` measurements: ``latency_p99`` (single-row p99 ms vs ``latency_p99_ms``),
  ``model_size`` (MB vs ``max_size_mb``) and ``calibration_ece`` (binary models, vs
  ``calibration_max_ece``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mlassets.core.bootstrap import bootstrap_relative_change
from mlassets.core.config import GateConfig
from mlassets.core.evaluate import as_array
from mlassets.core.gate_rules import GateInputs, RuleResult, budget_rules, main_rule, sanity_rules, slice_rules

__all__ = ["GateInputs", "GateResult", "RuleResult", "bootstrap_relative_change", "evaluate_gate"]


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


def evaluate_gate(
    cfg: GateConfig,
    y_true: Any,
    pred_candidate: Any,
    pred_champion: np.ndarray | None,
    frame: pd.DataFrame,
    slices: list[str],
    seed: int = 0,
    extra: GateInputs | None = None,
) -> GateResult:
    """Run every gate rule; the candidate passes when all of them pass.

    ``extra`` adds the latency, size and calibration rules for the measurements it holds.
    """
    y, cand = as_array(y_true), as_array(pred_candidate)
    champ = None if pred_champion is None else as_array(pred_champion)
    for what, arr in (("pred_candidate", cand), ("pred_champion", champ)):
        if arr is not None and arr.size != y.size:
            raise ValueError(f"{what} has {arr.size} rows but y_true has {y.size}")
    if len(frame) != y.size:
        raise ValueError(f"frame has {len(frame)} rows but y_true has {y.size}")
    rules = sanity_rules(cfg, cand)
    rules.append(main_rule(cfg, y, cand, champ))
    if champ is not None:
        rules.extend(slice_rules(cfg, frame, y, cand, champ, slices, seed))
    if extra is not None:
        rules.extend(budget_rules(cfg, extra))
    return GateResult(passed=all(r.passed for r in rules), has_champion=champ is not None, rules=rules)
