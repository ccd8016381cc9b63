"""The one switch (``MLASSETS_PROFILE``): embedded needs nothing and changes nothing; production takes every service
from the environment and refuses to start naming each missing variable, never a value. Plus ``mlassets doctor``
on the embedded stack, and secret masking.
"""

from __future__ import annotations

import shutil
import threading

import pytest

from mlassets.cli import main
from mlassets.core import paths, settings
from mlassets.core.data.store import default_backend
from mlassets.core.registry.promotion import default_url
from mlassets.defs.resources import default_resources
from mlassets.host.instance import get_instance, prepare_home
from tests.infra.conftest import INFRA

SERVICE_VARS = ("MLASSETS_PROFILE", "DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_ARTIFACT_ROOT", "MLASSETS_STORE",
                "MLASSETS_PROMOTION_DB", *settings.LAKEFS_ENV, "DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_DB",
                "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "MLFLOW_REGISTRY_URI", "DAGSTER_WEBSERVER_URL",
                "MLASSETS_DASHBOARD_URL")
SECRET = "s3cr3t-value-that-must-not-print"


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, home: str) -> None:
    for name in SERVICE_VARS:
        monkeypatch.delenv(name, raising=False)


def test_embedded_is_the_default_and_needs_nothing(home: str) -> None:
    assert settings.check() == "embedded" and settings.missing() == [] and settings.problems() == []
    assert paths.mlflow_tracking_uri() == f"sqlite:///{home}/mlflow.db"
    assert paths.mlflow_artifact_root().endswith("/mlassets-home/mlartifacts")
    assert default_url() == f"sqlite:///{home}/promotions.db" and default_backend() == "local"
    assert "store" in default_resources()


def test_a_profile_that_does_not_exist_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLASSETS_PROFILE", "staging")
    with pytest.raises(settings.SettingsError, match="MLASSETS_PROFILE='staging' is not a profile"):
        settings.check()


def _production(monkeypatch: pytest.MonkeyPatch, tmp_path, **env: str) -> None:
    monkeypatch.setenv("MLASSETS_PROFILE", "production")
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def test_production_with_nothing_set_names_every_missing_variable_and_no_value(monkeypatch, tmp_path) -> None:
    _production(monkeypatch, tmp_path, DAGSTER_PG_PASSWORD=SECRET, LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY=SECRET)
    with pytest.raises(settings.SettingsError) as error:
        settings.check()
    message = str(error.value)
    for name in ("DAGSTER_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_PROMOTION_DB", "LAKECTL_SERVER_ENDPOINT_URL",
                 "LAKECTL_CREDENTIALS_ACCESS_KEY_ID"):
        assert name in message
    assert "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY" not in message  # it is set
    assert SECRET not in message
    for call in (paths.mlflow_tracking_uri, default_url, get_instance, default_resources):
        with pytest.raises(settings.SettingsError, match="MLFLOW_TRACKING_URI"):
            call()
    assert default_backend() == "lakefs"  # production's store, unless MLASSETS_STORE says otherwise


def test_production_reads_each_service_from_the_environment(monkeypatch, tmp_path) -> None:
    dagster_home = tmp_path / "dagster-home"
    dagster_home.mkdir()
    shutil.copy(INFRA / "dagster.yaml", dagster_home / "dagster.yaml")
    _production(monkeypatch, tmp_path, DAGSTER_HOME=str(dagster_home), MLFLOW_TRACKING_URI="http://mlflow:5000",
                MLASSETS_PROMOTION_DB="postgresql://u:pw@db:5432/mlassets", MLASSETS_STORE="local")
    assert settings.missing() == ["DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_DB", "DAGSTER_PG_USER",
                                  "DAGSTER_PG_PASSWORD"]  # what that dagster.yaml names, in its order
    for name in settings.missing():
        monkeypatch.setenv(name, "x")
    assert settings.check() == "production"
    assert paths.mlflow_tracking_uri() == "http://mlflow:5000"
    assert paths.mlflow_artifact_root() == ""  # the server's own artifact store
    assert default_url() == "postgresql://u:pw@db:5432/mlassets" and default_backend() == "local"
    assert prepare_home() == str(dagster_home)
    assert (dagster_home / "dagster.yaml").read_text() == (INFRA / "dagster.yaml").read_text()  # left as it is
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "postgresql://u:pw@db:5432/mlflow")  # no server to keep artifacts
    assert settings.missing() == ["MLASSETS_ARTIFACT_ROOT"]
    monkeypatch.setenv("MLASSETS_ARTIFACT_ROOT", "s3://mlflow/")
    assert paths.mlflow_artifact_root() == "s3://mlflow/"


