"""Every page under ``streamlit.testing``: a clear note on an empty stack, and inputs that change the output."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import Stack

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")  # the recorded stack trains

APP = Path(__file__).resolve().parents[2] / "dashboard"
PAGES = ("bottlenecks", "stragglers", "scaling", "models", "capacity", "serving")


def _page(name: str) -> AppTest:
    return AppTest.from_file(str(APP / "app_pages" / f"{name}.py"), default_timeout=120).run()


def _text(at: AppTest) -> str:
    parts = [e.value for kind in ("subheader", "markdown", "info", "warning", "success", "caption")
             for e in getattr(at, kind)]
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize("name", [p for p in PAGES if p not in ("capacity", "scaling")])
def test_empty_stack_says_nothing_recorded_yet(name: str, home: str) -> None:
    at = _page(name)
    assert not at.exception, at.exception
    assert "Nothing recorded yet" in _text(at)
    assert not (Path(home) / "mlflow.db").exists() and not (Path(home) / "promotions.db").exists()  # reads only


@pytest.mark.parametrize("name", ["capacity", "scaling"])
def test_pages_without_records_work_on_an_empty_stack(name: str, home: str) -> None:
    at = _page(name)
    assert not at.exception, at.exception
    assert at.dataframe


def test_router_runs_the_default_page(stack: Stack) -> None:
    at = AppTest.from_file(str(APP / "streamlit_app.py"), default_timeout=120).run()
    assert not at.exception and at.title[0].value == "Bottlenecks"


def test_bottlenecks_verdict_follows_the_chosen_run(stack: Stack) -> None:
    at = _page("bottlenecks")
    assert not at.exception, at.exception
    at.selectbox(key="bottlenecks-version").set_value("aaaa11110123456789").run()
    assert "Verdict: input-bound" in at.subheader[0].value and "ms per step is data wait" in _text(at)
    at.selectbox(key="bottlenecks-version").set_value("cccc33330123456789").run()
    assert "Verdict: compute-bound" in at.subheader[0].value
    assert at.query_params["run"] in ("cccc3333", ["cccc3333"])  # the URL names the run shown


def test_bottlenecks_links_to_the_mlflow_and_dagster_runs(stack: Stack) -> None:
    at = _page("bottlenecks")
    at.selectbox(key="bottlenecks-version").set_value("aaaa11110123456789").run()
    text = _text(at)
    assert "[Dagster run](http://127.0.0.1:3000/runs/aaaa1111-2222-3333-4444-555566667777)" in text
    assert "[MLflow run](http://127.0.0.1:5000/#/experiments/" in text


def test_stragglers_names_the_rank_and_its_input_path(stack: Stack) -> None:
    at = _page("stragglers")
    at.selectbox(key="stragglers-version").set_value("bbbb22220123456789").run()
    assert "Straggler: rank 1, input path" in at.subheader[0].value
    at.selectbox(key="stragglers-version").set_value("aaaa11110123456789").run()
    assert at.subheader[0].value.startswith("No straggler")


def test_stragglers_shows_the_source_example_beside_a_one_rank_run(stack: Stack) -> None:
    at = _page("stragglers")
    at.selectbox(key="stragglers-version").set_value("dddd44440123456789").run()  # one rank
    heads = [h.value for h in at.subheader]
    assert heads[0] == "One rank: nothing to compare" and heads[1].startswith("Straggler: rank ")
    assert "input path" in heads[1] and "180 ms per step but one takes 420 ms" in _text(at)
    at.radio(key="straggler-source").set_value("The source's straggler example").run()
    assert [h.value for h in at.subheader] == heads[1:]  # the example alone, whatever run is recorded


def test_scaling_preset_prints_the_source_table_and_the_price_changes_it(stack: Stack) -> None:
    at = _page("scaling")
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert table["cost"].tolist()[:5] == ["₹6,000", "₹7,059", "₹8,304", "₹9,770", "₹11,494"]
    assert table["hours to finish"].tolist()[:5] == ["24", "14.1", "8.3", "4.9", "2.9"]
    at.number_input(key="price-Source").set_value(300.0).run()
    assert at.dataframe[0].value["cost"].tolist()[0] == "₹7,200"
    at.radio(key="preset").set_value("Measured on this machine (scaling_profile)").run()
    assert at.number_input(key="eff-Measur").value == pytest.approx(0.75)
    assert at.dataframe[0].value["speed-up"].tolist()[1] == "1.5×"


def test_models_page_shows_history_rules_and_unjudged_slices(stack: Stack) -> None:
    at = _page("models")
    assert not at.exception, at.exception
    text = _text(at)
    assert "**force-promote** to v2 by ana" in text and "**rollback** to v1" in text
    assert at.selectbox(key="version").value == 2
    frames = [d.value for d in at.dataframe]
    rules = next(f for f in frames if "rule" in f.columns)
    assert "slice origin=EWR" in rules["rule"].tolist() and not rules["passed"].all()
    assert any("min_rows" in f.columns and f["value"].tolist() == ["OO"] for f in frames)
    at.selectbox(key="version").set_value(1).run()
    text = _text(at)
    assert "None recorded for this version." in text  # version 1's record has no unjudged key


def test_models_page_shows_multiclass_metrics_and_the_per_class_table(stack: Stack) -> None:
    at = _page("models")
    at.selectbox(key="model").set_value("penguin_species").run()
    assert not at.exception, at.exception
    frames = {tuple(d.value.columns)[0]: d.value for d in at.dataframe}
    metrics = frames["metric"].set_index("metric")
    assert {"logloss", "accuracy", "macro_f1", "ece", "unseen_class_rows"} <= set(metrics.index)
    assert metrics.loc["unseen_class_rows", "candidate"] > 0 and metrics.loc["unseen_class_rows", "champion"] == 0
    assert 0 < metrics.loc["accuracy", "candidate"] < metrics.loc["accuracy", "champion"] <= 1
    classes = frames["class"].set_index("class")
    assert list(classes.index) == ["Adelie", "Chinstrap", "Gentoo"]
    assert classes["candidate_knows"].tolist() == [True, False, True] and classes["champion_knows"].all()
    assert classes.loc["Chinstrap", "candidate_recall"] == 0 and classes.loc["Gentoo", "candidate_f1"] > 0.5
    rules = frames["rule"].set_index("rule")
    assert not rules.loc["slice species=Chinstrap", "passed"] and rules.loc["slice species=Chinstrap", "bound"] == "max"
    text = _text(at)
    assert "Per class" in text and "champion v1" in text
    at.selectbox(key="model").set_value("flights_arr_delay").run()
    assert "No evaluation record in the MLflow run of this version." in _text(at)
    assert not any("class" in d.value.columns for d in at.dataframe)


def test_capacity_flags_follow_the_inputs(home: str) -> None:
    at = _page("capacity")
    assert not any("hosts" in w.value for w in at.warning)
    at.number_input(key="gpus").set_value(16).run()
    at.toggle(key="dp").set_value(True).run()
    assert any("2 hosts" in w.value for w in at.warning)
    at.number_input(key="params").set_value(7e9).run()
    assert any("shard the model" in w.value for w in at.warning)
    at.number_input(key="a-gpus_per_host").set_value(16).run()
    assert not any("hosts" in w.value for w in at.warning)


def test_serving_page_says_where_the_p99_time_goes(stack: Stack) -> None:
    at = _page("serving")
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert table.loc["write", "p50_ms"] == pytest.approx(45.0)
    assert "most of it in write (waiting on storage (I/O))" in _text(at)


def test_bottlenecks_offers_the_sources_worked_examples_and_numbers_of_ones_own(home: str) -> None:
    at = _page("bottlenecks")  # an empty stack: the examples and one's own numbers need no recorded run
    assert "Nothing recorded yet" in _text(at)
    at.radio(key="source").set_value("A worked example of the source").run()
    at.selectbox(key="example").set_value("straggler").run()
    assert not at.exception, at.exception
    assert at.subheader[0].value.startswith("Verdict: straggler: rank 3, input path")
    assert "the other ranks wait 240 ms per step for it" in _text(at) and "420 ms and spends 250 ms" in _text(at)
    table = at.dataframe[0].value  # the others' sync holds their wait: no 5 ms sync beside a 240 ms wait
    assert table.loc[0, "mean gradient sync"] == 245.0 and table.loc[0, "median step"] == 420.0
    at.radio(key="source").set_value("My own numbers").run()
    at.toggle(key="own-slow").set_value(False).run()
    at.number_input(key="own-compute").set_value(900.0).run()
    assert at.subheader[0].value == "Verdict: compute-bound"
    at.number_input(key="own-compute").set_value(10.0).run()
    at.number_input(key="own-data").set_value(500.0).run()
    assert at.subheader[0].value == "Verdict: input-bound" and "500 of 530 ms per step is data wait" in _text(at)
    assert "(means over the steady steps" in _text(at) and "mean data wait" in at.dataframe[0].value.columns


def test_a_p99_of_a_few_requests_says_it_is_too_few(home: str) -> None:
    from tests.dashboard.conftest import _spans

    _spans(Path(home), requests=3)
    at = _page("serving")
    assert not at.exception, at.exception
    assert any(w.value.startswith("3 requests: too few for a p99, which needs at least 100") for w in at.warning)


def test_the_models_page_links_the_training_run_and_colours_versions_apart(stack: Stack) -> None:
    import json

    at = _page("models")
    text = _text(at)
    assert "[Model version](http://127.0.0.1:5000/#/models/flights_arr_delay/versions/2?" in text
    run = next(line for line in text.split(" · ") if line.startswith("[MLflow run]"))
    assert "/#/experiments/" in run and "/runs/" in run and "/versions/" not in run  # the run, not the version
    (chart,) = [c for c in at.get("plotly_chart") if "Candidate vs champion" in c.proto.spec]
    traces = json.loads(chart.proto.spec)["data"]
    assert sorted(t["name"] for t in traces) == ["v1", "v2"]  # one trace and one colour per version
    assert len({t["marker"]["color"] for t in traces}) == 2 and not any("coloraxis" in t["marker"] for t in traces)


def test_bottlenecks_shows_the_hta_analysis_of_a_profiled_run(stack: Stack) -> None:
    at = _page("bottlenecks")
    at.selectbox(key="bottlenecks-version").set_value("dddd44440123456789").run()
    assert not at.exception, at.exception
    text = _text(at)
    assert "CPU-only trace: HTA's temporal breakdown" in text and "profiled steps [" in text
    assert "No torch.profiler traces" not in text


def test_versions_are_named_by_their_readable_key(stack: Stack) -> None:
    """As every other view names them (``2013-01.aaaa1111``): the run picker and the models tables, never hex."""
    at = _page("bottlenecks")
    at.selectbox(key="bottlenecks-version").set_value("aaaa11110123456789").run()
    picker = at.selectbox(key="bottlenecks-version")
    assert "2013-01.aaaa1111" in picker.options and "aaaa11110123456789" not in picker.options
    at = _page("models")
    versions = next(d.value for d in at.dataframe if "data_version" in d.value.columns)
    assert versions["data_version"].tolist() == ["2013-01.11111111", "2013-02.22222222"]
    assert "data_commit" not in versions.columns
    assert at.selectbox(key="version").options[:2] == ["v2 · 2013-02.22222222", "v1 · 2013-01.11111111"]
    assert "**Gate rejected**: slice origin=EWR: +8.0%" in _text(at)  # the verdict once, no "failed: fail:"


def test_the_serving_page_sets_a_canarys_requests_beside_the_champions(home: str) -> None:
    import json

    lines = []
    for i, (variant, model_ms) in enumerate([("champion", 2)] * 8 + [("canary", 7)] * 4):
        start, trace = i * 10**9, f"{i:032x}"
        lines.append({"trace_id": trace, "span_id": f"{i:016x}", "parent_id": "", "name": "endpoint_request",
                      "start_ns": start, "end_ns": start + model_ms * 10**6, "attributes": {"variant": variant}})
        lines.append({"trace_id": trace, "span_id": f"{i:012x}0001", "parent_id": f"{i:016x}", "name": "model",
                      "start_ns": start, "end_ns": start + model_ms * 10**6, "attributes": {}})
    (Path(home) / "traces").mkdir(parents=True, exist_ok=True)
    (Path(home) / "traces" / "serving.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    at = _page("serving")
    assert not at.exception, at.exception
    per_variant = at.dataframe[0].value
    assert per_variant.loc["canary", "p50_ms"] == pytest.approx(7.0)
    assert per_variant.loc["champion", "p50_ms"] == pytest.approx(2.0)
    at.radio(key="variant").set_value("canary").run()
    assert "4 traced endpoint_request requests answered by the canary" in _text(at)
    assert at.dataframe[1].value.loc["model", "p50_ms"] == pytest.approx(7.0)
