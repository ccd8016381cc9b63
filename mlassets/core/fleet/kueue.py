"""The fleet as Kueue objects (``kueue.x-k8s.io/v1beta2``), rendered from ``fleet.yaml`` so that Kueue keeps the
contract ``mlassets fleet serve`` keeps on one machine (docs/fleet-kueue.md: which field does what):

- a ResourceFlavor per capacity (spot, on-demand; nodes labelled ``mlassets.io/capacity``) and one without node
  labels for the cpu and memory every pod asks per GPU;
- a root Cohort that holds the pools (each flavor's GPUs, and cpu and memory in proportion), and a Cohort per team
  that owns nothing (``nominalQuota`` 0, lends nothing) and borrows within the team's limits: per capacity
  (``teams.<t>.borrowing_limit``) and, through cpu and memory, its ``gpu_quota`` over both capacities;
- per team a ClusterQueue for preemptible jobs and ones for ``--not-preemptible`` jobs (one for classes that preempt
  nothing, one for those that do), spot tried first (``flavorFungibility``), a higher class preempting a lower one's
  preemptible job within the team and across teams (every running job borrows, so every one is a candidate), up to
  the highest class that some class may preempt (``borrowWithinCohort.maxPriorityThreshold``);
- a WorkloadPriorityClass per priority class, and one above that threshold per class for not-preemptible jobs;
- a LocalQueue per ClusterQueue in the fleet's namespace, each admitting only that namespace's workloads, or with
  ``kubernetes.team_namespaces`` a Namespace per team holding its LocalQueues, its ClusterQueues admitting only it;
  and Kueue's manager Configuration (``kueue_config``).
"""

from __future__ import annotations

from typing import Any

import yaml

from mlassets.core.config import ConfigError
from mlassets.core.fleet.config import CAPACITIES, FleetConfig, PriorityClass

KUEUE = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
COHORT = "mlassets-fleet"  # the root cohort: it holds the pools
HOST_FLAVOR = "mlassets-host"  # cpu and memory: a flavor without node labels (the GPU flavor places the pod)
CAPACITY_LABEL = "mlassets.io/capacity"  # the node label a GPU flavor selects (set it on the node pools)
NOT_PREEMPTIBLE = "not-preemptible"
PREEMPTING = "preempting"
PART_OF = {"app.kubernetes.io/part-of": "mlassets"}


def meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "labels": dict(PART_OF)}
    if namespace:
        out["namespace"] = namespace
    return out


def flavor_gpus(fleet: FleetConfig) -> dict[str, int]:
    return {f: fleet.gpus(f) for f in CAPACITIES}


def threshold(fleet: FleetConfig) -> int | None:
    """The highest value of a class that some class may preempt (None: no class preempts another)."""
    victims = {name for cls in fleet.priority_classes.values() for name in cls.preempts}
    return max((fleet.priority_classes[v].value for v in victims), default=None)


def held_value(fleet: FleetConfig, cls: PriorityClass) -> int:
    """The priority a not-preemptible job of ``cls`` is admitted at: above ``threshold``, so no borrowing job of
    another queue may take it, in the classes' order."""
    top = threshold(fleet)
    if top is None:
        return cls.value
    return top + 1 + cls.value - min(c.value for c in fleet.priority_classes.values())


def priority_class(fleet: FleetConfig, name: str, preemptible: bool) -> str:
    return name if preemptible else f"{name}-{NOT_PREEMPTIBLE}"


def queue(fleet: FleetConfig, team: str, priority: str, preemptible: bool) -> str:
    """The LocalQueue (and ClusterQueue) of a team's job of class ``priority``."""
    if preemptible:
        return team
    return f"{team}-{NOT_PREEMPTIBLE}" + (f"-{PREEMPTING}" if fleet.priority_classes[priority].preempts else "")


def queues(fleet: FleetConfig, team: str) -> list[tuple[str, bool]]:
    """A team's queues with whether their jobs may preempt: one for preemptible jobs, then one per kind of
    not-preemptible job the classes call for. Names are label values: at most 63 characters."""
    kinds = {bool(c.preempts) for c in fleet.priority_classes.values()}
    out = [(team, True)] + [(f"{team}-{NOT_PREEMPTIBLE}" + (f"-{PREEMPTING}" if p else ""), p)
                            for p in sorted(kinds)]
    for name, _ in out:
        if len(name) > 63:
            raise ConfigError(f"teams.{team}: the queue {name!r} would be longer than 63 characters (a label value)")
    return out


def _quota(name: str, nominal: int | str, borrowing: int | str | None = None,
           lending: int | str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "nominalQuota": nominal}
    if borrowing is not None:
        out["borrowingLimit"] = borrowing
    if lending is not None:
        out["lendingLimit"] = lending
    return out


def _groups(fleet: FleetConfig, gpus: dict[str, int], host_gpus: int, borrowing: bool = False,
            lending: bool = False) -> list[dict[str, Any]]:
    """The two resource groups: GPUs by capacity (spot first), cpu and memory of ``host_gpus`` GPUs' pods."""
    k8s = fleet.kubernetes
    sizes = flavor_gpus(fleet)

    def res(name: str, amount: int | str, limit: int | str) -> dict[str, Any]:
        return _quota(name, 0, limit, 0 if lending else None) if borrowing else _quota(name, amount)

    cpu, memory = host_gpus * k8s.cpu_per_gpu, f"{host_gpus * k8s.memory_gib_per_gpu}Gi"
    return [{"coveredResources": [GPU],
             "flavors": [{"name": f, "resources": [res(GPU, gpus[f], gpus[f])]} for f in CAPACITIES if sizes[f]]},
            {"coveredResources": ["cpu", "memory"],
             "flavors": [{"name": HOST_FLAVOR, "resources": [res("cpu", cpu, cpu), res("memory", memory, memory)]}]}]


