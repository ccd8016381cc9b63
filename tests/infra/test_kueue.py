"""infra/kueue and `mlassets fleet kueue`: every rendered document validates against its Kueue or Kubeflow CRD
(tests/infra/crds, strictly), the committed manifests are the rendered ones, and for each scenario the local
scheduler handles the field that makes Kueue do the same is there with the fleet's numbers (docs/fleet-kueue.md),
on the shipped fleet and on a two-team fleet of its own."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml

from mlassets.cli import main
from mlassets.cli.fleet import main_kueue_docs
from mlassets.core.config import load_config
from mlassets.core.config.load import shipped_configs
from mlassets.core.fleet import kueue, kueue_job
from mlassets.core.fleet.config import CAPACITIES, SHIPPED, FleetConfig, load_fleet, parse_fleet
from mlassets.core.fleet.spec import JobSpec, job_spec
from tests.infra.conftest import ROOT, load_all, valid_k8s
from tests.infra.crd_schema import errors

SHIPPED_FLEET = load_fleet(SHIPPED)
TWO_TEAMS = parse_fleet({  # 3 spot GPUs shared by teams whose quotas add up to more: the spot quota is never over 3
    "currency": "$",
    "pools": {"spot-a": {"gpus": 3, "capacity": "spot", "price_per_gpu_hour": 1.2},
              "od": {"gpus": 8, "capacity": "on-demand", "price_per_gpu_hour": 3.0}},
    "teams": {"vision": {"gpu_quota": 6, "budget": 500.0, "borrowing_limit": {"spot": 3, "on-demand": 5}},
              "speech": {"gpu_quota": 2, "budget": 100.0}},
    "priority_classes": {"low": {"value": 10}, "mid": {"value": 50, "preempts": ["low"]},
                         "high": {"value": 90, "preempts": ["low", "mid"]}},
    "lease": {"seconds": 600, "heartbeat_s": 20, "startup_s": 900}, "grace_s": 45.5, "overrun_factor": 2.0,
    "kubernetes": {"namespace": "ml", "cpu_per_gpu": 8, "memory_gib_per_gpu": 60}})
FLEETS = {"shipped": SHIPPED_FLEET, "two-teams": TWO_TEAMS}
IMAGE = "registry.example.com/mlassets@sha256:" + "0" * 64
DOCS = ROOT / "docs" / "fleet-kueue.md"


def _by(docs: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _res(group_owner: dict, flavor: str, resource: str) -> dict:
    for group in group_owner["spec"]["resourceGroups"]:
        for f in group["flavors"]:
            if f["name"] == flavor:
                return next(r for r in f["resources"] if r["name"] == resource)
    raise KeyError(f"{group_owner['metadata']['name']}: no {flavor}/{resource}")


def _spec(fleet: FleetConfig, team: str, priority: str, **over) -> JobSpec:
    values = {"ranks": 2, "gpus_per_rank": 1, "expected_minutes": 90.0, "capacity": "spot-first",
              "preemptible": True, "checkpoint_every_minutes": 10.0, **over}
    return JobSpec(team=team, priority=priority, **values)


def _jobs(fleet: FleetConfig) -> list[dict]:
    team, low = next(iter(fleet.teams)), min(fleet.priority_classes, key=lambda n: fleet.priority_classes[n].value)
    seed = _spec(fleet, team, low, ranks=8, gpus_per_rank=8, expected_minutes=600.0)  # the seeds' 64-GPU run
    pinned = _spec(fleet, team, low, capacity="on-demand", preemptible=False)
    return [kueue_job.render_job(s, fleet, "seed-train", IMAGE, "/var/lib/mlassets/work/job.json", kind)
            for s in (seed, pinned) for kind in kueue_job.KINDS]


@pytest.mark.parametrize("which", FLEETS)
def test_every_rendered_document_validates_against_its_crd(which: str) -> None:
    fleet = FLEETS[which]
    docs = kueue.render_fleet(fleet) + _jobs(fleet)
    assert {d["kind"] for d in docs} == {"ResourceFlavor", "WorkloadPriorityClass", "Cohort", "ClusterQueue",
                                         "LocalQueue", "TrainJob", "PyTorchJob"}
    for doc in docs:
        assert errors(doc) == [], (doc["kind"], doc["metadata"]["name"])


def test_the_schema_check_catches_what_the_api_server_would_refuse() -> None:
    """The check can fail: a misspelt field, a wrong type and a broken CEL rule are each reported."""
    cq = _by(kueue.render_fleet(SHIPPED_FLEET), "ClusterQueue")["research"]
    misspelt = {**cq, "spec": {**cq["spec"], "cohort": "x"}}  # v1beta1's name, dropped in v1beta2
    assert any("'cohort' was unexpected" in e for e in errors(misspelt))
    wrong = {**cq, "spec": {**cq["spec"], "queueingStrategy": "Random"}}
    assert any("queueingStrategy" in e for e in errors(wrong))
    never = {**cq, "spec": {**cq["spec"], "preemption": {"reclaimWithinCohort": "Never",
                                                          "borrowWithinCohort": {"policy": "LowerPriority"}}}}
    assert "borrowWithinCohort needs reclaimWithinCohort other than Never" in errors(never)
    assert errors({**cq, "apiVersion": "kueue.x-k8s.io/v9"}) == ["no CRD serves kueue.x-k8s.io/v9 ClusterQueue"]


def test_the_committed_manifests_are_the_rendered_ones() -> None:
    assert load_all("kueue/fleet.yaml") == kueue.render_fleet(SHIPPED_FLEET)
    assert load_all("kueue/kueue-config.yaml") == [kueue.kueue_config(SHIPPED_FLEET)]
    argv = ["--config", "flights", "--team", "research", "--ranks", "8", "--gpus-per-rank", "8",
            "--expected-minutes", "600", "--name", "flights-train", "--train-job",
            "/var/lib/mlassets/work/flights/train/job.json"]
    assert load_all("kueue/train-job.yaml") == main_kueue_docs(argv)[-1:]
    assert load_all("kueue/train-job-pytorchjob.yaml") == main_kueue_docs([*argv, "--kind", "PyTorchJob"])[-1:]


# The scenarios of docs/fleet-kueue.md: each returns the fields that make Kueue do what the local scheduler does.

@pytest.mark.parametrize("which", FLEETS)
def test_spot_full_falls_back_to_on_demand(which: str) -> None:
    fleet = FLEETS[which]
    docs = kueue.render_fleet(fleet)
    assert list(_by(docs, "ResourceFlavor")) == [*CAPACITIES, kueue.HOST_FLAVOR]
    root = _by(docs, "Cohort")[kueue.COHORT]
    for capacity in CAPACITIES:  # the pools, once: never more spot quota than spot GPUs
        assert _res(root, capacity, kueue.GPU)["nominalQuota"] == fleet.gpus(capacity)
    for team in fleet.teams:
        cohort = _by(docs, "Cohort")[kueue.team_cohort(team)]
        (gpus, _) = cohort["spec"]["resourceGroups"]
        assert [f["name"] for f in gpus["flavors"]] == ["spot", "on-demand"]  # spot tried first
        on_demand = _res(cohort, "on-demand", kueue.GPU)["borrowingLimit"]
        assert on_demand == fleet.team_limit(team, "on-demand") > 0  # every team has on-demand behind spot
        for name, _ in kueue.queues(fleet, team):
            cq = _by(docs, "ClusterQueue")[name]["spec"]
            assert cq["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
            assert [f["name"] for f in cq["resourceGroups"][0]["flavors"]] == ["spot", "on-demand"]


@pytest.mark.parametrize("which", FLEETS)
def test_a_team_borrows_idle_gpus_within_its_limits(which: str) -> None:
    fleet = FLEETS[which]
    docs = kueue.render_fleet(fleet)
    k8s = fleet.kubernetes
    for team, spec in fleet.teams.items():
        cohort = _by(docs, "Cohort")[kueue.team_cohort(team)]
        assert cohort["spec"]["parentName"] == kueue.COHORT
        for capacity in CAPACITIES:
            gpu = _res(cohort, capacity, kueue.GPU)
            assert gpu == {"name": kueue.GPU, "nominalQuota": 0, "borrowingLimit": fleet.team_limit(team, capacity),
                           "lendingLimit": 0}
        # over both capacities: the team's gpu_quota, through the cpu and memory its pods ask per GPU
        assert _res(cohort, kueue.HOST_FLAVOR, "cpu")["borrowingLimit"] == spec.gpu_quota * k8s.cpu_per_gpu
        assert _res(cohort, kueue.HOST_FLAVOR, "memory")["borrowingLimit"] == \
            f"{spec.gpu_quota * k8s.memory_gib_per_gpu}Gi"
    if which == "two-teams":
        vision = _by(docs, "Cohort")[kueue.team_cohort("vision")]
        assert _res(vision, "spot", kueue.GPU)["borrowingLimit"] == 3
        assert _res(vision, "on-demand", kueue.GPU)["borrowingLimit"] == 5
        assert _res(vision, kueue.HOST_FLAVOR, "cpu")["borrowingLimit"] == 48


@pytest.mark.parametrize("which", FLEETS)
def test_a_higher_class_preempts_a_lower_ones_preemptible_job_across_teams(which: str) -> None:
    fleet = FLEETS[which]
    docs = kueue.render_fleet(fleet)
    classes = _by(docs, "WorkloadPriorityClass")
    top = kueue.threshold(fleet)
    for name, cls in fleet.priority_classes.items():
        assert classes[name]["value"] == cls.value
        held = classes[f"{name}-not-preemptible"]["value"]
        assert held > top and held == kueue.held_value(fleet, cls)  # no queue's preemption reaches it
        for victim in cls.preempts:  # Kueue may take it: lower, and within the cross-team threshold
            assert fleet.priority_classes[victim].value < cls.value and fleet.priority_classes[victim].value <= top
    for team in fleet.teams:
        cqs = _by(docs, "ClusterQueue")
        assert cqs[team]["spec"]["preemption"] == {
            "withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority",
            "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": top}}
        assert cqs[f"{team}-not-preemptible-preempting"]["spec"]["preemption"]["borrowWithinCohort"] == \
            {"policy": "LowerPriority", "maxPriorityThreshold": top}
        assert cqs[f"{team}-not-preemptible"]["spec"]["preemption"] == {
            "withinClusterQueue": "Never", "reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "Never"}}
    assert top == {"shipped": 100, "two-teams": 50}[which]
    assert kueue.preemption_warnings(SHIPPED_FLEET) == []
    assert kueue.preemption_warnings(TWO_TEAMS) == []


def test_a_class_kueue_would_let_preempt_more_than_the_fleet_says_is_warned() -> None:
    data = yaml.safe_load(SHIPPED.read_text())
    data["priority_classes"]["normal"] = {"value": 500}  # above batch, preempts nothing
    assert kueue.preemption_warnings(parse_fleet(data)) == [
        "warning: priority_classes.urgent.preempts does not list 'normal', but Kueue lets urgent (1000) preempt "
        "normal (500) within a team",
        "warning: priority_classes.normal.preempts does not list 'batch', but Kueue lets normal (500) preempt batch "
        "(100) within a team and across teams"]


@pytest.mark.parametrize("which", FLEETS)
@pytest.mark.parametrize("kind", kueue_job.KINDS)
def test_a_job_carries_its_queue_class_runtime_limit_lease_and_grace(which: str, kind: str) -> None:
    fleet = FLEETS[which]
    team = next(iter(fleet.teams))
    urgent = max(fleet.priority_classes, key=lambda n: fleet.priority_classes[n].value)
    spec = _spec(fleet, team, urgent, preemptible=False, ranks=8, gpus_per_rank=8, expected_minutes=30.5)
    job = kueue_job.render_job(spec, fleet, "seed-train", IMAGE, "/j.json", kind)
    labels = job["metadata"]["labels"]
    docs = kueue.render_fleet(fleet)
    assert labels["kueue.x-k8s.io/queue-name"] == f"{team}-not-preemptible-preempting"
    assert labels["kueue.x-k8s.io/queue-name"] in _by(docs, "LocalQueue")
    assert labels["kueue.x-k8s.io/priority-class"] == f"{urgent}-not-preemptible"
    assert labels["kueue.x-k8s.io/max-exec-time-seconds"] == str(math.ceil(30.5 * fleet.overrun_factor * 60))
    assert job["metadata"]["namespace"] == fleet.kubernetes.namespace
    if kind == "TrainJob":
        assert job["spec"]["suspend"] is True and job["spec"]["runtimeRef"]["name"] == "torch-distributed"
        trainer = job["spec"]["trainer"]
        assert (trainer["numNodes"], trainer["numProcPerNode"]) == (8, 8)  # the seeds' 64 GPUs: one workload
        container, (pod,) = trainer, [r["template"]["spec"]["template"]["spec"] for r in
                                      job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
                                          "replicatedJobs"]]
        resources = trainer["resourcesPerNode"]
    else:
        replicas = job["spec"]["pytorchReplicaSpecs"]
        assert job["spec"]["runPolicy"]["suspend"] is True
        assert (replicas["Master"]["replicas"], replicas["Worker"]["replicas"]) == (1, 7)
        pod = replicas["Master"]["template"]["spec"]
        (container,) = pod["containers"]
        resources = container["resources"]
        for template in (r["template"] for r in replicas.values()):
            valid_k8s({"apiVersion": "v1", "kind": "PodTemplate",
                       "metadata": {"name": "seed-train", "namespace": "ml"}, "template": template})
    assert pod["terminationGracePeriodSeconds"] == math.ceil(fleet.grace_s)  # SIGTERM -> checkpoint -> exit 76
    assert {"name": "MLASSETS_PREEMPTIBLE", "value": "1"} in container["env"]
    k8s = fleet.kubernetes
    assert resources["requests"] == {"cpu": str(8 * k8s.cpu_per_gpu), "memory": f"{8 * k8s.memory_gib_per_gpu}Gi",
                                     kueue.GPU: 8}  # every resource asked is covered by the queues
    args = container["args"]
    assert container["command"] == ["mlassets", "fleet", "lease-guard"]
    assert args[args.index("--lease-seconds") + 1] == f"{fleet.lease.seconds:g}"
    assert args[args.index("--") + 1:][:2] == ["torchrun", "--nproc-per-node=8"]


@pytest.mark.parametrize("which", FLEETS)
def test_a_frozen_node_restarts_the_job_from_its_checkpoint(which: str) -> None:
    fleet = FLEETS[which]
    (config_map,) = [kueue.kueue_config(fleet)]
    config = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])
    lease = fleet.lease
    assert config["waitForPodsReady"] == {
        "timeout": f"{int(lease.startup_s)}s", "recoveryTimeout": f"{int(lease.seconds)}s", "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Creation", "backoffBaseSeconds": int(lease.heartbeat_s),
                              "backoffMaxSeconds": int(lease.seconds)}}
    assert set(config["integrations"]["frameworks"]) == {"trainer.kubeflow.org/trainjob", "kubeflow.org/pytorchjob"}
    assert set(config) <= {"apiVersion", "kind", "integrations", "manageJobsWithoutQueueName", "waitForPodsReady"}


def test_over_quota_renders_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    docs = main_kueue_docs(["--config", "flights", "--team", "product", "--ranks", "3", "--expected-minutes", "600"])
    assert docs[-1]["kind"] == "TrainJob"
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("warning: the job needs 3 GPUs (3 ranks x 1) but team product's quota is 2 GPUs: Kueue keeps "
                      "it pending until the quota grows")
    assert any("over team product's ₹1,000 budget" in line for line in err)
    spec = _spec(TWO_TEAMS, "speech", "low", ranks=1, gpus_per_rank=4)
    assert any("may hold at most 2 GPUs of capacity spot-first in one flavor" in w
               for w in kueue_job.job_warnings(spec, TWO_TEAMS))
    assert kueue_job.job_warnings(_spec(TWO_TEAMS, "vision", "low", ranks=1, gpus_per_rank=3), TWO_TEAMS) == []


def test_the_docs_table_names_every_scenario_and_the_fields_tested() -> None:
    text = DOCS.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| Local")]
    scenarios = {re.sub(r"\s+", " ", r.split("|")[1].strip()) for r in rows if not set(r) <= set("|- ")}
    for needed in ("spot full → on-demand", "urgent team A preempts team B's spot job", "over quota waits",
                   "a team borrows an idle team's GPUs within its limit", "a frozen node → restart from the checkpoint",
                   "`--not-preemptible`", "overrun", "preempted: checkpoint on SIGTERM"):
        assert any(s.startswith(needed) for s in scenarios), needed
    for field in ("flavorFungibility", "borrowingLimit", "lendingLimit", "borrowWithinCohort", "maxPriorityThreshold",
                  "reclaimWithinCohort", "WorkloadPriorityClass", "recoveryTimeout", "terminationGracePeriodSeconds",
                  "kueue.x-k8s.io/max-exec-time-seconds", "requeuingStrategy", "nominalQuota"):
        assert field in "\n".join(rows), field  # in the table


def test_the_shipped_configs_render_for_every_team() -> None:
    cfg = load_config(shipped_configs()["flights"])
    for team in SHIPPED_FLEET.teams:
        spec = job_spec(cfg, {"team": team})
        for kind in kueue_job.KINDS:
            assert errors(kueue_job.render_job(spec, SHIPPED_FLEET, f"flights-{team}", IMAGE, "/j.json", kind)) == []



def test_the_command_renders_a_fleet_of_ones_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    data = {**yaml.safe_load(SHIPPED.read_text()), "teams": {"vision": {"gpu_quota": 3, "budget": 900.0},
                                                            "speech": {"gpu_quota": 1, "budget": 900.0}}}
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    monkeypatch.setenv("MLASSETS_FLEET", str(tmp_path / "fleet.yaml"))
    assert main(["fleet", "kueue", "--config", "flights", "--team", "speech"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert all(errors(d) == [] for d in docs)
    assert {n for n in _by(docs, "Cohort")} == {kueue.COHORT, "mlassets-fleet-vision", "mlassets-fleet-speech"}
    speech = _by(docs, "Cohort")["mlassets-fleet-speech"]
    assert [_res(speech, c, kueue.GPU)["borrowingLimit"] for c in CAPACITIES] == [1, 1]
    assert docs[-1]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "speech"
