"""Kueue objects rendered from ``fleet.yaml`` and a job spec: a ResourceFlavor per capacity (spot, on-demand), a
ClusterQueue per team in one cohort (its GPU quota split spot first, so a spot-first workload falls back to
on-demand), WorkloadPriorityClasses, a LocalQueue per team, and the training run as a Kubeflow PyTorchJob labelled
for its queue and class, with the SIGTERM grace period in which it writes its checkpoint before Kueue requeues it."""

from __future__ import annotations

import copy
from typing import Any

from mlassets.core.fleet.config import FleetConfig
from mlassets.core.fleet.spec import JobSpec

KUEUE = "kueue.x-k8s.io/v1beta1"
GPU = "nvidia.com/gpu"
COHORT = "mlassets-fleet"
NAMESPACE = "mlassets"
CAPACITY_LABEL = "mlassets.io/capacity"  # the node label a flavor selects (set it on the node pools)
FLAVORS = ("spot", "on-demand")  # the order a ClusterQueue tries them in: spot first


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/part-of": "mlassets"}}
    if namespace:
        meta["namespace"] = namespace
    return meta


def flavor_gpus(fleet: FleetConfig) -> dict[str, int]:
    return {f: sum(p.gpus for p in fleet.pools.values() if p.capacity == f) for f in FLAVORS}


def render_fleet(fleet: FleetConfig) -> list[dict[str, Any]]:
    """Every cluster-level object of the fleet, in the order ``kubectl apply`` needs them."""
    sizes = flavor_gpus(fleet)
    docs: list[dict[str, Any]] = [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": _meta(f),
         "spec": {"nodeLabels": {CAPACITY_LABEL: f}}} for f in FLAVORS if sizes[f]]
    for name, cls in sorted(fleet.priority_classes.items(), key=lambda kv: kv[1].value):
        docs.append({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": _meta(name),
                     "value": cls.value, "description": f"mlassets fleet class {name}"
                     + (f"; preempts {', '.join(cls.preempts)}" if cls.preempts else "")})
    for team, spec in fleet.teams.items():
        left, flavors = spec.gpu_quota, []
        for f in FLAVORS:
            if not sizes[f]:
                continue
            share = min(left, sizes[f])
            left -= share
            flavors.append({"name": f, "resources": [{"name": GPU, "nominalQuota": share, "borrowingLimit": 0}]})
        docs.append({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": _meta(team), "spec": {
            "cohort": COHORT, "namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority"},
            "resourceGroups": [{"coveredResources": [GPU], "flavors": flavors}]}})
        docs.append({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": _meta(team, NAMESPACE),
                     "spec": {"clusterQueue": team}})
    return docs


def render_job(spec: JobSpec, fleet: FleetConfig, name: str, image: str, job: str) -> dict[str, Any]:
    """The PyTorchJob of one run: ``ranks`` pods of ``gpus_per_rank`` GPUs (the seeds' 64-GPU run: 8 x 8), in its
    team's LocalQueue with its priority class; spot or on-demand capacity pins the flavor by node selector."""
    pod: dict[str, Any] = {
        "terminationGracePeriodSeconds": int(fleet.grace_s),  # SIGTERM -> checkpoint -> exit before SIGKILL
        "restartPolicy": "OnFailure", "serviceAccountName": "mlassets-run",
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "fsGroup": 10001},
        "containers": [{
            "name": "pytorch", "image": image,
            "command": ["torchrun"],  # nodes, node rank and master address: the operator's PET_* variables
            "args": [f"--nproc-per-node={spec.gpus_per_rank}", "--max-restarts=0", "-m", "mlassets.core.train",
                     "--job", "$(MLASSETS_TRAIN_JOB)"],
            "env": [{"name": "MLASSETS_TRAIN_JOB", "value": job}, {"name": "MLASSETS_PREEMPTIBLE", "value": "1"}],
            "envFrom": [{"configMapRef": {"name": "mlassets-env"}}, {"secretRef": {"name": "mlassets-secrets"}}],
            "resources": {"limits": {GPU: spec.gpus_per_rank}, "requests": {"cpu": "4", "memory": "16Gi"}},
            "securityContext": {"allowPrivilegeEscalation": False},
            "volumeMounts": [{"name": "mlassets-home", "mountPath": "/var/lib/mlassets"},
                             {"name": "dshm", "mountPath": "/dev/shm"}]}],
        "volumes": [{"name": "mlassets-home", "persistentVolumeClaim": {"claimName": "mlassets-home"}},
                    {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}]}
    if spec.capacity != "spot-first":
        pod["nodeSelector"] = {CAPACITY_LABEL: spec.capacity}
    template = {"metadata": {"labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "mlassets"}},
                "spec": pod}
    replicas = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template}}
    if spec.ranks > 1:
        replicas["Worker"] = {"replicas": spec.ranks - 1, "restartPolicy": "OnFailure",
                              "template": copy.deepcopy(template)}
    meta = _meta(name, NAMESPACE)
    meta["labels"].update({"kueue.x-k8s.io/queue-name": spec.team, "kueue.x-k8s.io/priority-class": spec.priority})
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta,
            "spec": {"runPolicy": {"suspend": True}, "pytorchReplicaSpecs": replicas}}
