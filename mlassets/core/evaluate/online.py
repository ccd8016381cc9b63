"""The rule of an online test: what the candidate saw against the champion over the same period decides.

Per variant the endpoint records requests, failed passes, scoring latency (queued to answered by the model,
the part a model version changes) and its predictions. Once both have ``min_requests``, the candidate is rolled
back when its error rate, its p95 latency over the champion's, or the shift of its predictions is over the
limit, and promoted otherwise. The shift: ``|mean(candidate) - mean(champion)| / std(champion)`` for numbers,
half the L1 distance of the predicted labels' shares for a multiclass model.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlassets.core.config.serving import OnlineConfig

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


def decide(champion: dict[str, Any], candidate: dict[str, Any], rule: OnlineConfig) -> Decision:
    """The rule over two ``VariantStats.summary()`` results."""
    ratio = None
    if candidate.get("p95_ms") is not None and champion.get("p95_ms"):
        ratio = candidate["p95_ms"] / champion["p95_ms"]
    moved = shift(champion, candidate)
    figures = {"champion_requests": champion["requests"], "candidate_requests": candidate["requests"],
               "error_rate": candidate["error_rate"], "latency_ratio": ratio, "prediction_shift": moved}
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
    if failures:
        return Decision("rollback", f"online test failed after {done}: {'; '.join(failures)}", figures)
    parts = [f"error rate {candidate['error_rate']:.1%}"]
    if ratio is not None:
        parts.append(f"p95 latency ratio {ratio:.2f}")
    if moved is not None:
        parts.append(f"prediction shift {moved:.3f}")
    return Decision("promote", f"online test passed after {done}: {', '.join(parts)}", figures)
