"""Render infra/k8s/train-multinode.yaml for a shape: N nodes x G GPUs, an image, a job file, a name.

    python infra/k8s/render_training.py --nodes 4 --gpus-per-node 8 \\
        --image registry.example.com/mlassets@sha256:... --job /var/lib/mlassets/work/.../job.json \\
        --name flights-train-1 | kubectl -n mlassets apply -f -

``--gpus-per-node 0`` trains on CPUs with ``--procs-per-node`` gloo ranks per pod. The output is plain YAML for
``kubectl apply``; tests/infra validates it against the Kubernetes schema.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import yaml

from mlassets.core.train.launch import node_args

TEMPLATE = Path(__file__).with_name("train-multinode.yaml")
PORT = 29500
NAME = re.compile(r"^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$")  # a DNS label short enough for "<name>-<index>"


def render(nodes: int, gpus_per_node: int, image: str, job: str, name: str = "mlassets-train",
           procs_per_node: int = 1) -> list[dict]:
    """The headless Service and the Indexed Job for this shape (the template's other fields unchanged)."""
    if nodes < 1 or gpus_per_node < 0 or procs_per_node < 1:
        raise ValueError(f"nodes {nodes} must be >= 1, gpus per node {gpus_per_node} >= 0, procs {procs_per_node} >= 1")
    if not NAME.match(name):
        raise ValueError(f"name {name!r} is not a DNS label of at most 42 characters (a-z, 0-9, '-')")
    if not job.startswith("/var/lib/mlassets/"):
        raise ValueError(f"job {job!r} must be on the shared volume (/var/lib/mlassets/...), where every node reads it")
    service, job_obj = (copy.deepcopy(d) for d in yaml.safe_load_all(TEMPLATE.read_text()))
    service["metadata"]["name"] = name
    service["spec"]["selector"] = {"app.kubernetes.io/name": name}
    spec = job_obj["spec"]
    job_obj["metadata"]["name"] = name
    spec["completions"] = spec["parallelism"] = nodes
    pod = spec["template"]
    pod["metadata"]["labels"]["app.kubernetes.io/name"] = name
    pod["spec"]["subdomain"] = name
    container = pod["spec"]["containers"][0]
    container["image"] = image
    ranks = gpus_per_node or procs_per_node
    container["args"] = [*node_args(nodes, ranks, f"{name}-0.{name}:{PORT}", name),  # what every node runs
                         "-m", "mlassets.core.train", "--job", "$(MLASSETS_TRAIN_JOB)"]
    container["env"] = [{"name": "MLASSETS_TRAIN_JOB", "value": job}]
    limits = container["resources"].setdefault("limits", {})
    if gpus_per_node:
        limits["nvidia.com/gpu"] = gpus_per_node
    else:
        limits.pop("nvidia.com/gpu", None)
    return [service, job_obj]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--gpus-per-node", type=int, required=True)
    parser.add_argument("--procs-per-node", type=int, default=1, help="CPU ranks per pod when --gpus-per-node 0")
    parser.add_argument("--image", required=True, help="the mlassets image, pinned by digest")
    parser.add_argument("--job", required=True, help="the job file on the shared volume")
    parser.add_argument("--name", default="mlassets-train")
    args = parser.parse_args(argv)
    try:
        docs = render(args.nodes, args.gpus_per_node, args.image, args.job, args.name, args.procs_per_node)
    except ValueError as exc:
        print(f"render_training: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
