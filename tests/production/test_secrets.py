"""Credentials in the environment of a whole production run (the PostgreSQL password, the lakeFS secret key, fake
AWS/MLflow/MinIO/lakeFS secrets) appear nowhere the run recorded anything: Dagster's event log and runs, MLflow
(params, tags, metrics, model versions), the store's commits, the records and every file written, every row of the
three databases, and the dashboard's pages.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import mlflow
import pytest
from dagster._serdes import serialize_value
from streamlit.testing.v1 import AppTest

from mlassets.core.data.store import open_store
from tests.production.conftest import ProductionRun

pytestmark = pytest.mark.e2e
DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"


def leaked(text: str, secrets: list[str]) -> list[str]:
    """Which secrets ``text`` holds (named by their first characters, never printed whole)."""
    return [f"{s[:4]}…" for s in secrets if s in text]


def test_the_run_had_the_credentials_it_must_not_record(production_run: ProductionRun) -> None:
    assert len(production_run.secrets) == 6 and all(len(s) >= 16 for s in production_run.secrets)
    assert production_run.run.success  # what is scanned below is a complete run


def test_no_credential_in_dagsters_event_log_or_runs(production_run: ProductionRun) -> None:
    instance = production_run.instance
    runs = instance.get_runs()
    assert {r.run_id for r in runs} == {production_run.ingest_run_id, production_run.run.run_id}
    for run in runs:
        events = instance.all_logs(run.run_id)
        assert len(events) > 10
        text = serialize_value(run) + "".join(serialize_value(e) for e in events)
        assert not leaked(text, production_run.secrets), run.run_id


def test_no_credential_in_mlflow_runs_or_model_versions(in_production: ProductionRun) -> None:
    client = mlflow.MlflowClient()
    experiments = client.search_experiments()
    runs = [r for e in experiments for r in client.search_runs([e.experiment_id])]
    assert runs and any(r.data.params for r in runs)
    for run in runs:
        text = repr((run.data.params, run.data.tags, run.data.metrics, run.info.artifact_uri, run.info.run_name))
        assert not leaked(text, in_production.secrets), run.info.run_id
    versions = [v for m in client.search_registered_models() for v in client.search_model_versions(f"name='{m.name}'")]
    assert versions
    for version in versions:
        text = repr((version.tags, version.source, version.description, version.run_link))
        assert not leaked(text, in_production.secrets), version.version


def test_no_credential_in_the_stores_commits(in_production: ProductionRun) -> None:
    store = open_store()
    commits = [c for repo in store.list_repos() for branch in store.list_branches(repo)
               for c in store.log(repo, branch)]
    assert any(c.metadata for c in commits)
    for commit in commits:
        assert not leaked(repr((commit.message, commit.metadata)), in_production.secrets), commit.id


def test_no_credential_in_any_file_the_run_wrote(production_run: ProductionRun) -> None:
    files = [p for p in production_run.root.rglob("*") if p.is_file()]
    assert any("records" in p.parts for p in files) and any(p.name == "MLmodel" for p in files)
    secrets = [s.encode() for s in production_run.secrets]
    holding = [str(p.relative_to(production_run.root)) for p in files if any(s in p.read_bytes() for s in secrets)]
    assert not holding


def test_no_credential_in_any_row_of_the_three_databases(production_run: ProductionRun) -> None:
    server = production_run.server
    env = {**os.environ, "PGPASSWORD": server.password}
    for db in ("dagster", "mlflow", "promotions"):
        dump = subprocess.run([str(server.bindir / "pg_dump"), "--data-only", "-h", server.host, "-p", str(server.port),
                               "-U", server.user, db], env=env, capture_output=True, text=True, timeout=120, check=True)
        assert "COPY public." in dump.stdout
        assert not leaked(dump.stdout, production_run.secrets), db


@pytest.mark.parametrize(("page", "key"), [("models", None), ("bottlenecks", "bottlenecks-version")])
def test_no_credential_on_the_dashboards_pages(in_production: ProductionRun, page: str, key: str | None) -> None:
    at = AppTest.from_file(str(DASHBOARD / "app_pages" / f"{page}.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    shown = [str(getattr(e, "value", "")) + str(getattr(e, "proto", "")) for e in at.main]
    shown += [e.value.to_csv() for e in at.dataframe]
    text = "\n".join(shown)
    assert "Nothing recorded yet" not in text  # the page shows the production run
    assert not leaked(text, in_production.secrets)
