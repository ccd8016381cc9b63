"""OTLP export: off unless the SDK's endpoint variable is set; set without the exporter package installed, the
endpoint says so once and keeps writing every span to the trace file."""

from __future__ import annotations

import importlib
import logging

import pytest

from mlassets.serve import telemetry


def _installed() -> bool:
    try:
        importlib.import_module("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    except ImportError:
        return False
    return True


def test_otlp_export_follows_the_sdk_variable(monkeypatch: pytest.MonkeyPatch, caplog, tmp_path) -> None:
    from mlassets.core.diagnose import spans

    spans.enable(tmp_path / "serving.jsonl")
    monkeypatch.delenv(telemetry.OTLP_ENV, raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert telemetry.export_otlp() == "off"
    monkeypatch.setenv(telemetry.OTLP_ENV, "http://127.0.0.1:4318")
    with caplog.at_level(logging.WARNING, logger="mlassets.serve"):
        outcome = telemetry.export_otlp()
    if _installed():
        assert outcome == "on"
    else:
        assert outcome == "missing"
        assert "OTLP exporter is not installed" in caplog.text
    trace = telemetry.RequestTrace(1, "predict")
    trace.end(2)
    assert trace.trace_id in (tmp_path / "serving.jsonl").read_text()  # the file keeps every span either way
