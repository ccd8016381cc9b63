"""The pipeline in the production profile: Dagster storage (the shipped infra/dagster.yaml), the MLflow backend store
and the promotion log on a real PostgreSQL, the store on the (spec-checked) fake lakeFS.
"""

from __future__ import annotations

import dagster as dg
import pytest
from dagster._core.run_coordinator import QueuedRunCoordinator

from mlassets.cli import main
from mlassets.core import lineage
from mlassets.core.evaluate.gate import GateResult
from mlassets.defs.keys import DatasetKeys
from tests.production.conftest import IMAGE_DIGEST, ProductionRun

pytestmark = pytest.mark.e2e


def _rows(run: ProductionRun, db: str, sql: str, *args: object) -> list[tuple]:
    with run.server.connect(db) as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def test_the_shipped_instance_runs_on_postgres_with_its_queue_and_monitoring(production_run: ProductionRun) -> None:
    instance = production_run.instance
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
    assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
    assert isinstance(instance.run_coordinator, QueuedRunCoordinator)
    assert type(instance.run_launcher).__name__ == "DockerRunLauncher"  # built lazily: no Docker needed to load it
    assert instance.run_monitoring_enabled and instance.run_retries_enabled
    assert instance.run_monitoring_max_resume_run_attempts == 2


def test_runs_materializations_and_check_results_are_rows_in_postgres(production_run: ProductionRun) -> None:
    run = production_run.run
    assert run.success, run.failure
    statuses = dict(_rows(production_run, "dagster", "SELECT run_id, status FROM runs"))
    assert statuses == {production_run.ingest_run_id: "SUCCESS", run.run_id: "SUCCESS"}
    events = dict(_rows(production_run, "dagster", "SELECT dagster_event_type, count(*) FROM event_logs "
                        "WHERE run_id = %s GROUP BY dagster_event_type", run.run_id))
    keys = DatasetKeys.of(production_run.cfg)
    assert events["ASSET_MATERIALIZATION"] >= len(run.materialized) >= 6
    assert {keys.gate_result, keys.champion} <= run.materialized
    assert events["ASSET_CHECK_EVALUATION"] >= 1
    checks = production_run.instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(keys.snapshot, "schema")])
    assert checks and checks[dg.AssetCheckKey(keys.snapshot, "schema")].run_id == run.run_id


def test_the_gate_decision_and_the_promotion_land_in_postgres(production_run: ProductionRun, in_production) -> None:
    keys = DatasetKeys.of(production_run.cfg)
    gate = production_run.run.record(keys.gate_result, production_run.key)
    assert isinstance(gate, GateResult) and gate.passed  # the first version, on absolute thresholds
    name = production_run.cfg.model.registered_name
    tags = dict(_rows(production_run, "mlflow", "SELECT key, value FROM model_version_tags WHERE name = %s "
                      "AND version = 1", name))
    assert tags["gate_passed"] == "true" and tags["data_commit"] == production_run.version
    assert tags["dagster_run_id"] == production_run.run.run_id
    assert tags["image_digest"] == IMAGE_DIGEST and tags["lock_hash"] == lineage.lock_hash()  # beside the commit
    promotions = _rows(production_run, "promotions", "SELECT model, seq, action, from_version, to_version, who "
                       "FROM promotions ORDER BY seq")
    assert promotions == [(name, 1, "promote", None, "1", f"dagster run {production_run.run.run_id}")]
    aliases = _rows(production_run, "mlflow", "SELECT alias, version FROM registered_model_aliases WHERE name = %s",
                    name)
    assert ("champion", 1) in aliases


def test_the_data_version_is_a_lakefs_commit(production_run: ProductionRun, in_production) -> None:
    from mlassets.core.data.store import open_store

    store = open_store()
    assert store.backend == "lakefs"
    assert production_run.version in {c.id for repo in store.list_repos() for c in store.log(repo, "main")}
    problems = production_run.lakefs.take_problems()
    assert not problems, problems


def test_doctor_reports_every_service_reachable_with_its_version(in_production, capsys) -> None:
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    lines = {line.split("  ")[0]: line for line in out.splitlines()[3:] if line.strip()}
    for service in ("Dagster instance", "MLflow tracking", "MLflow registry", "artifact store", "versioned store",
                    "promotion log"):
        assert " reachable " in lines[service], lines[service]
    assert "PostgreSQL 15" in lines["Dagster instance"] and "dagster 1.13" in lines["Dagster instance"]
    assert "PostgreSQL" in lines["MLflow tracking"] and "PostgreSQL" in lines["promotion log"]
    assert "lakeFS fake" in lines["versioned store"]  # what the (fake) server says its version is
    assert f"mlassets:***@127.0.0.1:{in_production.server.port}/dagster" in lines["Dagster instance"]
    for secret in in_production.secrets:
        assert secret not in out


def test_doctor_names_an_unreachable_service_and_exits_1(in_production, monkeypatch, capsys) -> None:
    monkeypatch.setenv("DAGSTER_PG_PORT", "1")  # nothing listens there
    monkeypatch.setenv("MLASSETS_PROMOTION_DB", in_production.server.url("promotions").replace(
        f":{in_production.server.port}/", ":1/"))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    lines = {line.split("  ")[0]: line for line in out.splitlines()[3:] if line.strip()}
    assert "UNREACHABLE" in lines["Dagster instance"] and "UNREACHABLE" in lines["promotion log"]
    assert " reachable " in lines["MLflow tracking"]
    assert in_production.server.password not in out
