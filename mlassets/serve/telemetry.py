"""The endpoint's Prometheus metrics and its per-request OpenTelemetry spans.

Spans of one request (``endpoint_request``) are laid end to end: ``preprocessing`` (body read, parsed, checked;
then the batch's own preprocessing), ``batch_queue`` (queued until its forward pass starts), ``model``,
``postprocessing`` and the optional ``downstream`` call, so their sum is the request's time. The root's
``variant`` says who answered (``champion`` or ``canary``); a shadow's scoring is a ``shadow_request`` of its own.
"""

from __future__ import annotations

from opentelemetry import trace
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from mlassets.serve.batcher import Timing

ROOT = "endpoint_request"
_TRACER = trace.get_tracer("mlassets.serve")
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class Metrics:
    """One registry per server (tests start many): request count and latency, queue depth, batch size, errors."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("mlassets_serving_requests", "Requests by route, status and the variant that "
                                "answered (champion, canary)", ["route", "status", "variant"], registry=r)
        self.latency = Histogram("mlassets_serving_request_seconds", "Request latency", ["route", "variant"],
                                 buckets=_LATENCY_BUCKETS, registry=r)
        self.scoring = Histogram("mlassets_serving_scoring_seconds", "Queued to scored, per variant during an "
                                 "online test (champion, canary, shadow)", ["variant"], buckets=_LATENCY_BUCKETS,
                                 registry=r)
        self.variant_errors = Counter("mlassets_serving_variant_errors", "Failed forward passes per variant during "
                                      "an online test", ["variant"], registry=r)
        self.queue_depth = Gauge("mlassets_serving_queue_depth", "Requests waiting for a forward pass", registry=r)
        self.batch_rows = Histogram("mlassets_serving_batch_rows", "Rows per forward pass", buckets=_BATCH_BUCKETS,
                                    registry=r)
        self.batch_requests = Histogram("mlassets_serving_batch_requests", "Requests per forward pass",
                                        buckets=_BATCH_BUCKETS, registry=r)
        self.errors = Counter("mlassets_serving_errors", "Refused or failed requests by kind", ["kind"], registry=r)
        self.swaps = Counter("mlassets_serving_swaps", "Champion swaps by outcome", ["outcome"], registry=r)
        self.version = Gauge("mlassets_serving_model_version", "The version being served", ["model"], registry=r)

    def batch(self, timing: Timing) -> None:
        self.batch_rows.observe(timing.rows)
        self.batch_requests.observe(timing.requests)


class RequestTrace:
    """The spans of one request, opened at arrival; stages are added with their clock points (ns)."""

    def __init__(self, start_ns: int, route: str, root: str = ROOT) -> None:
        self.root = _TRACER.start_span(root, start_time=start_ns, attributes={"route": route})
        self._ctx = trace.set_span_in_context(self.root)

    @property
    def trace_id(self) -> str:
        return f"{self.root.get_span_context().trace_id:032x}"

    def stage(self, name: str, start_ns: int, end_ns: int, **attributes: str | int | float) -> None:
        span = _TRACER.start_span(name, context=self._ctx, start_time=start_ns, attributes=attributes)
        span.end(end_time=max(end_ns, start_ns))

    def batch(self, queued_ns: int, timing: Timing) -> None:
        self.stage("batch_queue", queued_ns, timing.start_ns, batch_requests=timing.requests)
        self.stage("preprocessing", timing.start_ns, timing.preprocessed_ns, batch_rows=timing.rows)
        self.stage("model", timing.preprocessed_ns, timing.done_ns, batch_rows=timing.rows)

    def end(self, end_ns: int, **attributes: str | int | float) -> None:
        self.root.set_attributes(attributes)
        self.root.end(end_time=end_ns)


OTLP_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"  # the OpenTelemetry SDK's own variable (OTEL_EXPORTER_OTLP_TRACES_* too)
_OTLP: list[object] = []


def export_otlp() -> str:
    """Also send the spans to an OTLP collector when ``$OTEL_EXPORTER_OTLP_ENDPOINT`` (or the traces one) is set:
    ``on``, ``off`` (not configured), or ``missing`` (configured, but the OTLP exporter package is not installed:
    said once in the log; the file keeps every span)."""
    import importlib
    import logging
    import os

    if not (os.environ.get(OTLP_ENV) or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return "off"
    if _OTLP:
        return "on"
    try:
        module = importlib.import_module("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    except ImportError:
        logging.getLogger("mlassets.serve").warning(
            "%s is set but the OTLP exporter is not installed (opentelemetry-exporter-otlp-proto-http); spans go "
            "to the trace file only", OTLP_ENV)
        return "missing"
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    processor = BatchSpanProcessor(module.OTLPSpanExporter())
    trace.get_tracer_provider().add_span_processor(processor)  # the SDK provider ``spans.enable`` installed
    _OTLP.append(processor)
    return "on"

