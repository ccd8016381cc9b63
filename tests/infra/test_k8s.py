"""infra/k8s: every manifest (and every rendered training shape) against the Kubernetes JSON schema (strict, from
kubernetes-validate), the torchrun rendezvous across pods, and the settings each pod gets. No cluster runs here.
"""

from __future__ import annotations

import json

import kubernetes_validate
import pytest
import yaml

from mlassets.core import settings
from tests.infra.conftest import INFRA, load_all, render_module, valid_k8s

MANIFESTS = ["k8s/dagster-instance.yaml", "k8s/dagster.yaml", "k8s/train-multinode.yaml", "k8s/mlflow.yaml"]
IMAGE = "registry.example.com/mlassets@sha256:" + "1" * 64
JOB = "/var/lib/mlassets/work/flights/train/abc/job.json"


render_training = render_module("render_training")


@pytest.mark.parametrize("manifest", MANIFESTS)
def test_every_manifest_is_valid_kubernetes(manifest: str) -> None:
    docs = load_all(manifest)
    assert docs
    for doc in docs:
        valid_k8s(doc)
    broken = json.loads(json.dumps(docs[-1]))
    broken["metadata"]["bogus"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        valid_k8s(broken)  # strict: an unknown field is an error, not ignored


def _containers(doc: dict) -> list[dict]:
    spec = doc.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    return pod.get("containers", [])


def test_images_are_pinned_by_digest_and_secrets_come_only_from_the_secret() -> None:
    for manifest in MANIFESTS:
        for doc in load_all(manifest):
            for container in _containers(doc):
                assert "@sha256:" in container["image"], f"{manifest}: {container['name']}"
                for env in container.get("env", []):
                    assert not settings.is_secret_name(env["name"]), f"{manifest}: {env['name']} written in"
                secret = {"k8s/mlflow.yaml": "mlassets-mlflow"}.get(manifest, "mlassets-secrets")  # its own, narrower
                secret = "mlassets-dagster-auth" if container["name"] == "auth-proxy" else secret
                assert {"secretRef": {"name": secret}} in container["envFrom"]
            if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == "mlassets-env":
                assert not [k for k, v in doc["data"].items() if settings.is_secret_name(k) or settings.url_password(v)]


def test_configmap_and_secret_together_are_what_the_production_profile_needs(monkeypatch, tmp_path) -> None:
    env = next(d for d in load_all("k8s/dagster-instance.yaml") if d["metadata"]["name"] == "mlassets-env")["data"]
    secret_names = [line.split("=", 1)[0] for line in (INFRA / "k8s" / "secrets.env.example").read_text().splitlines()
                    if "=" in line and not line.startswith("#")]
    (tmp_path / "dagster.yaml").write_text(
        next(d for d in load_all("k8s/dagster-instance.yaml") if d["metadata"]["name"] == "mlassets-dagster")[
            "data"]["dagster.yaml"])
    for key in ("MLASSETS_ARTIFACT_ROOT", "MLFLOW_TRACKING_URI", "MLASSETS_PROMOTION_DB"):
        monkeypatch.delenv(key, raising=False)
    for key, value in {**env, **{n: "from-the-secret" for n in secret_names}, "DAGSTER_HOME": str(tmp_path)}.items():
        monkeypatch.setenv(key, value)
    assert env["MLASSETS_PROFILE"] == "production"
    assert settings.problems() == []
    monkeypatch.delenv("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY")
    assert "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY" in settings.missing()


@pytest.mark.parametrize(("nodes", "gpus"), [(2, 1), (4, 8), (3, 0)])
def test_rendered_training_is_valid_and_meets_at_pod_0_through_the_headless_service(nodes: int, gpus: int) -> None:
    service, job = render_training.render(nodes, gpus, IMAGE, JOB, name="flights-train-7", procs_per_node=2)
    valid_k8s(service)
    valid_k8s(job)
    pod = job["spec"]["template"]
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["completions"] == nodes
    assert job["spec"]["parallelism"] == nodes and job["spec"]["backoffLimit"] == 0
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"]
    assert pod["spec"]["subdomain"] == service["metadata"]["name"] == "flights-train-7"
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    container = pod["spec"]["containers"][0]
    args = container["args"]
    assert f"--nnodes={nodes}" in args and f"--nproc-per-node={gpus or 2}" in args and "--max-restarts=0" in args
    assert "--rdzv-endpoint=flights-train-7-0.flights-train-7:29500" in args  # pod 0 of the indexed job
    assert args[-4:] == ["-m", "mlassets.core.train", "--job", "$(MLASSETS_TRAIN_JOB)"]  # what the asset runs
    assert container["env"] == [{"name": "MLASSETS_TRAIN_JOB", "value": JOB}]
    assert container["resources"].get("limits", {}).get("nvidia.com/gpu") == (gpus or None)
    assert container["image"] == IMAGE


def test_the_shipped_manifest_is_the_two_node_rendering() -> None:
    shipped = load_all("k8s/train-multinode.yaml")
    job = shipped[1]["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"]
    image = shipped[1]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert render_training.render(2, 1, image, job) == shipped


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"nodes": 0}, "nodes 0"), ({"name": "Bad_Name"}, "DNS label"), ({"job": "/tmp/job.json"}, "shared volume")])
def test_render_refuses_a_shape_it_cannot_run(kwargs: dict, message: str, capsys) -> None:
    args = {"nodes": 2, "gpus_per_node": 1, "image": IMAGE, "job": JOB, **kwargs}
    with pytest.raises(ValueError, match=message):
        render_training.render(**args)
    argv = ["--nodes", str(args["nodes"]), "--gpus-per-node", "1", "--image", IMAGE, "--job", args["job"],
            "--name", args.get("name", "mlassets-train")]
    assert render_training.main(argv) == 2 and message in capsys.readouterr().err


