"""The endpoint's p99 verdict: the source's worked example, injected faults (synthetic and a real slow
dependency), ``mlassets diagnose --serving`` and the dashboard's serving page."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from mlassets.cli import main
from mlassets.core import paths
from mlassets.core.diagnose import spans
from mlassets.core.diagnose.serving_example import FAST, seed_p99_spans
from mlassets.core.diagnose.serving_verdict import verdict
from mlassets.core.registry import promote
from mlassets.serve.build import build
from tests.core.registry import test_promotion as shared
from tests.serve.server import running

reg = shared.reg
Registry = shared.Registry
FEATURES = [*shared.FLIGHTS.features.categorical, *shared.FLIGHTS.features.numeric]


def _verdict(frame):  # noqa: ANN001, ANN202
    return verdict(spans.requests(frame, spans.ENDPOINT))


def test_the_sources_worked_example_is_batching_or_a_dependency_not_the_model() -> None:
    found = _verdict(seed_p99_spans())
    assert found.causes == ["batching", "a dependency"]
    assert found.headline == "batching or a dependency, not the model"
    assert (found.p50_ms, found.p99_ms) == (80.0, 160.0)
    assert ("median request 80 ms, p99 160 ms = feature retrieval 15 + preprocessing 10 + batch queue 55 + model 20"
            " + post-processing 15 + downstream 45 ms") in found.sentence()
    assert "(model 20 ms at p99, +0 ms)" in found.sentence()


@pytest.mark.parametrize(("change", "outside", "headline"), [
    ({"downstream": 400.0}, 0.0, "a dependency, not the model"),
    ({"batch_queue": 300.0}, 0.0, "batching, not the model"),
    ({"feature_retrieval": 250.0}, 0.0, "feature retrieval, not the model"),
    ({"model": 200.0}, 0.0, "the model"),
    ({}, 300.0, "the host, not the model"),
])
def test_injected_faults_get_their_verdict(change: dict, outside: float, headline: str) -> None:
    found = _verdict(seed_p99_spans(slow={**FAST, **change}, outside_ms=outside))
    assert found.headline == headline


def _jsonl(frame, path: Path) -> None:  # noqa: ANN001
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"trace_id": r.trace_id, "span_id": r.span_id, "parent_id": r.parent_id, "name": r.name,
              "start_ns": int(r.start_ns), "end_ns": int(r.start_ns + r.duration_ms * 1e6)} for r in frame.itertuples()]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_diagnose_serving_prints_the_table_and_verdict(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["diagnose", "--serving-example"]) == 0
    out = capsys.readouterr().out
    assert "Verdict: batching or a dependency, not the model" in out
    assert "batch queue            12.0     55.0      55.0      12.0" in out
    _jsonl(seed_p99_spans(slow={**FAST, "model": 200.0}), tmp_path / "spans.jsonl")
    assert main(["diagnose", "--serving", "--trace-file", str(tmp_path / "spans.jsonl")]) == 0
    assert "Verdict: the model\n" in capsys.readouterr().out
    assert main(["diagnose", "--serving", "--trace-file", str(tmp_path / "none.jsonl")]) == 1
    assert "nothing recorded yet: no endpoint requests in" in capsys.readouterr().out


def test_the_serving_page_gives_the_verdict_of_endpoint_traces(home: str) -> None:
    from streamlit.testing.v1 import AppTest

    _jsonl(seed_p99_spans(), Path(home) / "traces" / "serving.jsonl")
    page = Path(__file__).resolve().parents[2] / "dashboard" / "app_pages" / "serving.py"
    at = AppTest.from_file(str(page), default_timeout=120).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="kind").value == spans.ENDPOINT
    assert at.subheader[0].value == "Verdict: batching or a dependency, not the model"
    assert at.dataframe[0].value.loc["batch_queue", "p99_ms"] == pytest.approx(55.0)


def _slow_dependency(every: int, seconds: float) -> FastAPI:
    app, count = FastAPI(), {"n": 0}

    @app.get("/")
    async def answer() -> dict:
        count["n"] += 1
        if count["n"] % every == 0:
            import asyncio
            await asyncio.sleep(seconds)
        return {}

    return app


def test_a_slow_dependency_of_a_real_endpoint_is_named(reg: Registry, tmp_path: Path) -> None:
    reg.add(True)
    promote.promote(reg.name, "1")
    trace_file = paths.home() / "traces" / "serving.jsonl"
    trace_file.unlink(missing_ok=True)
    body = {"rows": json.loads(shared.flights_rows(2, seed=6)[FEATURES].to_json(orient="records"))}
    with running(_slow_dependency(every=5, seconds=0.3)) as dependency:
        with running(build(reg.name, "flights", poll=False, downstream_url=dependency)) as base:
            with httpx.Client(base_url=base, timeout=30) as client:
                statuses = [client.post("/predict", json=body).status_code for _ in range(40)]
    assert statuses == [200] * 40
    found = _verdict(spans.read_spans(trace_file))
    assert found.causes[0] == "a dependency" and found.extra["downstream"] > 200


def test_an_online_tests_requests_are_told_apart_by_who_answered(tmp_path: Path) -> None:
    """Traces written by the endpoint's own spans: the canary's requests and the champion's are read apart, and
    ``diagnose --serving`` prints each one's p50/p99 beside the whole."""
    from mlassets.cli import diagnose_serving
    from mlassets.serve.telemetry import RequestTrace

    spans.enable(tmp_path / "serving.jsonl")
    for i, (variant, model_ms) in enumerate([("champion", 2)] * 6 + [("canary", 9)] * 3):
        start = i * 100_000_000
        request = RequestTrace(start, "predict")
        request.stage("model", start, start + model_ms * 1_000_000)
        request.end(start + model_ms * 1_000_000, status=200, variant=variant)
    frame = spans.read_spans(tmp_path / "serving.jsonl")
    assert spans.variants(frame, spans.ENDPOINT) == ["canary", "champion"]
    canary = spans.requests(frame, spans.ENDPOINT, "canary")
    assert len(canary) == 3 and canary["model"].round(3).eq(9.0).all()
    assert len(spans.requests(frame, spans.ENDPOINT, "champion")) == 6 == len(spans.requests(frame, spans.ENDPOINT)) - 3
    printed = diagnose_serving.report(frame, "endpoint")
    assert "answered by canary        9.0      9.0   (3 requests)" in printed
    assert "answered by champion      2.0      2.0   (6 requests)" in printed
