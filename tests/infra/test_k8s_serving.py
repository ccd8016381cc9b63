"""infra/k8s/serving.yaml and its renderer: valid Kubernetes (strict schema), replicas and the autoscaler from the
config's serving keys, scaling on queue depth, probes on the endpoint's routes, cluster-internal only."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from mlassets.core.config import ConfigError, load_config, resolve_config
from mlassets.core.config.serving import ServingConfig
from tests.infra.conftest import load_all, render_module, valid_k8s

IMAGE = "registry.example.com/mlassets@sha256:" + "2" * 64


render_serving = render_module("render_serving")


def test_the_shipped_manifest_is_valid_and_is_the_flights_rendering() -> None:
    shipped = load_all("k8s/serving.yaml")
    assert [d["kind"] for d in shipped] == ["Service", "Deployment", "HorizontalPodAutoscaler"]
    for doc in shipped:
        valid_k8s(doc)
    image = shipped[1]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert render_serving.render("flights", image) == shipped


def test_a_rendering_takes_replicas_and_the_queue_target_from_the_config(monkeypatch) -> None:
    cfg = load_config(resolve_config("flights"))
    tuned = dataclasses.replace(cfg.serving, min_replicas=2, max_replicas=9, target_queue_depth=2.5)
    monkeypatch.setattr(render_serving, "load_config", lambda _path: dataclasses.replace(cfg, serving=tuned))
    service, deployment, scaler = render_serving.render("flights", IMAGE, name="flights-serve")
    for doc in (service, deployment, scaler):
        valid_k8s(doc)
    pod = deployment["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert container["image"] == IMAGE and deployment["spec"]["replicas"] == 2
    assert container["args"][:4] == ["serve", "flights_arr_delay", "--config", "flights"]
    assert container["args"][container["args"].index("--host") + 1] == "0.0.0.0"  # the pod's address, in-cluster
    assert {"secretRef": {"name": "mlassets-secrets"}} in container["envFrom"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert service["spec"].get("type", "ClusterIP") == "ClusterIP"
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert scaler["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"] == "flights-serve"
    assert (scaler["spec"]["minReplicas"], scaler["spec"]["maxReplicas"]) == (2, 9)
    [metric] = scaler["spec"]["metrics"]
    assert metric["pods"]["metric"]["name"] == "mlassets_serving_queue_depth"  # a name /metrics exports
    assert metric["pods"]["target"] == {"type": "AverageValue", "averageValue": "2.5"}


def test_the_queue_metric_the_autoscaler_reads_is_one_the_endpoint_exports() -> None:
    from prometheus_client import generate_latest

    from mlassets.serve.telemetry import Metrics

    text = generate_latest(Metrics().registry).decode()
    assert "\nmlassets_serving_queue_depth " in text


@pytest.mark.parametrize(("kwargs", "message"), [({"name": "Bad_Name"}, "DNS label"),
                                                 ({"image": "mlassets:latest"}, "pinned by digest")])
def test_render_refuses_what_it_cannot_run(kwargs: dict, message: str, capsys) -> None:
    args = {"config": "flights", "image": IMAGE, **kwargs}
    with pytest.raises(ValueError, match=message):
        render_serving.render(**args)
    argv = ["--config", "flights", "--image", args["image"], "--name", args.get("name", "mlassets-serve")]
    assert render_serving.main(argv) == 2 and message in capsys.readouterr().err


def test_render_prints_yaml_and_bad_replica_keys_name_the_key(capsys) -> None:
    assert render_serving.main(["--config", "flights", "--image", IMAGE]) == 0
    assert [d["kind"] for d in yaml.safe_load_all(capsys.readouterr().out)] == \
        ["Service", "Deployment", "HorizontalPodAutoscaler"]
    with pytest.raises(ConfigError, match="serving.min_replicas/max_replicas"):
        ServingConfig(min_replicas=3, max_replicas=2)
