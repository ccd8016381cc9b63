"""Serving spans: the model bundle's own instrumentation, traced requests, p50/p99 and slow against fast."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mlassets.core.diagnose import spans
from mlassets.core.diagnose.serving_trace import trace_requests
from mlassets.core.features.preprocess import Preprocessor
from mlassets.core.train.artifact import ModelBundle
from mlassets.core.train.synthetic import flights_like
from mlassets.core.train.torch_run.mlp import build_model

CATEGORICAL, NUMERIC = ["carrier", "origin"], ["dep_hour", "distance"]


def _bundle() -> ModelBundle:
    rows = flights_like(500, 0)
    pre = Preprocessor.fit(rows, CATEGORICAL, NUMERIC)
    config = {"embedding_dim": 4, "hidden": [8]}
    return ModelBundle(build_model(config, pre.cardinalities, len(NUMERIC)), pre, config, "arr_delay")


def test_traced_requests_give_every_stage_and_a_slow_vs_fast_answer(tmp_path: Path) -> None:
    flights_like(3000, 1).to_parquet(tmp_path / "rows.parquet")
    trace_file = tmp_path / "spans.jsonl"
    count = trace_requests(_bundle().predict, tmp_path / "rows.parquet", tmp_path / "out", trace_file, batch_rows=100)
    assert count == 30 and len(list((tmp_path / "out").glob("*.parquet"))) == 30
    frame = spans.read_spans(trace_file)
    assert set(frame["name"]) == {"request", "read", "preprocessing", "model", "write"}
    reqs = spans.requests(frame, "request")
    assert len(reqs) == 30 and (reqs[list(spans.STAGES)] > 0).all().all()
    table = spans.stage_table(reqs)
    assert (table["p99_ms"] >= table["p50_ms"]).all()
    comparison = spans.slow_vs_fast(reqs)
    assert comparison.stage in (*spans.STAGES, "other") and "p99" in comparison.sentence()


def test_slow_vs_fast_names_the_stage_that_grows() -> None:
    rows = [{"total": 80.0, "read": 15, "preprocessing": 10, "model": 20, "write": 35, "other": 0}] * 98
    rows += [{"total": 160.0, "read": 15, "preprocessing": 10, "model": 20, "write": 35, "other": 80}] * 2
    reqs = pd.DataFrame(rows)
    comparison = spans.slow_vs_fast(reqs)
    assert comparison.stage == "other" and round(float(comparison.extra.sum())) == 80
    assert spans.read_spans(Path("/nonexistent/spans.jsonl")).empty


def test_the_predictions_path_is_traced_into_the_home(home: str) -> None:
    from mlassets.core.config import load_config, shipped_configs
    from mlassets.core.data.store import open_store
    from mlassets.serve import ServedModel, write_predictions

    cfg = load_config(shipped_configs()["flights"])
    model = ServedModel("flights_arr_delay", "1", "gate passed", _bundle())
    result = write_predictions(open_store("local"), cfg, "v" * 40, model, flights_like(200, 2))
    assert result.rows == 200
    frame = spans.read_spans(Path(home) / "traces" / "serving.jsonl")
    reqs = spans.requests(frame, "batch_inference")
    assert len(reqs) == 1 and (reqs[["preprocessing", "model", "write"]] > 0).all().all()
    write_predictions(open_store("local"), cfg, "v" * 40, model, lambda: flights_like(100, 3))  # the asset's way
    reqs = spans.requests(spans.read_spans(Path(home) / "traces" / "serving.jsonl"), "batch_inference")
    read_one = reqs[reqs["read"] > 0]  # rows come ordered by (random) trace id, not by time
    assert len(reqs) == 2 and len(read_one) == 1
    assert (read_one.iloc[0][["preprocessing", "model", "write"]] > 0).all()


def test_the_trace_file_holds_each_span_once_ended_even_when_removed_or_switched(tmp_path: Path) -> None:
    from opentelemetry import trace

    tracer = trace.get_tracer("test")
    first, second = tmp_path / "a" / "spans.jsonl", tmp_path / "b" / "spans.jsonl"

    def names(path: Path) -> list[str]:
        return list(spans.read_spans(path)["name"]) if path.is_file() else []

    spans.enable(first)
    tracer.start_span("one").end()
    assert names(first) == ["one"]  # readable at once: the open file is flushed line by line
    first.unlink()  # a reader cleared it (as a test or an operator does): the next span starts a new file
    tracer.start_span("two").end()
    assert names(first) == ["two"]
    spans.enable(second)
    tracer.start_span("three").end()
    assert (names(first), names(second)) == (["two"], ["three"])


def test_a_requests_spans_reach_the_file_together_when_its_root_ends(tmp_path: Path) -> None:
    from opentelemetry import trace

    tracer = trace.get_tracer("test")
    path = tmp_path / "spans.jsonl"

    def names() -> list[str]:
        return list(spans.read_spans(path)["name"]) if path.is_file() else []

    spans.enable(path)
    root = tracer.start_span(spans.ENDPOINT)
    inside = trace.set_span_in_context(root)
    tracer.start_span("preprocessing", context=inside).end()
    tracer.start_span("model", context=inside).end()
    assert names() == []  # one write per request: nothing before it ends
    root.end()
    assert names() == ["preprocessing", "model", spans.ENDPOINT]
    tracer.start_span("downstream", context=inside).end()  # a stage that ends after its request: at once
    assert names()[-1] == "downstream"