def test_render_prints_yaml_that_kubectl_applies_as_is(capsys) -> None:
    assert render_training.main(["--nodes", "2", "--gpus-per-node", "8", "--image", IMAGE, "--job", JOB]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in docs] == ["Service", "Job"]
    for doc in docs:
        valid_k8s(doc)


def test_mlflow_runs_its_own_authentication_and_every_pod_signs_in() -> None:
    from mlassets.host.mlflow_auth import REQUIRED

    (_, deployment) = load_all("k8s/mlflow.yaml")
    (container,) = _containers(deployment)
    assert "python -m mlassets.host.mlflow_auth " in container["args"][0]
    assert container["envFrom"] == [{"secretRef": {"name": "mlassets-mlflow"}}]
    header = (INFRA / "k8s" / "mlflow.yaml").read_text().split("apiVersion", 1)[0]
    assert all(f"{name}=" in header for name in REQUIRED)  # the Secret's keys the server refuses to start without
    example = (INFRA / "k8s" / "secrets.env.example").read_text()
    assert "MLFLOW_TRACKING_USERNAME=" in example and "MLFLOW_TRACKING_PASSWORD=CHANGE_ME" in example


def test_the_dagster_ui_is_reached_only_through_its_authenticating_proxy() -> None:
    """Dagster OSS has no login: the webserver listens on its pod's loopback, the Service's one port is the
    oauth2-proxy's, which passes a request on to the webserver only after sign-in, its settings from its own Secret."""
    docs = load_all("k8s/dagster.yaml")
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d["metadata"]["name"] == "mlassets-webserver"
              and d["kind"] == "Deployment"]
    webserver, proxy = (next(c for c in pod["containers"] if c["name"] == n) for n in ("webserver", "auth-proxy"))
    command = webserver["command"]
    assert command[command.index("-h") + 1] == "127.0.0.1" and "ports" not in webserver
    assert "--upstream=http://127.0.0.1:3000/" in proxy["args"] and "--provider=oidc" in proxy["args"]
    assert proxy["envFrom"] == [{"secretRef": {"name": "mlassets-dagster-auth"}}]
    (service,) = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "mlassets-webserver"]
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] in [p["name"] for p in proxy["ports"]] and service["spec"]["type"] == "ClusterIP"
    example = (INFRA / "k8s" / "dagster-auth.env.example").read_text()
    assert all(f"OAUTH2_PROXY_{key}=" in example for key in ("CLIENT_ID", "CLIENT_SECRET", "COOKIE_SECRET",
                                                              "OIDC_ISSUER_URL", "EMAIL_DOMAINS"))
