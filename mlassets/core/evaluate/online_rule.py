"""The rule of an online test: what the candidate saw against the champion over the same period decides.

Per variant the endpoint records requests, failed passes, scoring latency (queued to answered by the model,
the part a model version changes) and its predictions. Once both have ``min_requests``, the candidate is rolled
back when its error rate, its p95 latency over the champion's, or the shift of its predictions is over the
limit, and promoted otherwise. The shift: ``|mean(candidate) - mean(champion)| / std(champion)`` for numbers,
half the L1 distance of the predicted labels' shares for a multiclass model.

Labels (``serving.online.label_key``, joined by ``online_labels``): once each variant has ``min_labelled``
labelled rows, the candidate's main metric on its rows may be at most ``max_metric_regression`` (relative; none:
the gate's tolerance) worse than the champion's on its rows, else it is rolled back. Before that the rule decides
without them, or waits for them with ``require_labels``.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlassets.core.config.schema import GateConfig
from mlassets.core.config.serving import OnlineConfig
from mlassets.core.evaluate.gate_rules import limit_pct, pct
from mlassets.core.evaluate.metrics import get_metric

KEEP = 20_000  # the newest latencies and predictions kept per variant


@dataclass
class VariantStats:
    """What one variant (champion, canary, shadow) did during an online test; safe across threads."""

    requests: int = 0
    errors: int = 0
    latencies_ms: deque = field(default_factory=lambda: deque(maxlen=KEEP))
    predictions: deque = field(default_factory=lambda: deque(maxlen=KEEP))  # floats, or labels (multiclass)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def scored(self, latency_ms: float, predictions: Any) -> None:
        values = predictions["prediction"].tolist() if hasattr(predictions, "columns") else \
            [float(v) for v in np.asarray(predictions, dtype=np.float64)]
        with self._lock:
            self.requests += 1
            self.latencies_ms.append(latency_ms)
            self.predictions.extend(values)

    def failed(self) -> None:
        with self._lock:
            self.requests += 1
            self.errors += 1

    def summary(self) -> dict[str, Any]:
        with self._lock:
            latencies, predictions = list(self.latencies_ms), list(self.predictions)
            requests, errors = self.requests, self.errors
        out: dict[str, Any] = {"requests": requests, "errors": errors,
                               "error_rate": errors / requests if requests else 0.0,
                               "p50_ms": _quantile(latencies, 0.5), "p95_ms": _quantile(latencies, 0.95)}
        if predictions and isinstance(predictions[0], str):
            counts = Counter(predictions)
            out["label_shares"] = {k: v / len(predictions) for k, v in sorted(counts.items())}
        elif predictions:
            values = np.asarray(predictions, dtype=np.float64)
            values = values[np.isfinite(values)]
            out["mean"], out["std"] = (float(values.mean()), float(values.std())) if len(values) else (None, None)
        return out


def _quantile(values: list[float], q: float) -> float | None:
    return float(np.quantile(values, q)) if values else None


@dataclass(frozen=True)
class Decision:
    outcome: str  # "wait", "promote" or "rollback"
    reason: str
    figures: dict[str, float | None]


def shift(champion: dict[str, Any], candidate: dict[str, Any]) -> float | None:
    """How far the candidate's predictions moved from the champion's (see the module docstring)."""
    if "label_shares" in champion and "label_shares" in candidate:
        labels = set(champion["label_shares"]) | set(candidate["label_shares"])
        return 0.5 * sum(abs(champion["label_shares"].get(k, 0.0) - candidate["label_shares"].get(k, 0.0))
                         for k in labels)
    if champion.get("mean") is None or candidate.get("mean") is None:
        return None
    gap = abs(candidate["mean"] - champion["mean"])
    scale = champion["std"] if champion["std"] and champion["std"] > 1e-12 else max(abs(champion["mean"]), 1.0)
    return gap / scale


def metric_rule(labels: dict[str, Any] | None, rule: OnlineConfig) -> tuple[str, str, dict[str, Any]]:
    """``(verdict, sentence, figures)`` of the labelled rows (``online_labels.add_labels``'s record): ``off`` (no
    labels), ``short`` (fewer than ``min_labelled`` of a variant), ``pass`` or ``fail``."""
    if not labels:
        return "off", "", {}
    champion, candidate = labels["variants"]["champion"], labels["variants"]["candidate"]
    figures = {"labelled_champion": champion["labelled"], "labelled_candidate": candidate["labelled"],
               "metric": labels["metric"], "metric_champion": champion["value"],
               "metric_candidate": candidate["value"]}
    counts = f"{candidate['labelled']} candidate and {champion['labelled']} champion labelled rows"
    if min(candidate["labelled"], champion["labelled"]) < rule.min_labelled:
        return "short", f"{counts} (min_labelled {rule.min_labelled})", figures
    metric = get_metric(labels["metric"])
    base, value = champion["value"], candidate["value"]
    if value is None or base is None:
        who = "candidate" if value is None else "champion"
        return "fail", f"the {who}'s {metric.label} on {counts} is not finite", figures
    tolerance = GateConfig().tolerance if rule.max_metric_regression is None else rule.max_metric_regression
    higher = metric.higher_is_better
    limit = base * (1 - tolerance if higher else 1 + tolerance)
    change = value / base - 1 if base else (0.0 if value == base else float("inf"))
    sentence = (f"{metric.label} {metric.fmt(value)} on {candidate['labelled']} labelled rows vs the champion's "
                f"{metric.fmt(base)} on {champion['labelled']} ({pct(change)}, limit "
                f"{limit_pct(-tolerance if higher else tolerance)}{'; higher is better' if higher else ''})")
    passed = value >= limit if higher else value <= limit
    return ("pass" if passed else "fail"), sentence, figures


def decide(champion: dict[str, Any], candidate: dict[str, Any], rule: OnlineConfig,
           labels: dict[str, Any] | None = None) -> Decision:
    """The rule over two ``VariantStats.summary()`` results and the labelled rows' record (if any)."""
    ratio = None
    if candidate.get("p95_ms") is not None and champion.get("p95_ms"):
        ratio = candidate["p95_ms"] / champion["p95_ms"]
    moved = shift(champion, candidate)
    verdict, measured, by_labels = metric_rule(labels, rule)
    figures = {"champion_requests": champion["requests"], "candidate_requests": candidate["requests"],
               "error_rate": candidate["error_rate"], "latency_ratio": ratio, "prediction_shift": moved, **by_labels}
    done = f"{candidate['requests']} candidate and {champion['requests']} champion requests"
    if min(candidate["requests"], champion["requests"]) < rule.min_requests:
        return Decision("wait", f"{done}; the rule decides at {rule.min_requests} each", figures)
    failures = []
    if candidate["error_rate"] > rule.max_error_rate:
        failures.append(f"error rate {candidate['error_rate']:.1%} > {rule.max_error_rate:.1%}")
    if ratio is not None and ratio > rule.max_latency_ratio:
        failures.append(f"p95 latency {candidate['p95_ms']:.1f} ms is {ratio:.2f}x the champion's "
                        f"{champion['p95_ms']:.1f} ms (limit {rule.max_latency_ratio:g}x)")
    if moved is not None and moved > rule.max_prediction_shift:
        failures.append(f"prediction shift {moved:.3f} > {rule.max_prediction_shift:g}")
    if candidate["requests"] - candidate["errors"] == 0:
        failures.append("no request was scored by the candidate")
    if verdict == "fail":
        failures.append(measured)
    if failures:
        return Decision("rollback", f"online test failed after {done}: {'; '.join(failures)}", figures)
    if verdict in ("off", "short") and rule.require_labels:
        waiting = measured or "no labels yet"
        return Decision("wait", f"{done}; labels: {waiting}; the rule waits for {rule.min_labelled} labelled rows "
                                "of each variant (serving.online.require_labels)", figures)
    parts = [f"error rate {candidate['error_rate']:.1%}"]
    if ratio is not None:
        parts.append(f"p95 latency ratio {ratio:.2f}")
    if moved is not None:
        parts.append(f"prediction shift {moved:.3f}")
    if verdict == "pass":
        parts.append(measured)
    elif verdict == "short":
        parts.append(f"labels not used: {measured}")
    return Decision("promote", f"online test passed after {done}: {', '.join(parts)}", figures)
