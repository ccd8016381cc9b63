"""The endpoint's Prometheus metrics, read from the registry ``GET /metrics`` serves (``serve.telemetry.Metrics``)."""

from __future__ import annotations

from mlassets.cli.reference.markdown import code, page, table
from mlassets.serve.telemetry import Metrics

INTRO = """What `GET /metrics` of `mlassets serve` exposes, in the Prometheus text format. Scale on the queue depth
or the latency histogram's p95/p99, not on CPU. Counters are exposed with the `_total` suffix, histograms as
`_bucket`, `_count` and `_sum`."""


def rows() -> list[tuple[str, str, str, str]]:
    """``(name, type, labels, help)`` of every metric of a new endpoint's registry, in registration order."""
    metrics = Metrics()
    out = []
    for value in vars(metrics).values():
        describe = getattr(value, "describe", None)
        if describe is None or value is metrics.registry:
            continue
        family = describe()[0]
        name = f"{family.name}_total" if family.type == "counter" else family.name
        labels = ", ".join(code(label) for label in getattr(value, "_labelnames", ()))
        out.append((code(name), family.type, labels, family.documentation))
    return out


def render() -> str:
    return page("Prometheus metrics", INTRO, table(("metric", "type", "labels", "meaning"), rows()))
