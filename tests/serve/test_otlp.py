"""OTLP export: off unless the SDK's endpoint variable is set; set, every request's spans reach the collector (a
loopback OTLP/HTTP receiver here, decoding the protobuf the collector would) and the trace file keeps them too."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from mlassets.serve import telemetry


class _Collector(BaseHTTPRequestHandler):
    received: list[tuple[str, str]] = []  # (trace id, span name) of every span posted to /v1/traces

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces":
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    self.received.extend((s.trace_id.hex(), s.name) for s in scope.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_otlp_export_follows_the_sdk_variable(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from mlassets.core.diagnose import spans

    spans.enable(tmp_path / "serving.jsonl")
    monkeypatch.delenv(telemetry.OTLP_ENV, raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert telemetry.export_otlp() == "off"

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv(telemetry.OTLP_ENV, f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setattr(telemetry, "_OTLP", [])
    try:
        assert telemetry.export_otlp() == "on"
        request = telemetry.RequestTrace(1_000, "predict")
        request.stage("model", 1_000, 2_000)
        request.end(3_000)
        processor = telemetry._OTLP[0]
        assert processor.force_flush(10_000)
    finally:
        for processor in telemetry._OTLP:
            processor.shutdown()  # the SDK provider is the process's: later tests' spans must not go to a dead port
        server.shutdown()
    assert sorted(_Collector.received) == sorted([(request.trace_id, telemetry.ROOT), (request.trace_id, "model")])
    assert request.trace_id in (tmp_path / "serving.jsonl").read_text()  # the file keeps every span either way
