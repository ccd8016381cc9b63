"""Render infra/k8s/serving.yaml for a model: its dataset config's ``serving`` keys, an image, a name.

    python infra/k8s/render_serving.py --config flights \\
        --image registry.example.com/mlassets@sha256:... --name flights-serve | kubectl -n mlassets apply -f -

The Deployment runs ``mlassets serve`` on the config's ``model.registered_name``; the autoscaler keeps between
``serving.min_replicas`` and ``serving.max_replicas`` pods, scaling on the pods' average
``mlassets_serving_queue_depth`` against ``serving.target_queue_depth``. tests/infra validates the output
against the Kubernetes schema.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import yaml

from mlassets.core.config import load_config, resolve_config

TEMPLATE = Path(__file__).with_name("serving.yaml")
NAME = re.compile(r"^[a-z]([-a-z0-9]{0,50}[a-z0-9])?$")
PORT = "8080"


def render(config: str, image: str, name: str = "mlassets-serve") -> list[dict]:
    """The Service, Deployment and HorizontalPodAutoscaler of ``config``'s model (other fields unchanged)."""
    if not NAME.match(name):
        raise ValueError(f"name {name!r} is not a DNS label of at most 52 characters (a-z, 0-9, '-')")
    if "@sha256:" not in image:
        raise ValueError(f"image {image!r} must be pinned by digest (...@sha256:...)")
    cfg = load_config(resolve_config(config))
    serving = cfg.serving
    service, deployment, scaler = (copy.deepcopy(d) for d in yaml.safe_load_all(TEMPLATE.read_text()))
    labels = {"app.kubernetes.io/name": name}
    for doc in (service, deployment, scaler):
        doc["metadata"]["name"] = name
    service["spec"]["selector"] = labels
    deployment["spec"]["selector"]["matchLabels"] = labels
    pod = deployment["spec"]["template"]
    pod["metadata"]["labels"]["app.kubernetes.io/name"] = name
    deployment["spec"]["replicas"] = serving.min_replicas
    container = pod["spec"]["containers"][0]
    container["image"] = image
    container["args"] = ["serve", cfg.model.registered_name, "--config", config, "--host", "0.0.0.0", "--port", PORT]
    scaler["spec"]["scaleTargetRef"]["name"] = name
    scaler["spec"]["minReplicas"], scaler["spec"]["maxReplicas"] = serving.min_replicas, serving.max_replicas
    scaler["spec"]["metrics"][0]["pods"]["target"]["averageValue"] = f"{serving.target_queue_depth:g}"
    return [service, deployment, scaler]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="a shipped config name or a YAML file inside the image")
    parser.add_argument("--image", required=True, help="the mlassets image, pinned by digest")
    parser.add_argument("--name", default="mlassets-serve")
    args = parser.parse_args(argv)
    try:
        docs = render(args.config, args.image, args.name)
    except ValueError as exc:
        print(f"render_serving: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
