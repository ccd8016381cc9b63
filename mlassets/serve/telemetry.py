"""The endpoint's Prometheus metrics and its per-request OpenTelemetry spans.

Spans of one request (``endpoint_request``) are laid end to end: ``receive`` (from the request's first bytes
read, when the server runs ``stamped_http``, through the HTTP parsing and the wait for the handler to the whole
body), ``preprocessing`` (parsed, checked; then the batch's own preprocessing), ``batch_queue`` (queued until its
forward pass starts), ``model``, ``postprocessing`` and the optional ``downstream`` call, so their sum is the
request's time. A stage whose work ran on a thread records ``cpu_ms``, that thread's CPU time; the batch queue
records ``window_ms``, the part of its wait the batcher held the batch open; the root records the host's CPU
pressure (``host.Pressure``). The root's ``variant`` says who answered (``champion`` or ``canary``); a shadow's
scoring is a ``shadow_request`` of its own.
"""

from __future__ import annotations

from opentelemetry import trace
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from mlassets.serve.batcher import Timing

ROOT = "endpoint_request"
FIRST_BYTE = "mlassets.first_byte_ns"  # the ASGI scope's key: when the request's first bytes were read
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
        self.errors = Counter("mlassets_serving_errors", "Refused or failed requests by kind: bad_request, "
                              "non_finite_prediction, downstream, internal", ["kind"], registry=r)
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

    def stage(self, name: str, start_ns: int, end_ns: int, cpu_ns: int | None = None,
              **attributes: str | int | float) -> None:
        if cpu_ns is not None and cpu_ns >= 0:
            attributes["cpu_ms"] = cpu_ns / 1e6
        span = _TRACER.start_span(name, context=self._ctx, start_time=start_ns, attributes=attributes)
        span.end(end_time=max(end_ns, start_ns))

    def batch(self, queued_ns: int, timing: Timing) -> None:
        """The batch queue, then the pass's preprocessing and model (its CPU time split between them in proportion
        to their wall times: the pass's thread measures it once)."""
        held = max(0, min(timing.held_to_ns, timing.start_ns) - max(timing.held_from_ns, queued_ns))
        self.stage("batch_queue", queued_ns, timing.start_ns, batch_requests=timing.requests, window_ms=held / 1e6)
        wall = max(timing.done_ns - timing.start_ns, 1)
        pre = timing.preprocessed_ns - timing.start_ns
        cpu = (timing.cpu_ns * pre // wall, timing.cpu_ns - timing.cpu_ns * pre // wall) if timing.cpu_ns >= 0 \
            else (None, None)
        self.stage("preprocessing", timing.start_ns, timing.preprocessed_ns, cpu[0], batch_rows=timing.rows)
        self.stage("model", timing.preprocessed_ns, timing.done_ns, cpu[1], batch_rows=timing.rows)

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



def stamped_http() -> type:
    """uvicorn's HTTP protocol (``http=`` of ``uvicorn.Config``/``uvicorn.run``) that puts in each request's ASGI
    scope (``FIRST_BYTE``) when its first bytes were read, so the request's span covers the parsing and the wait
    for the handler too. The bytes of an idle connection start a request; bytes that arrive while a response is
    still open (a pipelined request) count from the read that completed the new request's head."""
    import time

    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class StampedHTTP(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        first_byte_ns: int | None = None

        def data_received(self, data: bytes) -> None:
            now, before = time.time_ns(), getattr(self, "cycle", None)
            if self.first_byte_ns is None and (before is None or before.response_complete):
                self.first_byte_ns = now
            super().data_received(data)
            if self.cycle is not None and self.cycle is not before:  # a new request's head was read
                self.cycle.scope[FIRST_BYTE] = self.first_byte_ns or now
                self.first_byte_ns = None

    return StampedHTTP
