"""The system-design capacity planner: workload inputs -> the platform components needed, and the flags.

The source labels its slider thresholds as teaching assumptions; here each one is an ``Assumptions`` field,
editable, with its label. Its two hard-won rules: one host tops out around 8 GPUs, and past ~1B parameters
one GPU cannot hold model plus optimizer state (data parallelism alone no longer fits; shard the model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Workload:
    jobs_per_day: float = 2
    dataset_gb: float = 5
    cluster_gpus: int = 1
    experiments: int = 10
    model_params: float = 5e6
    pipeline_stages: int = 1
    versions_per_month: float = 1
    data_parallel: bool = False
    automated_retraining: bool = False


@dataclass(frozen=True)
class Assumptions:
    gpus_per_host: int = 8
    single_gpu_params: float = 1e9
    scheduler_jobs_per_day: float = 3
    scheduler_stages: int = 3
    versioning_per_month: float = 2
    versioning_gb: float = 50
    tracker_experiments: int = 20
    registry_experiments: int = 50
    orchestration_jobs_per_day: float = 100
    lineage_gb_per_month: float = 1000
    tracking_experiments_server: int = 10000


LABELS = {
    "gpus_per_host": "GPUs one host holds (source: tops out around 8)",
    "single_gpu_params": "parameters one GPU holds with optimizer state (source: ~1B)",
    "scheduler_jobs_per_day": "jobs per day above which runs need a scheduler",
    "scheduler_stages": "pipeline stages from which the steps become a scheduled DAG",
    "versioning_per_month": "dataset versions per month above which data must be versioned",
    "versioning_gb": "dataset size (GB) above which copies per run stop being practical",
    "tracker_experiments": "experiments above which an experiment tracker is needed",
    "registry_experiments": "experiments above which models need a registry (or any automated retraining)",
    "orchestration_jobs_per_day": "jobs per day above which one scheduler process is a bottleneck",
    "lineage_gb_per_month": "GB of new dataset versions per month that strain storage and lineage",
    "tracking_experiments_server": "experiments above which the tracker needs a server on a database",
}


def assumption_fields() -> list[str]:
    return [f.name for f in fields(Assumptions)]


@dataclass(frozen=True)
class Component:
    name: str
    needed: bool
    why: str
    here: str  # what provides it in mlassets


@dataclass(frozen=True)
class Plan:
    components: list[Component]
    flags: list[str]
    bottlenecks: list[str]
    hosts: int


def plan(w: Workload, a: Assumptions = Assumptions()) -> Plan:
    """The recommended shape for workload ``w`` under assumptions ``a``."""
    scheduled = w.jobs_per_day > a.scheduler_jobs_per_day or w.pipeline_stages >= a.scheduler_stages
    versioned = w.versions_per_month > a.versioning_per_month or w.dataset_gb > a.versioning_gb
    cluster = w.data_parallel and w.cluster_gpus > 1
    tracked = w.experiments > a.tracker_experiments
    registry = w.experiments > a.registry_experiments or w.automated_retraining
    hosts = max(1, math.ceil(w.cluster_gpus / a.gpus_per_host))
    c = [
        Component("ML author", True, "writes training code and launches runs", "mlassets CLI, dataset YAML"),
        Component("Pipeline scheduler", scheduled, f"{w.jobs_per_day:g} jobs/day, {w.pipeline_stages} stages",
                  "Dagster asset graph, sensors, schedules"),
        Component("CI/CD trigger", w.automated_retraining, "automated retraining is on" if w.automated_retraining
                  else "retraining is started by hand", "Dagster sensors + the promotion gate"),
        Component("Data versioning", versioned, f"{w.versions_per_month:g} versions/month of {w.dataset_gb:g} GB",
                  "VersionedStore (local, lakeFS)"),
        Component("Feature prep", scheduled or versioned, "features rebuilt per data version",
                  "features asset, per-partition cache"),
        Component("Training worker", True, "runs the training loop", "torchrun -m mlassets.core.train"),
        Component("GPU cluster", cluster, f"{w.cluster_gpus} GPUs, data parallel {'on' if w.data_parallel else 'off'}",
                  "torchrun, DDP/FSDP, nccl"),
        Component("Experiment tracker", tracked, f"{w.experiments} experiments tracked", "MLflow tracking"),
        Component("Model registry", registry, "many models or automated promotion", "MLflow registry + promotion log"),
        Component("Serving handoff", registry, "promoted models go to serving", "mlassets.serve, predictions asset"),
    ]
    flags = []
    if w.cluster_gpus > a.gpus_per_host:
        flags.append(f"{w.cluster_gpus} GPUs is more than one host holds ({a.gpus_per_host}): {hosts} hosts, "
                     "multi-node rendezvous and a fast interconnect")
    if w.model_params > a.single_gpu_params:
        flags.append(f"{w.model_params:.3g} parameters is more than one GPU holds with optimizer state "
                     f"({a.single_gpu_params:.3g}): shard the model (FSDP/ZeRO, tensor or pipeline parallelism); "
                     "data parallelism alone does not fit it")
    if w.cluster_gpus > 1 and not w.data_parallel:
        flags.append(f"{w.cluster_gpus} GPUs without data-parallel training: all but one sit idle")
    bottlenecks = []
    if w.jobs_per_day > a.orchestration_jobs_per_day:
        bottlenecks.append("orchestration load: a run queue, a daemon and Postgres storage for the scheduler")
    if w.dataset_gb * w.versions_per_month > a.lineage_gb_per_month:
        bottlenecks.append("data + lineage pressure: deduplicated object storage (lakeFS on S3)")
    if cluster and hosts > 1:
        bottlenecks.append("GPU cluster capacity: quotas, leases and spot fallback across hosts")
    if w.experiments > a.tracking_experiments_server:
        bottlenecks.append("experiment tracking scale: an MLflow server on Postgres with S3 artifacts")
    if registry and w.automated_retraining:
        bottlenecks.append("registry governance: the gate and the promotion log decide, people audit")
    return Plan(c, flags, bottlenecks, hosts)
