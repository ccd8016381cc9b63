"""An MLflow server whose artifacts live in S3: moto's standalone S3 server on 127.0.0.1 stands in for MinIO, the
``mlflow server`` subprocess writes to it through boto3 (``--artifacts-destination s3://...``), and the client (in the
production profile, with no S3 credentials of its own) logs, registers and loads an mlassets model by alias.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import mlflow
import pytest

from mlassets.cli import doctor as cli_doctor
from mlassets.cli.ui import _answers
from mlassets.core import tracking
from mlassets.core.registry import peek
from mlassets.core.registry import versions as registry
from mlassets.core.registry.projection import ANCHOR_TAG
from mlassets.core.train import mlflow_model
from mlassets.core.train.artifact import save_bundle, weights_sha256
from tests.core.registry import test_promotion as shared
from tests.production.conftest import end_active_runs

pytestmark = pytest.mark.e2e  # a moto S3 server and an MLflow server in processes of their own: 40 s
BUCKET = "mlflow-artifacts"
S3_ENV = {"AWS_ACCESS_KEY_ID": "AKIAFAKEMLASSETSS3ID", "AWS_SECRET_ACCESS_KEY": "fake-s3-secret-never-logged",
          "AWS_DEFAULT_REGION": "us-east-1"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve(command: list[str], env: dict[str, str], health: str, log: Path, timeout_s: float = 180) -> subprocess.Popen:
    """Start a server; return once ``health`` answers 200 (or fail with its log)."""
    with log.open("w") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while not _answers(health):
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            pytest.fail(f"{command[0]} did not come up:\n{log.read_text()[-2000:]}")
        time.sleep(0.3)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # its own session: the server and its workers
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def s3_mlflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``(tracking_uri, s3_endpoint)``: moto's S3 server and an MLflow server storing artifacts in it."""
    root = tmp_path_factory.mktemp("s3-mlflow")
    bin_dir = Path(sys.executable).parent
    s3_port, mlflow_port = _free_port(), _free_port()
    endpoint = f"http://127.0.0.1:{s3_port}"
    env = {**os.environ, **S3_ENV, "MLFLOW_S3_ENDPOINT_URL": endpoint}
    moto = _serve([str(bin_dir / "moto_server"), "-H", "127.0.0.1", "-p", str(s3_port)], env,
                  f"{endpoint}/moto-api/", root / "moto.log")
    try:
        boto3.client("s3", endpoint_url=endpoint, **_credentials()).create_bucket(Bucket=BUCKET)
        server = _serve([str(bin_dir / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
                         "--artifacts-destination", f"s3://{BUCKET}/", "--serve-artifacts", "--host", "127.0.0.1",
                         "--port", str(mlflow_port), "--workers", "1"],
                        env, f"http://127.0.0.1:{mlflow_port}/health", root / "mlflow.log")
        try:
            yield f"http://127.0.0.1:{mlflow_port}", endpoint
        finally:
            _stop(server)
    finally:
        _stop(moto)


def _credentials() -> dict[str, str]:
    return {"aws_access_key_id": S3_ENV["AWS_ACCESS_KEY_ID"], "aws_secret_access_key": S3_ENV["AWS_SECRET_ACCESS_KEY"],
            "region_name": S3_ENV["AWS_DEFAULT_REGION"]}


@pytest.fixture
def client_env(s3_mlflow, monkeypatch, tmp_path) -> str:
    """The production profile pointed at the server; the client itself holds no S3 setting or credential."""
    uri, _ = s3_mlflow
    for name in (*S3_ENV, "MLFLOW_S3_ENDPOINT_URL", "MLASSETS_ARTIFACT_ROOT", "MLFLOW_REGISTRY_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLASSETS_PROFILE", "production")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLASSETS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MLASSETS_PROMOTION_DB", f"sqlite:///{tmp_path / 'promotions.db'}")  # registration history
    end_active_runs()
    previous = mlflow.get_tracking_uri()
    yield uri
    end_active_runs()
    mlflow.set_tracking_uri(previous)  # the server stops with this module: leave no one pointed at it


def test_a_model_logged_through_the_server_lands_in_s3_and_loads_back_by_alias(s3_mlflow, client_env, tmp_path,
                                                                              monkeypatch):
    _, endpoint = s3_mlflow
    experiment = mlflow.get_experiment(tracking.configure(experiment=f"s3-{uuid.uuid4().hex[:8]}"))
    assert experiment.artifact_location.startswith("mlflow-artifacts:/")  # the server's store, not a local path
    bundle = shared.tiny_bundle()
    bundle_dir = save_bundle(bundle, tmp_path / "bundle")
    rows = shared.flights_rows(32, seed=3)
    with mlflow.start_run() as run:
        model_uri = mlflow_model.log_model(bundle_dir, rows)
    name = f"s3-model-{uuid.uuid4().hex[:8]}"
    record = shared.record(True, weights_sha256(bundle_dir))  # loading checks the weights against it
    version = registry.register(name, model_uri, record).version  # as the platform does: bound in its history
    mlflow.MlflowClient().set_registered_model_alias(name, "champion", version)

    loaded = mlflow.pyfunc.load_model(f"models:/{name}@champion")  # downloaded from S3 through the server
    features = rows[[*bundle.preprocessor.categorical, *bundle.preprocessor.numeric]]
    assert list(loaded.predict(features)) == list(bundle.predict(features))

    s3 = boto3.client("s3", endpoint_url=endpoint, **_credentials())
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    assert any(k.startswith(f"{experiment.experiment_id}/") and k.endswith("/MLmodel") for k in keys), keys
    assert any(k.endswith("weights.pt") for k in keys)
    weights = next(k for k in keys if k.endswith("weights.pt"))
    assert s3.get_object(Bucket=BUCKET, Key=weights)["Body"].read() == (bundle_dir / "weights.pt").read_bytes()
    assert mlflow.get_run(run.info.run_id).info.artifact_uri.startswith("mlflow-artifacts:/")


def test_doctor_finds_the_server_its_registry_and_its_artifact_store(client_env, monkeypatch) -> None:
    # what is found, not how fast: the doctor's 3-s call timeout was missed once on a loaded 2-core CI run (the
    # server listing its S3 store); that a call past the deadline is reported unreachable is test_settings' test
    monkeypatch.setattr(cli_doctor, "TIMEOUT_S", 30.0)
    reports = {r.service: r for r in cli_doctor.run_checks(deadline_s=120.0)}
    for service in ("MLflow tracking", "MLflow registry", "artifact store"):
        assert reports[service].status == cli_doctor.OK, reports[service]
    assert reports["MLflow tracking"].version == f"MLflow server {mlflow.__version__}"
    assert "proxied by the MLflow server" in reports["artifact store"].version
    assert reports["Dagster instance"].status == cli_doctor.UNSET  # DAGSTER_HOME is not set: named, not probed


def test_registry_register_works_against_an_mlflow_server(client_env, tmp_path) -> None:
    tracking.configure(experiment=f"s3-{uuid.uuid4().hex[:8]}")
    bundle_dir = save_bundle(shared.tiny_bundle(), tmp_path / "bundle")
    with mlflow.start_run():
        model_uri = mlflow_model.log_model(bundle_dir)
    name = f"s3-model-{uuid.uuid4().hex[:8]}"
    version = registry.register(name, model_uri, shared.record(True, weights_sha256(bundle_dir)))
    assert version.version == "1"
    assert mlflow.pyfunc.load_model(f"models:/{name}/1") is not None  # the server resolves the version's source
    registry.set_alias(name, registry.CHAMPION, "1")
    mlflow.MlflowClient().set_registered_model_tag(name, ANCHOR_TAG, "1:abc")
    seen = peek.read_model(name)  # the server's REST API, without MLflow's client (what `history` reads)
    assert seen.aliases == {"champion": "1"} and seen.tags[ANCHOR_TAG] == "1:abc"
    assert peek.read_model(f"{name}-missing") is None
