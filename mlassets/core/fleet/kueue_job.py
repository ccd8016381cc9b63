"""One training run as one Kueue workload: a Kubeflow Trainer ``TrainJob`` (``trainer.kubeflow.org/v1alpha1``, on the
stock ``torch-distributed`` runtime), or a ``PyTorchJob`` (``kubeflow.org/v1``) for clusters still on the training
operator. ``ranks`` pods of ``gpus_per_rank`` GPUs (the seeds' 64-GPU run: 8 x 8), created suspended in the team's
LocalQueue at its WorkloadPriorityClass; Kueue admits it when the quota allows.

The lease travels with the pod: every pod runs its ranks under ``mlassets fleet lease-guard`` (the lease's
length, start-up time and heartbeat in its arguments); a rank that stops renewing the lease gets the pod's ranks
killed and the pod failed, and Kueue's ``waitForPodsReady`` evicts and requeues a workload whose pods stay not ready
(``kueue.kueue_config``). The runtime limit is ``kueue.x-k8s.io/max-exec-time-seconds`` (``overrun_factor`` x the
expected runtime: Kueue deactivates the workload, not requeued, as an overrun is stopped). SIGTERM is the checkpoint
signal (``MLASSETS_PREEMPTIBLE=1``) with ``terminationGracePeriodSeconds`` = ``grace_s`` to write it.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from mlassets.core.fleet import kueue
from mlassets.core.fleet.admission import job_cost, money
from mlassets.core.fleet.config import CAPACITIES, FleetConfig
from mlassets.core.fleet.spec import JobSpec

TRAINJOB, PYTORCHJOB = "TrainJob", "PyTorchJob"
KINDS = (TRAINJOB, PYTORCHJOB)
RUNTIME = "torch-distributed"  # the ClusterTrainingRuntime Kubeflow Trainer installs
CONTAINER = "node"  # its trainer container
MANAGER = "mlassets.io/fleet"  # who owns the runtime patch
LEASE_DIR = "/var/run/mlassets"  # the pod's own lease table (an emptyDir): its ranks' heartbeats
SETTINGS = ("MLASSETS_PROFILE", "MLASSETS_HOME", "MLFLOW_TRACKING_URI", "MLASSETS_IMAGE_DIGEST")  # mlassets-env
SECRETS = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")  # mlassets-secrets, when the server asks
MAX_EXEC_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"


def max_exec_seconds(spec: JobSpec, fleet: FleetConfig) -> int:
    """Past ``overrun_factor`` x its expected runtime, admitted, a job is stopped and not requeued."""
    return math.ceil(spec.expected_minutes * fleet.overrun_factor * 60)


def labels(spec: JobSpec, fleet: FleetConfig, name: str) -> dict[str, str]:
    return {**kueue.PART_OF, "app.kubernetes.io/name": name,
            "kueue.x-k8s.io/queue-name": kueue.queue(fleet, spec.team, spec.priority, spec.preemptible),
            "kueue.x-k8s.io/priority-class": kueue.priority_class(fleet, spec.priority, spec.preemptible),
            MAX_EXEC_LABEL: str(max_exec_seconds(spec, fleet)),
            "mlassets.io/team": spec.team, "mlassets.io/priority": spec.priority,
            "mlassets.io/preemptible": str(spec.preemptible).lower()}


def command(spec: JobSpec, fleet: FleetConfig, name: str) -> tuple[list[str], list[str]]:
    """torchrun under the lease guard (nodes, node rank and master address: the operator's ``PET_*`` variables)."""
    lease = fleet.lease
    guard = ["--lease-seconds", f"{lease.seconds:g}", "--startup-seconds", f"{lease.startup_s:g}",
             "--heartbeat-seconds", f"{lease.heartbeat_s:g}", "--lease-db", f"{LEASE_DIR}/lease.db", "--job", name]
    run = ["torchrun", f"--nproc-per-node={spec.gpus_per_rank}", "--max-restarts=0", "-m", "mlassets.core.train",
           "--job", "$(MLASSETS_TRAIN_JOB)"]
    return ["mlassets", "fleet", "lease-guard"], [*guard, "--", *run]


def env(job: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"name": "MLASSETS_TRAIN_JOB", "value": job},
                                 {"name": "MLASSETS_PREEMPTIBLE", "value": "1"}]  # SIGTERM -> checkpoint -> exit 76
    out += [{"name": k, "valueFrom": {"configMapKeyRef": {"name": "mlassets-env", "key": k, "optional": True}}}
            for k in SETTINGS]
    out += [{"name": k, "valueFrom": {"secretKeyRef": {"name": "mlassets-secrets", "key": k, "optional": True}}}
            for k in SECRETS]
    return out


def resources(spec: JobSpec, fleet: FleetConfig) -> dict[str, Any]:
    """What one pod asks: its GPUs, and cpu and memory per GPU (every resource a ClusterQueue covers)."""
    k8s, gpus = fleet.kubernetes, spec.gpus_per_rank
    memory = f"{gpus * k8s.memory_gib_per_gpu}Gi"
    return {"requests": {"cpu": str(gpus * k8s.cpu_per_gpu), "memory": memory, kueue.GPU: gpus},
            "limits": {"memory": memory, kueue.GPU: gpus}}


