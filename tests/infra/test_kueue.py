"""infra/kueue: the Kueue objects and the PyTorchJob rendered from the shipped fleet.yaml are what is committed, and
hang together (queues, cohort, flavors spot first, quotas, classes, labels, grace period). Kueue's and Kubeflow's CRD
schemas are not available offline, so their fields are checked here by structure; the pod templates inside the
PyTorchJob are checked strictly against the Kubernetes schema, like infra/k8s."""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from mlassets.cli.fleet import main_kueue_text
from mlassets.core.config import load_config
from mlassets.core.config.load import shipped_configs
from mlassets.core.fleet.config import SHIPPED, load_fleet
from mlassets.core.fleet.kueue import COHORT, GPU, render_fleet, render_job
from mlassets.core.fleet.spec import job_spec
from tests.infra.conftest import load_all

FLEET = load_fleet(SHIPPED)
IMAGE = "registry.example.com/mlassets@sha256:" + "0" * 64


def _by_kind(docs: list[dict]) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for d in docs:
        out.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
    return out


def test_the_committed_manifests_are_the_rendered_ones() -> None:
    assert load_all("kueue/fleet.yaml") == render_fleet(FLEET)
    job = load_all("kueue/train-job.yaml")
    assert yaml.safe_load(main_kueue_text(["--config", "flights", "--team", "research", "--ranks", "2",
                                           "--gpus-per-rank", "1", "--name", "flights-train", "--train-job",
                                           "/var/lib/mlassets/work/flights/train/job.json"])) == job[0]


def test_queues_quotas_flavors_and_classes_follow_the_fleet() -> None:
    kinds = _by_kind(load_all("kueue/fleet.yaml"))
    assert list(kinds["ResourceFlavor"]) == ["spot", "on-demand"]
    assert {n: d["value"] for n, d in kinds["WorkloadPriorityClass"].items()} == {
        n: c.value for n, c in FLEET.priority_classes.items()}
    assert set(kinds["ClusterQueue"]) == set(kinds["LocalQueue"]) == set(FLEET.teams)
    for team, cq in kinds["ClusterQueue"].items():
        assert cq["spec"]["cohort"] == COHORT
        (group,) = cq["spec"]["resourceGroups"]
        assert group["coveredResources"] == [GPU]
        flavors = [f["name"] for f in group["flavors"]]
        assert flavors == ["spot", "on-demand"]  # tried in this order: spot first, then on-demand
        quota = sum(r["nominalQuota"] for f in group["flavors"] for r in f["resources"])
        assert quota == FLEET.teams[team].gpu_quota
        spot = group["flavors"][0]["resources"][0]["nominalQuota"]
        assert spot == min(FLEET.teams[team].gpu_quota, FLEET.pools["spot"].gpus)
        assert kinds["LocalQueue"][team]["spec"]["clusterQueue"] == team
    for doc in load_all("kueue/fleet.yaml"):
        assert doc["apiVersion"] == "kueue.x-k8s.io/v1beta1"


def _pod_templates(job: dict) -> list[dict]:
    return [spec["template"] for spec in job["spec"]["pytorchReplicaSpecs"].values()]


@pytest.mark.parametrize(("ranks", "gpus", "capacity"), [(2, 1, "spot-first"), (8, 8, "on-demand")])
def test_the_pytorchjob_is_labelled_for_its_queue_with_a_grace_period(ranks: int, gpus: int, capacity: str) -> None:
    spec = job_spec(load_config(shipped_configs()["flights"]), {"team": "research", "priority": "batch",
                                                                  "ranks": ranks, "gpus_per_rank": gpus,
                                                                  "capacity": capacity})
    job = render_job(spec, FLEET, "flights-train", IMAGE, "/var/lib/mlassets/work/job.json")
    labels = job["metadata"]["labels"]
    kinds = _by_kind(render_fleet(FLEET))
    assert labels["kueue.x-k8s.io/queue-name"] in kinds["LocalQueue"]
    assert labels["kueue.x-k8s.io/priority-class"] in kinds["WorkloadPriorityClass"]
    assert job["spec"]["runPolicy"]["suspend"] is True  # Kueue admits it (unsuspends) when the quota allows
    replicas = job["spec"]["pytorchReplicaSpecs"]
    assert replicas["Master"]["replicas"] + replicas.get("Worker", {}).get("replicas", 0) == ranks  # 64: 8 x 8
    for template in _pod_templates(job):
        pod = template["spec"]
        assert pod["terminationGracePeriodSeconds"] == FLEET.grace_s
        (container,) = pod["containers"]
        assert container["resources"]["limits"][GPU] == gpus
        assert {"name": "MLASSETS_PREEMPTIBLE", "value": "1"} in container["env"]  # SIGTERM -> checkpoint
        assert pod.get("nodeSelector", {}).get("mlassets.io/capacity") == (None if capacity == "spot-first"
                                                                          else capacity)
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate",
                                      "metadata": {"name": "flights-train", "namespace": "mlassets"},
                                      "template": template}, kubernetes_validate.latest_version(), strict=True)
