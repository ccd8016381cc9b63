"""The endpoint of a champion on the shared MLflow registry: MLflow's protocol, the plain route, the trace id,
health/ready/metrics, and bad input answered 4xx with a sentence while the server keeps serving."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from fastapi.testclient import TestClient

from mlassets.core import paths
from mlassets.core.diagnose import spans
from mlassets.core.registry import promote
from mlassets.serve.build import build
from mlassets.serve.telemetry import ROOT
from tests.core.registry import test_promotion as shared

reg = shared.reg
Registry = shared.Registry
FEATURES = [*shared.FLIGHTS.features.categorical, *shared.FLIGHTS.features.numeric]


def _rows(n: int, seed: int = 1):  # noqa: ANN202 - a DataFrame
    return shared.flights_rows(n, seed=seed)[FEATURES]


def _records(n: int, seed: int = 1) -> list[dict]:
    return json.loads(_rows(n, seed).to_json(orient="records"))


@pytest.fixture
def client(reg: Registry):  # noqa: ANN201 - a TestClient
    reg.add(True)
    promote.promote(reg.name, "1")
    with TestClient(build(reg.name, "flights", poll=False)) as test_client:
        yield test_client


def test_invocations_speak_mlflows_protocol_and_name_the_version(client: TestClient, reg: Registry) -> None:
    rows = _rows(6)
    expected = shared.tiny_bundle().predict(rows)
    split = json.loads(rows.to_json(orient="split", index=False))
    for body in ({"dataframe_split": split}, {"dataframe_records": _records(6)}):
        answer = client.post("/invocations", json=body)
        assert answer.status_code == 200, answer.text
        out = answer.json()
        np.testing.assert_allclose(out["predictions"], expected, rtol=1e-6)
        assert (out["model"], out["version"]) == (reg.name, "1")
        assert re.fullmatch(r"[0-9a-f]{32}", out["trace_id"]) and out["trace_id"] != "0" * 32
        assert answer.headers["x-trace-id"] == out["trace_id"]
    plain = client.post("/predict", json={"rows": _records(6)}).json()
    np.testing.assert_allclose(plain["predictions"], expected, rtol=1e-6)
    assert client.get("/health").json() == {"status": "ok"}
    ready = client.get("/ready").json()
    assert (ready["ready"], ready["version"], ready["basis"]) == (True, "1", "gate passed")


def test_each_request_is_traced_in_spans_laid_end_to_end(client: TestClient, reg: Registry) -> None:
    trace_id = client.post("/predict", json={"rows": _records(3)}).headers["x-trace-id"]
    lines = (paths.home() / "traces" / "serving.jsonl").read_text().splitlines()
    mine = [x for x in map(json.loads, lines) if x["trace_id"] == trace_id]
    [root] = [x for x in mine if x["parent_id"] == ""]
    stages = sorted((x for x in mine if x["parent_id"]), key=lambda x: (x["start_ns"], x["end_ns"]))
    assert root["name"] == ROOT and all(x["parent_id"] == root["span_id"] for x in stages)
    names = [x["name"] for x in stages]
    assert names == ["receive", "preprocessing", "batch_queue", "preprocessing", "model", "postprocessing"], names
    assert all(x["attributes"]["cpu_ms"] >= 0 for x in stages if x["name"] in ("preprocessing", "model"))
    assert root["attributes"]["cores"] >= 1 and "window_ms" in stages[2]["attributes"]
    assert stages[0]["start_ns"] == root["start_ns"] and stages[-1]["end_ns"] <= root["end_ns"]
    for before, after in zip(stages, stages[1:], strict=False):  # contiguous: their sum is the request's time
        assert after["start_ns"] == before["end_ns"], (before, after)
    frame = spans.read_spans(paths.home() / "traces" / "serving.jsonl")
    assert spans.requests(frame, spans.ENDPOINT).loc[trace_id, "model"] > 0


@pytest.mark.parametrize(("body", "status", "sentence"), [
    (b'{"rows": [', 400, "the body is not valid JSON: Expecting value at line 1 column 11"),
    (b'{"instances": [[1, 2]]}', 400, "exactly one of 'dataframe_split' or 'dataframe_records'"),
    (b'{"dataframe_split": {"columns": ["a"]}}', 400, "'columns' list and a 'data' list"),
])
def test_malformed_mlflow_bodies_are_refused_with_a_sentence(client: TestClient, body: bytes, status: int,
                                                           sentence: str) -> None:
    answer = client.post("/invocations", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == status and sentence in answer.json()["error"], answer.text


def _one(**change: object) -> list[dict]:
    row = _records(1)[0]
    row.update(change)
    return [{k: v for k, v in row.items() if v != "<drop>"}]


@pytest.mark.parametrize(("rows", "status", "sentence"), [
    (_one(tail_number="N123"), 422, "row 0: unknown column 'tail_number'; the model takes carrier, origin"),
    (_one(arr_delay=5.0, tail_number="N123", year=2013), 422,  # a whole CSV row: every extra column at once
     "row 0: unknown columns 'arr_delay', 'tail_number', 'year'; the model takes carrier, origin"),
    (_one(distance="<drop>"), 422, "row 0: missing column 'distance'"),
    (_one(distance="far"), 422, "row 0: column 'distance' must be a number, got \"far\""),
    (_one(carrier=None), 422, "row 0: column 'carrier' may not be missing (null or NaN)"),
    (_one(origin={"code": "JFK"}), 422, "row 0: column 'origin' must be a string or a number"),
    (_one() * 1001, 413, "1001 rows is over the limit of 1000 rows per request (serving.max_rows)"),
    ([], 400, "the request holds no rows"),
])
def test_bad_rows_get_a_4xx_naming_the_column_or_limit(client: TestClient, rows: list, status: int,
                                                       sentence: str) -> None:
    answer = client.post("/predict", json={"rows": rows})
    assert answer.status_code == status, answer.text
    assert sentence in answer.json()["error"]


def test_extra_columns_are_dropped_when_the_config_says_so(reg: Registry) -> None:
    reg.add(True)
    promote.promote(reg.name, "1")
    whole = _one(arr_delay=5.0, tail_number="N123")
    with TestClient(build(reg.name, "flights", poll=False, ignore_extra_columns=True)) as client:
        answer = client.post("/predict", json={"rows": whole})
        plain = client.post("/predict", json={"rows": _one()})
        missing = client.post("/predict", json={"rows": _one(distance="<drop>", tail_number="N123")})
    assert answer.status_code == 200, answer.text
    assert answer.json()["predictions"] == plain.json()["predictions"]  # the extra columns changed nothing
    assert missing.status_code == 422 and "missing column 'distance'" in missing.json()["error"]


def test_nan_size_and_type_limits_and_the_server_keeps_serving(client: TestClient) -> None:
    text = json.dumps({"rows": _records(1)}).replace('"distance":', '"distance":NaN,"x":')
    nan = client.post("/predict", content=re.sub(r',"x":[^,}]+', "", text).encode(),
                      headers={"content-type": "application/json"})
    assert nan.status_code == 422 and "column 'distance' may not be missing (null or NaN)" in nan.json()["error"]
    nullable = client.post("/predict", json={"rows": _one(wind_speed=None)})  # weather: nullable in the config
    assert nullable.status_code == 200, nullable.text
    big = client.post("/predict", content=b" " * 1_048_577, headers={"content-type": "application/json"})
    assert big.status_code == 413 and "over the limit of 1048576 bytes (serving.max_body_bytes)" in big.json()["error"]
    csv = client.post("/invocations", content=b"a,b\n1,2", headers={"content-type": "text/csv"})
    assert csv.status_code == 415 and "send application/json" in csv.json()["error"]
    assert client.post("/predict", json={"rows": _records(2)}).status_code == 200
    metrics = client.get("/metrics").text
    assert 'mlassets_serving_errors_total{kind="bad_request"} 3.0' in metrics
    assert 'mlassets_serving_requests_total{route="predict",status="200",variant="champion"} 2.0' in metrics
    assert "mlassets_serving_queue_depth 0.0" in metrics and "mlassets_serving_batch_rows_bucket" in metrics


def test_what_the_server_will_not_take_is_a_4xx_never_a_model_failure(client: TestClient,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    deep = client.post("/predict", content=b'{"rows": ' + b"[" * 1000 + b"]" * 1000 + b"}",
                       headers={"content-type": "application/json"})
    assert deep.status_code == 400 and "nests too deep" in deep.json()["error"], deep.text
    bare = client.post("/predict", content=json.dumps({"rows": _records(1)}).encode())  # no content type
    assert bare.status_code == 415 and "has no content type; send application/json" in bare.json()["error"]
    for change, sentence in [({"distance": 1e308}, "column 'distance' is 1e+308, which fails less_than_or_equal_to"),
                             ({"wind_speed": 5000}, "column 'wind_speed' is 5000, which fails less_than_or_equal_to"),
                             ({"carrier": "ZZ"}, "column 'carrier' is \"ZZ\", which fails isin(")]:
        answer = client.post("/predict", json={"rows": _one(**change)})
        assert answer.status_code == 422 and f"row 0: {sentence}" in answer.json()["error"], answer.text
    bundle = client.app.state.champion.current.bundle  # type: ignore[attr-defined]
    monkeypatch.setattr(bundle, "forward", lambda x_cat, _x_num: np.full(len(x_cat), np.inf))
    infinite = client.post("/predict", json={"rows": _records(2)})
    assert infinite.status_code == 422 and "predictions" not in infinite.json(), infinite.text
    assert "row 0: the model's prediction is not finite (inf)" in infinite.json()["error"]
    metrics = client.get("/metrics").text
    assert 'mlassets_serving_errors_total{kind="bad_request"} 5.0' in metrics
    assert 'mlassets_serving_errors_total{kind="non_finite_prediction"} 1.0' in metrics
    assert 'kind="internal"' not in metrics