def _volumes() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    volumes = [{"name": "mlassets-home", "persistentVolumeClaim": {"claimName": "mlassets-home"}},
               {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
               {"name": "lease", "emptyDir": {"sizeLimit": "64Mi"}}]
    mounts = [{"name": "mlassets-home", "mountPath": "/var/lib/mlassets"}, {"name": "dshm", "mountPath": "/dev/shm"},
              {"name": "lease", "mountPath": LEASE_DIR}]
    return volumes, mounts


def _pod(spec: JobSpec, fleet: FleetConfig) -> dict[str, Any]:
    """The pod fields both kinds set the same way."""
    pod: dict[str, Any] = {
        "terminationGracePeriodSeconds": math.ceil(fleet.grace_s),  # SIGTERM -> checkpoint -> exit before SIGKILL
        "serviceAccountName": "mlassets-run",
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "fsGroup": 10001}}
    if spec.capacity in CAPACITIES:  # pinned; spot-first: the flavor Kueue assigns places it
        pod["nodeSelector"] = {kueue.CAPACITY_LABEL: spec.capacity}
    return pod


def _trainjob(spec: JobSpec, fleet: FleetConfig, name: str, image: str, job: str) -> dict[str, Any]:
    volumes, mounts = _volumes()
    cmd, args = command(spec, fleet, name)
    pod = {**_pod(spec, fleet), "volumes": volumes, "containers": [
        {"name": CONTAINER, "volumeMounts": mounts, "securityContext": {"allowPrivilegeEscalation": False}}]}
    patch = {"manager": MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": CONTAINER, "template": {"spec": {"template": {
            "metadata": {"labels": {**kueue.PART_OF, "app.kubernetes.io/name": name}}, "spec": pod}}}}]}}}}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": TRAINJOB, "metadata": _meta(spec, fleet, name),
            "spec": {"suspend": True, "runtimeRef": {"name": RUNTIME},
                     "trainer": {"image": image, "command": cmd, "args": args, "env": env(job),
                                 "numNodes": spec.ranks, "numProcPerNode": spec.gpus_per_rank,
                                 "resourcesPerNode": resources(spec, fleet)},
                     "runtimePatches": [patch]}}


def _pytorchjob(spec: JobSpec, fleet: FleetConfig, name: str, image: str, job: str) -> dict[str, Any]:
    volumes, mounts = _volumes()
    cmd, args = command(spec, fleet, name)
    pod = {**_pod(spec, fleet), "restartPolicy": "OnFailure", "volumes": volumes, "containers": [{
        "name": "pytorch", "image": image, "command": cmd, "args": args, "env": env(job),
        "resources": resources(spec, fleet), "securityContext": {"allowPrivilegeEscalation": False},
        "volumeMounts": mounts}]}
    template = {"metadata": {"labels": {**kueue.PART_OF, "app.kubernetes.io/name": name}}, "spec": pod}
    replicas = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template}}
    if spec.ranks > 1:
        replicas["Worker"] = {"replicas": spec.ranks - 1, "restartPolicy": "OnFailure",
                              "template": copy.deepcopy(template)}
    return {"apiVersion": "kubeflow.org/v1", "kind": PYTORCHJOB, "metadata": _meta(spec, fleet, name),
            "spec": {"runPolicy": {"suspend": True}, "nprocPerNode": str(spec.gpus_per_rank),
                     "pytorchReplicaSpecs": replicas}}


def _meta(spec: JobSpec, fleet: FleetConfig, name: str) -> dict[str, Any]:
    out = kueue.meta(name, fleet.namespace_of(spec.team))
    out["labels"] = labels(spec, fleet, name)
    return out


def render_job(spec: JobSpec, fleet: FleetConfig, name: str, image: str, job: str,
               kind: str = TRAINJOB) -> dict[str, Any]:
    """The run's workload of ``kind`` (``TrainJob`` or ``PyTorchJob``)."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    return (_trainjob if kind == TRAINJOB else _pytorchjob)(spec, fleet, name, image, job)


def job_warnings(spec: JobSpec, fleet: FleetConfig) -> list[str]:
    """Why Kueue would keep the job pending for good (admission on one machine refuses it), one sentence each."""
    shape = f"{spec.gpus} GPUs ({spec.ranks} ranks x {spec.gpus_per_rank})"
    out = []
    quota = fleet.teams[spec.team].gpu_quota
    if spec.gpus > quota:
        out.append(f"warning: the job needs {shape} but team {spec.team}'s quota is {quota} GPUs: Kueue keeps it "
                   "pending until the quota grows")
    room = max((min(fleet.gpus(f), fleet.team_limit(spec.team, f)) for f in CAPACITIES
                if spec.capacity in ("spot-first", f)), default=0)
    if spec.gpus > room:
        out.append(f"warning: the job needs {shape} but team {spec.team} may hold at most {room} GPUs of capacity "
                   f"{spec.capacity} in one flavor: Kueue keeps it pending")
    budget, cost = fleet.teams[spec.team].budget, job_cost(spec, fleet)
    if cost > budget:
        out.append(f"warning: the job costs {money(fleet, cost)}, over team {spec.team}'s {money(fleet, budget)} "
                   "budget: Kueue does not price jobs, admission on one machine refuses it")
    return out
