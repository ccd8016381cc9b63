"""The production profile on real services: a PostgreSQL server (Debian's, started here), the fake lakeFS server,
and one small pipeline run whose every credential is set in the environment (``production_run``).

The environment is applied only while a fixture or test needs it (``in_production``), so it never leaks into the
rest of the suite.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import mlflow
import pytest

from mlassets.core.config import PipelineConfig
from mlassets.host.instance import get_instance
from mlassets.host.runs import Run, ingest, run_pipeline
from tests.conftest import small_flights
from tests.core.data.store import fake_lakefs
from tests.production import postgres as pg

ROOT = Path(__file__).resolve().parents[2]
IMAGE_DIGEST = "sha256:" + "ab" * 32
CLEARED = ("MLASSETS_CONFIGS", "MLASSETS_RECORDS", "MLFLOW_REGISTRY_URI", "MLASSETS_DASHBOARD_URL",
           "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_TOKEN", "MLFLOW_S3_ENDPOINT_URL")


@pytest.fixture(scope="session")
def postgres() -> Iterator[pg.Server]:
    """A PostgreSQL server on 127.0.0.1 for the session (skips only when it can be neither found nor installed)."""
    try:
        server = pg.start()
    except pg.Unavailable as exc:
        pytest.skip(f"PostgreSQL: {exc}")
    yield server
    server.stop()


def fake_secrets() -> dict[str, str]:
    """Credentials that exist only to be looked for: each must appear nowhere a run records anything."""
    token = secrets.token_hex(6)
    return {"AWS_SECRET_ACCESS_KEY": f"fake-aws-secret-{token}", "MLFLOW_TRACKING_PASSWORD": f"fake-mlflow-pw-{token}",
            "MINIO_ROOT_PASSWORD": f"fake-minio-pw-{token}", "LAKEFS_ENCRYPT_SECRET_KEY": f"fake-lakefs-enc-{token}"}


def production_env(server: pg.Server, root: Path, lakefs: fake_lakefs.FakeLakeFS) -> dict[str, str]:
    """``MLASSETS_PROFILE=production`` with every service on ``server``, ``lakefs``, and files under ``root``."""
    dagster_home = root / "dagster-home"
    dagster_home.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "infra" / "dagster.yaml", dagster_home / "dagster.yaml")  # the shipped instance, as is
    return {
        "MLASSETS_PROFILE": "production", "MLASSETS_HOME": str(root / "home"), "DAGSTER_HOME": str(dagster_home),
        "DAGSTER_PG_HOST": server.host, "DAGSTER_PG_PORT": str(server.port), "DAGSTER_PG_DB": "dagster",
        "DAGSTER_PG_USER": server.user, "DAGSTER_PG_PASSWORD": server.password,
        "MLFLOW_TRACKING_URI": server.url("mlflow"), "MLASSETS_ARTIFACT_ROOT": (root / "artifacts").as_uri(),
        "MLASSETS_PROMOTION_DB": server.url("promotions"), "MLASSETS_STORE": "lakefs",
        "LAKECTL_SERVER_ENDPOINT_URL": lakefs.url + fake_lakefs.BASE,
        "LAKECTL_CREDENTIALS_ACCESS_KEY_ID": lakefs.credentials[0],
        "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY": lakefs.credentials[1],
        "MLASSETS_LAKEFS_NAMESPACE": "local://production-test/{repo}",
        "MLASSETS_IMAGE_DIGEST": IMAGE_DIGEST,  # as compose and the k8s manifests set it in the image's containers
    }


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[pytest.MonkeyPatch]:
    """``env`` applied (and MLflow's process-wide tracking URI with it); both restored afterwards."""
    previous = mlflow.get_tracking_uri()
    with pytest.MonkeyPatch.context() as patch:
        for name in CLEARED:
            patch.delenv(name, raising=False)
        for name, value in env.items():
            patch.setenv(name, value)
        mlflow.set_tracking_uri(env.get("MLFLOW_TRACKING_URI"))
        try:
            yield patch
        finally:
            mlflow.set_tracking_uri(previous)


def end_active_runs() -> None:
    while mlflow.active_run() is not None:
        with contextlib.suppress(mlflow.exceptions.MlflowException):
            mlflow.end_run()


@dataclass
class ProductionRun:
    env: dict[str, str]
    secrets: list[str]  # every credential value in env: none may be recorded anywhere
    server: pg.Server
    lakefs: fake_lakefs.FakeLakeFS  # this run's own (spec-checked) fake lakeFS server
    instance: dg.DagsterInstance
    cfg: PipelineConfig
    version: str  # the full commit id
    ingest_run_id: str
    run: Run
    root: Path
    key: str = ""  # its partition key


@pytest.fixture(scope="session")
def production_run(postgres: pg.Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProductionRun]:
    """One data version (2013-01, a fifth of its rows) ingested and run through the pipeline in production."""
    root = tmp_path_factory.mktemp("production")
    for db in ("dagster", "mlflow", "promotions"):
        postgres.create_database(db)
    lakefs = fake_lakefs.FakeLakeFS(secret_access_key=f"fake-lakefs-secret-{secrets.token_hex(8)}")
    env = {**production_env(postgres, root, lakefs), **fake_secrets()}
    found = [env[k] for k in ("DAGSTER_PG_PASSWORD", "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", *fake_secrets())]
    with environment(env):
        end_active_runs()
        instance = get_instance()
        cfg = small_flights()
        ingested = ingest(instance, cfg, "2013-01")
        ingest_run = instance.get_runs(limit=1)[0].run_id
        run = run_pipeline(instance, cfg, ingested.key)
        end_active_runs()
    yield ProductionRun(env, found, postgres, lakefs, instance, cfg, ingested.data_version, ingest_run, run, root,
                        ingested.key)
    instance.dispose()
    lakefs.stop()


@pytest.fixture
def in_production(production_run: ProductionRun) -> Iterator[ProductionRun]:
    """The production run's environment, for one test."""
    with environment(production_run.env):
        yield production_run
        end_active_runs()
