"""Names, links and descriptions between Dagster, MLflow and the store; a champion alias moved outside mlassets."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import mlflow
import pytest

from mlassets.core import tracking, ui_urls
from mlassets.core.config import load_config, shipped_configs
from mlassets.core.data.raw import raw_repo
from mlassets.core.data.store import open_store
from mlassets.core.registry import versions
from mlassets.core.registry.record import RegisteredVersion
from mlassets.defs import display, lookup, registry, verdict
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.resources import StoreResource
from tests.core.registry.test_promotion import _SHARED, Registry, record, reg  # noqa: F401 (the fixture)

FLIGHTS = load_config(shipped_configs()["flights"])
COMMIT = "6870220f874e" + "0" * 52
REJECTED = "slice carrier=UA: MAE 40.1 vs champion 30.2 (+33.0%, limit +3%)"


@pytest.fixture
def urls(home: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLASSETS_UI_URLS", "dagster=http://127.0.0.1:3999/ mlflow=http://127.0.0.1:5999")


def test_run_tags_and_metadata_name_a_version_by_the_partition_its_commit_added(home: str) -> None:
    store = open_store("local", root=str(Path(home) / "store"))
    store.create_repo(raw_repo(FLIGHTS))
    commit = store.commit(raw_repo(FLIGHTS), "main", {"months/2013-03.parquet": b"x"}, "ingest 2013-03",
                          {"partition": "2013-03"})
    tags = lookup.version_run_tags(FLIGHTS, commit.id, store)
    assert tags == {"mlassets/dataset": "flights", "mlassets/version_name": f"2013-03 · {commit.id[:8]}",
                    "mlassets/partitions": "2013-03", "mlassets/data_commit": commit.id}
    assert lookup.version_metadata(store, FLIGHTS, commit.id)["data_version_name"] == tags["mlassets/version_name"]
    assert lookup.version_run_tags(FLIGHTS, commit.id, partitions=["2013-03"]) == tags  # a sensor knows them
    unknown = lookup.version_metadata(store, FLIGHTS, COMMIT)  # not in the store: the short id alone
    assert unknown == {"data_version_name": "6870220f", "data_version_key": "data.6870220f", "partitions_added": "-"}
    named = lookup.version_metadata(store, FLIGHTS, commit.id)
    assert named["data_version_key"] == f"2013-03.{commit.id[:8]}"  # the partition key Dagster lists


def test_mlflow_links_use_the_configured_ui(urls: None) -> None:
    links = lookup.mlflow_links("r1", "7", model="flights arr", version="3")
    view = "?workflowType=machine_learning"  # MLflow 3.17 opens what the reader chose last (GenAI at first)
    assert links["mlflow_run"].value == f"http://127.0.0.1:5999/#/experiments/7/runs/r1{view}"
    assert links["model_version"].value == f"http://127.0.0.1:5999/#/models/flights%20arr/versions/3{view}"
    assert lookup.mlflow_links("r1")["mlflow_run"].value == "http://127.0.0.1:5999/#/runs/r1"
    assert tracking.experiment_url("7").endswith("/#/experiments/7/runs?workflowType=machine_learning")


def test_without_a_configured_ui_an_mlflow_server_is_its_own_ui(home: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLASSETS_UI_URLS", raising=False)
    monkeypatch.setattr(mlflow, "get_tracking_uri", lambda: "http://mlflow:5000/")
    assert tracking.ui_url() == "http://mlflow:5000"
    monkeypatch.setattr(mlflow, "get_tracking_uri", lambda: "sqlite:///x/mlflow.db")
    assert tracking.ui_url() == "http://127.0.0.1:5000"
    ui_urls.save("http://127.0.0.1:3917", "http://127.0.0.1:5917", "http://127.0.0.1:8517")  # what `ui` does
    monkeypatch.setattr(mlflow, "get_tracking_uri", lambda: "http://mlflow:5000/")
    assert tracking.ui_url() == "http://127.0.0.1:5917"  # the setting names where people open it


def test_store_links_open_the_lakefs_commit_page_or_the_local_folder(home: str) -> None:
    lakefs = SimpleNamespace(backend="lakefs", settings=SimpleNamespace(endpoint="http://127.0.0.1:8000/api/v1"))
    link = lookup.store_link(lakefs, "flights", COMMIT)
    assert isinstance(link, dg.UrlMetadataValue)
    assert link.value == f"http://127.0.0.1:8000/repositories/flights/commits/{COMMIT}"
    local = lookup.store_link(open_store("local", root=str(Path(home) / "store")), "flights", COMMIT)
    assert isinstance(local, dg.PathMetadataValue) and local.value == str(Path(home) / "store")


def test_mlflow_runs_are_named_after_the_version_and_link_back_to_dagster(urls: None) -> None:
    tags = lookup.mlflow_run_tags("c4034bee-8588", "flights", "2013-03 · 6870220f")
    assert tags["mlflow.runName"] == "flights · 2013-03 · 6870220f"
    assert tags["dagster_run_url"] == "http://127.0.0.1:3999/runs/c4034bee-8588"
    assert "[c4034bee](http://127.0.0.1:3999/runs/c4034bee-8588)" in tags["mlflow.note.content"]
    assert tags["mlflow.note.content"].startswith("flights · 2013-03 · 6870220f: ")  # no raw ** where it is listed
    run = dg.DagsterRun(job_name="flights_pipeline", run_id="r-2", tags={"mlassets/dataset": "flights",
                                                                          "mlassets/version_name": "2013-01 · ab"})
    assert lookup.tags_for_dagster_run(run)["mlflow.runName"] == "flights · 2013-01 · ab"
    bare = lookup.tags_for_dagster_run(dg.DagsterRun(job_name="flights_pipeline", run_id="r-3"))
    assert "mlflow.runName" not in bare and bare["dagster_run_url"].endswith("/runs/r-3")  # launched by hand


def test_a_version_description_names_the_data_the_verdict_and_the_run() -> None:
    rejected = versions.describe(record(False), "2013-03 · aaaaaaaa", "http://127.0.0.1:3000/runs/dagster-run")
    first = rejected.splitlines()[0]  # MLflow's versions table shows it as plain text: the verdict, no markdown
    assert first == f"flights · 2013-03 · aaaaaaaa: gate rejected it against absolute thresholds: {REJECTED}."
    assert f"Failed rules:\n- {REJECTED}" in rejected and "**" not in rejected
    assert rejected.endswith("Registered by Dagster run [dagster-](http://127.0.0.1:3000/runs/dagster-run).")
    passed = versions.describe(record(True), "2013-02 · aaaaaaaa")
    assert passed.startswith("flights · 2013-02 · aaaaaaaa: gate passed against absolute thresholds.")
    assert "Registered by Dagster run dagster-run." in passed


def test_the_gate_check_and_the_failure_lead_with_the_reasons() -> None:
    gate = record(False).gate_result
    result = verdict.gate_check_result(gate, "2013-03 · 6870220f")
    assert not result.passed and result.description == f"2013-03 · 6870220f: {REJECTED}"
    assert result.metadata["verdict"].value == "rejected"
    rows = result.metadata["failed_rules"].records
    assert [(r.data["rule"], r.data["value"], r.data["limit"]) for r in rows] == [("slice carrier=UA", 0.33, 0.03)]
    text = registry.rejection("m", "3", "2013-03 · 6870220f", gate, "2")
    assert text == f"gate rejected 2013-03 · 6870220f: {REJECTED}. m version 3 has no passing gate result; the " \
                   "champion stays v2."


def test_metadata_numbers_are_rounded_for_display_only() -> None:
    assert display.number(19.31737020425067).value == 19.3174
    assert display.number(0.000123456).value == 0.0001235  # small numbers keep 4 significant digits
    assert display.rounded({"a": [1.23456789, float("nan")], "b": 3}) == {"a": [1.2346, None], "b": 3}


def test_registration_describes_the_version_and_links_the_dagster_run(reg: Registry) -> None:  # noqa: F811
    url = "http://127.0.0.1:3000/runs/dagster-run"
    rec = record(False, _SHARED["weights"])
    made = versions.register(reg.name, reg.uri, rec, description=versions.describe(rec, "2013-03 · aaaaaaaa", url),
                             links={lookup.DAGSTER_URL_TAG: url, lookup.MLFLOW_VERSION_NAME_TAG: "2013-03 · aaaaaaaa"})
    stored = versions.get_version(reg.name, made.version)
    assert REJECTED in stored.description and url in stored.description
    assert stored.tags["dagster_run_url"] == url and stored.tags["mlassets.version_name"] == "2013-03 · aaaaaaaa"
    assert versions.record_of(stored) == rec.read_back()  # the record reads back (its verdict) beside the links


def test_an_alias_moved_outside_mlassets_is_reported_by_history_and_set_back_by_the_champion_asset(
    reg: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
) -> None:
    from mlassets.cli import main
    from mlassets.core.registry import promote

    reg.add(True, True)
    promote.promote(reg.name, "1")
    mlflow.MlflowClient().set_registered_model_alias(reg.name, "champion", "2")  # MLflow's own "Promote" button
    assert main(["history", "--model", reg.name]) == 1
    assert "points at v2 but the promotion log says v1" in capsys.readouterr().out

    cfg = dataclasses.replace(FLIGHTS, model=dataclasses.replace(FLIGHTS.model, registered_name=reg.name))
    champion = registry.build(cfg, DatasetKeys.of(cfg))[1]
    registered = RegisteredVersion(name=reg.name, version="1", record=record(True, _SHARED["weights"]))
    store = StoreResource(root=str(tmp_path / "store"))
    with dg.build_asset_context(partition_key="a" * 64, resources={"store": store, "mlflow": None}) as context:
        [output] = list(champion(context, registered))
    assert output.value.note == "already champion" and reg.champion() == "1"  # set back from the log
    assert "points at v2 but the promotion log says v1" in output.metadata["alias_disagreement"].value
    assert "dagster - WARNING" in capsys.readouterr().err  # in the run's log, not only the library's logger
    assert f"/#/models/{reg.name}/versions/1?" in output.metadata["model_version"].value
    assert main(["history", "--model", reg.name]) == 0


def test_the_experiment_is_of_the_training_kind_even_when_made_before(reg: Registry) -> None:  # noqa: F811
    experiment = mlflow.get_experiment_by_name(tracking.EXPERIMENT)
    assert experiment.tags[tracking.KIND_TAG] == "custom_model_development"  # not MLflow's GenAI view
    mlflow.MlflowClient().delete_experiment_tag(experiment.experiment_id, tracking.KIND_TAG)
    tracking.configure()
    assert mlflow.get_experiment(experiment.experiment_id).tags[tracking.KIND_TAG] == "custom_model_development"