def _preemption(fleet: FleetConfig, preempting: bool, within_queue: bool) -> dict[str, Any]:
    top = threshold(fleet)
    if not preempting or top is None:
        return {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never",
                "borrowWithinCohort": {"policy": "Never"}}
    return {"withinClusterQueue": "LowerPriority" if within_queue else "Never",
            "reclaimWithinCohort": "LowerPriority",
            "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": top}}


def render_fleet(fleet: FleetConfig) -> list[dict[str, Any]]:
    """Every cluster-level object of the fleet and the team LocalQueues, in the order ``kubectl apply`` needs."""
    sizes = flavor_gpus(fleet)
    docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": meta(fleet.namespace_of(t))}
                                  for t in fleet.teams if fleet.kubernetes.team_namespaces]
    docs += [{"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": meta(f),
              "spec": {"nodeLabels": {CAPACITY_LABEL: f}}} for f in CAPACITIES if sizes[f]]
    docs.append({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": meta(HOST_FLAVOR), "spec": {}})
    for name, cls in sorted(fleet.priority_classes.items(), key=lambda kv: kv[1].value):
        said = f"; preempts {', '.join(cls.preempts)}" if cls.preempts else ""
        docs.append({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": meta(name),
                     "value": cls.value, "description": f"mlassets fleet class {name}{said}"})
        docs.append({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass",
                     "metadata": meta(priority_class(fleet, name, False)), "value": held_value(fleet, cls),
                     "description": f"mlassets fleet class {name}, --not-preemptible (above every class preempted)"})
    docs.append({"apiVersion": KUEUE, "kind": "Cohort", "metadata": meta(COHORT),
                 "spec": {"resourceGroups": _groups(fleet, sizes, fleet.gpus("spot-first"))}})
    for team, spec in fleet.teams.items():
        limits = {f: fleet.team_limit(team, f) for f in CAPACITIES}
        docs.append({"apiVersion": KUEUE, "kind": "Cohort", "metadata": meta(team_cohort(team)), "spec": {
            "parentName": COHORT, "resourceGroups": _groups(fleet, limits, spec.gpu_quota, True, True)}})
        for name, preempting in queues(fleet, team):
            docs.append({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": meta(name), "spec": {
                "cohortName": team_cohort(team),
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": fleet.namespace_of(team)}},
                "queueingStrategy": "BestEffortFIFO",
                "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
                "preemption": _preemption(fleet, preempting, within_queue=name == team),
                "resourceGroups": _groups(fleet, dict.fromkeys(CAPACITIES, 0), 0)}})
            docs.append({"apiVersion": KUEUE, "kind": "LocalQueue",
                         "metadata": meta(name, fleet.namespace_of(team)), "spec": {"clusterQueue": name}})
    return docs


def team_cohort(team: str) -> str:
    return f"{COHORT}-{team}"


def kueue_config(fleet: FleetConfig) -> dict[str, Any]:
    """Kueue's manager Configuration (the ConfigMap ``kueue-system/kueue-manager-config``) with what the fleet needs:
    the job kinds it manages, and the lease's stand-ins. A pod that stays not ready (its node froze or failed, or its
    ranks lost their lease and it failed) for ``lease.seconds`` gets the whole workload evicted (its pods SIGTERMed:
    a checkpoint within the grace period) and requeued at its old place (``timestamp: Creation``) after a backoff
    of one heartbeat, doubling, at most the lease, without limit (as the lease table requeues a lost lease); a job
    has ``lease.startup_s`` from admission until all its pods are ready."""
    lease = fleet.lease
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "integrations": {"frameworks": ["trainer.kubeflow.org/trainjob", "kubeflow.org/pytorchjob"]},
        "manageJobsWithoutQueueName": False,
        "waitForPodsReady": {
            "timeout": f"{int(lease.startup_s)}s", "recoveryTimeout": f"{int(lease.seconds)}s",
            "blockAdmission": False,
            "requeuingStrategy": {"timestamp": "Creation", "backoffBaseSeconds": max(1, int(lease.heartbeat_s)),
                                  "backoffMaxSeconds": int(lease.seconds)}}}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system", "labels": dict(PART_OF)},
            "data": {"controller_manager_config.yaml": yaml.safe_dump(config, sort_keys=False)}}


def preemption_warnings(fleet: FleetConfig) -> list[str]:
    """Where Kueue's rule (a higher class preempts a lower one's preemptible job; across teams only up to the
    threshold) would differ from the classes' ``preempts`` lists, one sentence each."""
    top, out = threshold(fleet), []
    if top is None:
        return out  # no class preempts: every queue's preemption is Never
    for name, cls in fleet.priority_classes.items():
        for other, low in fleet.priority_classes.items():
            if low.value >= cls.value or other in cls.preempts:
                continue
            where = "within a team" if low.value > top else "within a team and across teams"
            out.append(f"warning: priority_classes.{name}.preempts does not list {other!r}, but Kueue lets "
                       f"{name} ({cls.value}) preempt {other} ({low.value}) {where}")
    return out
