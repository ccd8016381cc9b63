"""infra/dagster.yaml and the Kubernetes instance: Dagster's own schema, each class's config, and what they do.

Loading the compose instance against a real PostgreSQL is in tests/production/test_pipeline_postgres.py.
"""

from __future__ import annotations

import json
import shutil

import kubernetes
import kubernetes_validate
import pytest
import yaml
from dagster._config import process_config
from dagster._core.instance.config import dagster_instance_config
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster._core.storage.dagster_run import DagsterRun
from dagster._utils.tags import TagConcurrencyLimitsCounter
from dagster_docker import DockerRunLauncher
from dagster_k8s import K8sRunLauncher
from dagster_k8s.container_context import K8sContainerContext
from dagster_k8s.job import construct_dagster_k8s_job, get_job_name_from_run_id
from dagster_postgres import DagsterPostgresStorage

from tests.infra.conftest import INFRA, PG_ENV, k8s_instance_yaml, load

IMAGE = "registry.example.com/mlassets@sha256:" + "0" * 64
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.fixture(autouse=True)
def _pg_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in PG_ENV.items():
        monkeypatch.setenv(name, value)


def _processed(cls: type, config: dict) -> dict:
    result = process_config(cls.config_type(), config)
    assert result.success, [e.message for e in result.errors]
    return result.value


@pytest.mark.parametrize("which", ["compose", "k8s"])
def test_each_instance_passes_dagsters_validation_and_each_class_its_own(tmp_path, which: str) -> None:
    if which == "compose":
        shutil.copy(INFRA / "dagster.yaml", tmp_path / "dagster.yaml")
    else:
        (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(k8s_instance_yaml()))
    config, custom_class = dagster_instance_config(str(tmp_path))  # the schema, and the concurrency rules
    assert custom_class is None
    storage = _processed(DagsterPostgresStorage, config["storage"]["postgres"])
    assert storage["postgres_db"]["password"] == PG_ENV["DAGSTER_PG_PASSWORD"]  # from the environment
    assert config["run_coordinator"]["class"] == "QueuedRunCoordinator"
    _processed(QueuedRunCoordinator, config["run_coordinator"]["config"])
    launcher = {"compose": DockerRunLauncher, "k8s": K8sRunLauncher}[which]
    assert config["run_launcher"]["class"] == launcher.__name__
    _processed(launcher, config["run_launcher"]["config"])


def test_both_instances_are_the_same_but_for_the_run_launcher() -> None:
    compose, k8s = load("dagster.yaml"), k8s_instance_yaml()
    assert set(compose) == set(k8s)
    assert {k: v for k, v in compose.items() if k != "run_launcher"} == {
        k: v for k, v in k8s.items() if k != "run_launcher"}


def test_every_credential_comes_from_the_environment() -> None:
    compose = load("dagster.yaml")
    db = compose["storage"]["postgres"]["postgres_db"]
    names = {"hostname": "HOST", "port": "PORT", "db_name": "DB", "username": "USER", "password": "PASSWORD"}
    assert {k: db[k] for k in names} == {k: {"env": f"DAGSTER_PG_{v}"} for k, v in names.items()}
    assert db["scheme"] == "postgresql+psycopg2"  # Dagster's SQL needs psycopg2 (tests/production runs it)
    forwarded = compose["run_launcher"]["config"]["env_vars"]
    assert all("=" not in name for name in forwarded)  # names only: values are never written here
    assert {"DAGSTER_PG_PASSWORD", "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", "MLASSETS_IMAGE_DIGEST"} <= set(forwarded)


def _run(run_id: str, **tags: str) -> DagsterRun:
    return DagsterRun(job_name="flights__pipeline", run_id=run_id, tags=tags)


def test_team_quotas_and_the_gpu_tag_hold_back_only_the_runs_over_their_limit() -> None:
    limits = load("dagster.yaml")["concurrency"]["runs"]["tag_concurrency_limits"]
    busy = [_run(f"a{i}", team="ads") for i in range(3)] + [_run("r0", team="research")]
    counter = TagConcurrencyLimitsCounter(limits, busy)
    assert counter.is_blocked(_run("a3", team="ads"))  # ads has its 3
    assert not counter.is_blocked(_run("s0", team="search"))  # another team is not held back by ads
    assert counter.is_blocked(_run("r1", team="research"))  # research's own quota is 1
    gpu = TagConcurrencyLimitsCounter(limits, [_run(f"g{i}", **{"mlassets/gpu": "true"}) for i in range(2)])
    assert gpu.is_blocked(_run("g2", **{"mlassets/gpu": "true"})) and not gpu.is_blocked(_run("c0"))


def test_gpu_pool_monitoring_and_retries_are_on_with_launchers_that_can_resume() -> None:
    compose = load("dagster.yaml")
    assert compose["concurrency"]["pools"]["granularity"] == "op"  # the gpu pool limits training steps
    monitoring, retries = compose["run_monitoring"], compose["run_retries"]
    assert monitoring["enabled"] and monitoring["max_resume_run_attempts"] > 0 and monitoring["max_runtime_seconds"]
    assert retries["enabled"] and retries["max_retries"] > 0
    for launcher in (DockerRunLauncher(), K8sRunLauncher.__new__(K8sRunLauncher)):
        assert launcher.supports_check_run_worker_health and launcher.supports_resume_run
    compose_text = (INFRA / "docker-compose.yaml").read_text()
    assert "dagster instance concurrency set gpu" in compose_text  # the daemon sizes the gpu pool at start


def test_a_gpu_run_on_kubernetes_is_a_valid_job_with_its_gpus_and_no_secret_values(tmp_path) -> None:
    """What the daemon submits for a run tagged with GPU resources, checked against the Kubernetes schema."""
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    config = {**k8s_instance_yaml()["run_launcher"]["config"], "load_incluster_config": False,
              "kubeconfig_file": str(tmp_path / "kubeconfig")}
    launcher = K8sRunLauncher.from_config_value(None, _processed(K8sRunLauncher, config))
    gpu = {"container_config": {"resources": {"limits": {"nvidia.com/gpu": "1"}}}}
    run = _run("0123abcd-0000-4000-8000-000000000000", **{"dagster-k8s/config": json.dumps(gpu), "team": "ads"})
    context = K8sContainerContext.create_for_run(run, launcher, include_run_tags=True)
    name = get_job_name_from_run_id(run.run_id)
    job = construct_dagster_k8s_job(
        job_config=context.get_k8s_job_config(job_image=IMAGE, run_launcher=launcher),
        args=["dagster", "api", "execute_run", "{}"], job_name=name, pod_name=name, component="run_worker",
        user_defined_k8s_config=context.run_k8s_config, labels={"dagster/run-id": run.run_id})
    body = kubernetes.client.ApiClient().sanitize_for_serialization(job)
    kubernetes_validate.validate(body, kubernetes_validate.latest_version(), strict=True)
    pod = body["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert container["resources"]["requests"]["memory"] == "8Gi"  # the instance's defaults stay under the tag's
    assert {"secretRef": {"name": "mlassets-secrets"}} in container["envFrom"]
    assert pod["serviceAccountName"] == "mlassets-run" and container["securityContext"]["runAsNonRoot"]
    assert PG_ENV["DAGSTER_PG_PASSWORD"] not in json.dumps(body)
