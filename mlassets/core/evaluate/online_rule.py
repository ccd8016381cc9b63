"""The rule of an online test: what the candidate saw against the champion over the same period decides.

Per variant the endpoint records requests, failed passes, scoring latency (queued to answered by the model,
the part a model version changes) and its predictions. Once both have ``min_requests``, the candidate is rolled
back when its error rate, its p95 latency over the champion's, or the shift of its predictions is over the
limit, and promoted otherwise. The shift: ``|mean(candidate) - mean(champion)| / std(champion)`` for numbers,
half the L1 distance of the predicted labels' shares for a multiclass model; it rolls back only when its
always-valid lower bound (``sequential``, at ``confidence``) is over ``max_prediction_shift``, so an equal model's
noise does not.

Labels (``serving.online.label_key``, joined by ``online_labels``) are judged by ``online_metric``: an always-valid
interval on the metric's difference, which may roll the candidate back as soon as it shows it worse than
``max_metric_regression`` allows (before ``min_requests`` too); under ``min_labelled`` rows the rule otherwise
decides without them, or waits for them with ``require_labels``.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlassets.core.config.serving import OnlineConfig
from mlassets.core.evaluate import sequential
from mlassets.core.evaluate.online_metric import metric_rule

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
            out["rows"] = len(predictions)
        elif predictions:
            values = np.asarray(predictions, dtype=np.float64)
            values = values[np.isfinite(values)]
            out["mean"], out["std"] = (float(values.mean()), float(values.std())) if len(values) else (None, None)
            out["rows"] = len(values)
        return out


def _quantile(values: list[float], q: float) -> float | None:
    return float(np.quantile(values, q)) if values else None


@dataclass(frozen=True)
class Decision:
    outcome: str  # "wait", "promote" or "rollback"
    reason: str
    figures: dict[str, float | None]


def shift(champion: dict[str, Any], candidate: dict[str, Any], rule: OnlineConfig) -> tuple[float | None, float]:
    """``(shift, its always-valid lower bound)``: how far the candidate's predictions moved from the champion's
    (see the module docstring), and how far at least they moved at ``rule.confidence`` (``sequential``)."""
    alpha = 1 - rule.confidence
    if "label_shares" in champion and "label_shares" in candidate:
        old, new = champion["label_shares"], candidate["label_shares"]
        point = 0.5 * sum(abs(old.get(k, 0.0) - new.get(k, 0.0)) for k in set(old) | set(new))
        return point, sequential.shares_distance_low(old, new, champion["rows"], candidate["rows"],
                                                     rule.min_requests, alpha)
    if champion.get("mean") is None or candidate.get("mean") is None:
        return None, 0.0
    scale = champion["std"] if champion["std"] and champion["std"] > 1e-12 else max(abs(champion["mean"]), 1.0)
    found = sequential.two_sample(_sums(candidate), _sums(champion), 1.0, 1.0, rule.min_requests, alpha)
    point = abs(candidate["mean"] - champion["mean"]) / scale
    return point, 0.0 if found is None else max(0.0, abs(found.estimate) - (found.high - found.estimate)) / scale


def _sums(summary: dict[str, Any]) -> sequential.Sums:
    n, mean, std = summary["rows"], summary["mean"], summary["std"]
    return sequential.Sums(n, mean * n, n * (std * std + mean * mean))


def decide(champion: dict[str, Any], candidate: dict[str, Any], rule: OnlineConfig,
           labels: dict[str, Any] | None = None) -> Decision:
    """The rule over two ``VariantStats.summary()`` results and the labelled rows' record (if any)."""
    ratio = None
    if candidate.get("p95_ms") is not None and champion.get("p95_ms"):
        ratio = candidate["p95_ms"] / champion["p95_ms"]
    moved, moved_low = shift(champion, candidate, rule)
    verdict, measured, by_labels = metric_rule(labels, rule)
    figures = {"champion_requests": champion["requests"], "candidate_requests": candidate["requests"],
               "error_rate": candidate["error_rate"], "latency_ratio": ratio, "prediction_shift": moved,
               "prediction_shift_low": moved_low, **by_labels}
    done = f"{candidate['requests']} candidate and {champion['requests']} champion requests"
    if verdict == "fail":  # the labels' interval is always valid: it decides before min_requests too
        return Decision("rollback", f"online test failed after {done}: {measured}", figures)
    if min(candidate["requests"], champion["requests"]) < rule.min_requests:
        return Decision("wait", f"{done}; the rule decides at {rule.min_requests} each", figures)
    failures = []
    if candidate["error_rate"] > rule.max_error_rate:
        failures.append(f"error rate {candidate['error_rate']:.1%} > {rule.max_error_rate:.1%}")
    if ratio is not None and ratio > rule.max_latency_ratio:
        failures.append(f"p95 latency {candidate['p95_ms']:.1f} ms is {ratio:.2f}x the champion's "
                        f"{champion['p95_ms']:.1f} ms (limit {rule.max_latency_ratio:g}x)")
    if moved is not None and moved_low > rule.max_prediction_shift:
        failures.append(f"prediction shift {moved:.3f}, at least {moved_low:.3f} at {rule.confidence:.0%} "
                        f"always-valid confidence > {rule.max_prediction_shift:g}")
    if candidate["requests"] - candidate["errors"] == 0:
        failures.append("no request was scored by the candidate")
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
        parts.append(f"prediction shift {moved:.3f} (at least {moved_low:.3f})")
    if verdict == "pass":
        parts.append(measured)
    elif verdict == "short":
        parts.append(f"labels not used: {measured}")
    return Decision("promote", f"online test passed after {done}: {', '.join(parts)}", figures)