def test_production_refuses_a_sqlite_dagster_instance(monkeypatch, tmp_path) -> None:
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    _production(monkeypatch, tmp_path, DAGSTER_HOME=str(tmp_path), MLFLOW_TRACKING_URI="http://m:5000",
                MLASSETS_PROMOTION_DB="postgresql://db/x", MLASSETS_STORE="local")
    assert settings.missing() == []
    assert any("sqlite" in p and "PostgreSQL" in p for p in settings.problems())
    with pytest.raises(settings.SettingsError, match="needs PostgreSQL"):
        prepare_home()


def test_cli_commands_refuse_with_the_missing_names(monkeypatch, tmp_path, capsys) -> None:
    _production(monkeypatch, tmp_path)
    assert main(["history"]) == 2
    assert "MLASSETS_PROFILE=production needs these variables set: DAGSTER_HOME" in capsys.readouterr().err


def test_secrets_are_masked_wherever_they_would_be_shown(monkeypatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_PASSWORD", SECRET)
    monkeypatch.setenv("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", "AKIAKEYID")  # an id, not a secret
    assert settings.mask_url("postgresql+psycopg2://u:p%40ss@db:5432/x") == "postgresql+psycopg2://u:***@db:5432/x"
    assert settings.mask_url("http://mlflow:5000") == "http://mlflow:5000"
    assert SECRET in settings.secret_values() and "AKIAKEYID" not in settings.secret_values()
    text = f"failed: {SECRET} at https://bob:hunter22@host/x"
    assert settings.redact(text) == "failed: *** at https://bob:***@host/x"


def test_doctor_on_the_embedded_stack_reports_each_service_and_exits_0(monkeypatch, capsys, home) -> None:
    monkeypatch.setenv("DAGSTER_WEBSERVER_URL", f"http://admin:{SECRET}@127.0.0.1:1")  # nothing listens there
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    lines = {line.split("  ")[0]: line for line in out.splitlines()[3:] if line.strip()}
    assert "profile embedded" in out and SECRET not in out
    for service in ("Dagster instance", "MLflow tracking", "MLflow registry", "artifact store", "versioned store",
                    "promotion log"):
        assert " reachable " in lines[service] and home in lines[service], lines[service]
    assert "UNREACHABLE" in lines["Dagster webserver"] and "admin:***@127.0.0.1:1" in lines["Dagster webserver"]
    assert "not configured" in lines["dashboard"]
    monkeypatch.delenv("DAGSTER_WEBSERVER_URL")
    assert main(["doctor"]) == 0


def test_doctor_gives_up_on_a_check_that_does_not_answer(monkeypatch) -> None:
    from mlassets.cli import doctor as cli_doctor

    release = threading.Event()

    def hangs(report: cli_doctor.Report) -> None:
        release.wait(30)

    def answers(report: cli_doctor.Report) -> None:
        report.configured, report.version = "here", "1.0"

    monkeypatch.setattr(cli_doctor, "CHECKS", [("stuck", hangs), ("fine", answers)])
    try:
        stuck, fine = cli_doctor.run_checks(deadline_s=0.3)
    finally:
        release.set()
    assert (stuck.status, stuck.detail) == (cli_doctor.DOWN, "no answer within 0.3 s")
    assert (fine.status, fine.version) == (cli_doctor.OK, "1.0")
