"""``mlassets fleet kueue --team-access``: valid Kubernetes objects (strict schema); each team's queues, and only
those, are guarded by a rule naming that team's account and group; the Role covers every workload kind the fleet
renders and the policy matches the same kinds. With a namespace per team, each holds its team's queues and jobs and
binds its Role to that team's account and group alone."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import yaml

from mlassets.cli import main
from mlassets.core.config import ConfigError
from mlassets.core.fleet import kueue
from mlassets.core.fleet.config import parse_fleet
from mlassets.core.fleet.kueue_access import QUEUE_LABEL, render_access, team_account, team_group
from tests.infra.conftest import valid_k8s
from tests.infra.crd_schema import errors
from tests.infra.test_kueue import FLEETS, TWO_TEAMS, _jobs


def _guarded(rule: dict) -> list[str]:
    return json.loads(re.search(r"variables\.queue in (\[[^]]*\])", rule["expression"]).group(1))


@pytest.mark.parametrize("which", FLEETS)
def test_each_team_queue_is_guarded_by_its_own_account(which: str) -> None:
    fleet = FLEETS[which]
    docs = render_access(fleet)
    for doc in docs:
        valid_k8s(doc)
    by_kind = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    assert [d["metadata"]["name"] for d in by_kind["ServiceAccount"]] == [team_account(t) for t in fleet.teams]
    (policy,) = by_kind["ValidatingAdmissionPolicy"]
    rules = policy["spec"]["validations"]
    local = {d["metadata"]["name"] for d in kueue.render_fleet(fleet) if d["kind"] == "LocalQueue"}
    assert sorted(q for r in rules for q in _guarded(r)) == sorted(local)  # each queue in exactly one rule
    for team, rule in zip(fleet.teams, rules, strict=True):
        account = f"system:serviceaccount:{fleet.kubernetes.namespace}:{team_account(team)}"
        assert f"'{account}'" in rule["expression"] and f"'{team_group(team)}'" in rule["expression"]
        assert all(q == team or q.startswith(f"{team}-") for q in _guarded(rule))
        assert f"of team {team}" in rule["messageExpression"]
    for job in _jobs(fleet):  # a rendered job's queue is one a rule guards
        assert any(job["metadata"]["labels"][QUEUE_LABEL] in _guarded(r) for r in rules)
    kinds = {(r["apiGroups"][0], r["resources"][0]) for r in by_kind["Role"][0]["rules"] if "create" in r["verbs"]}
    matched = {(r["apiGroups"][0], r["resources"][0]) for r in policy["spec"]["matchConstraints"]["resourceRules"]}
    rendered = {(j["apiVersion"].split("/")[0], j["kind"].lower() + "s") for j in _jobs(fleet)}
    assert rendered <= kinds and kinds == matched
    (binding,) = by_kind["ValidatingAdmissionPolicyBinding"]
    assert binding["spec"]["validationActions"] == ["Deny"] and binding["spec"]["policyName"] == \
        policy["metadata"]["name"]


def test_the_command_prints_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fleet", "kueue", "--team-access"]) == 0
    kinds = [d["kind"] for d in yaml.safe_load_all(capsys.readouterr().out)]
    assert kinds[-2:] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]


def test_a_namespace_per_team_holds_its_queues_and_only_its_account_may_submit_there() -> None:
    fleet = dataclasses.replace(TWO_TEAMS, kubernetes=dataclasses.replace(TWO_TEAMS.kubernetes, team_namespaces=True))
    docs = kueue.render_fleet(fleet) + render_access(fleet) + _jobs(fleet)
    for doc in docs:  # Kueue's and Kubeflow's kinds against their CRDs, the rest against Kubernetes' schema
        if doc["apiVersion"].startswith(("kueue.", "trainer.", "kubeflow.")):
            assert errors(doc) == [], (doc["kind"], doc["metadata"]["name"])
        else:
            valid_k8s(doc)
    namespaces = [d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"]
    assert namespaces == ["ml-vision", "ml-speech"] and docs[0]["kind"] == "Namespace"  # applied first
    assert "ValidatingAdmissionPolicy" not in {d["kind"] for d in docs}  # RBAC alone tells the teams apart
    for team in fleet.teams:
        ns = f"ml-{team}"
        names = {name for name, _ in kueue.queues(fleet, team)}
        local = {d["metadata"]["name"] for d in docs if d["kind"] == "LocalQueue" and d["metadata"]["namespace"] == ns}
        assert local == names  # the team's queues, and only those, in its namespace
        for queue in names:  # each ClusterQueue admits workloads of its team's namespace alone
            selector = next(d for d in docs if d["kind"] == "ClusterQueue" and d["metadata"]["name"] == queue)
            assert selector["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": ns}}
        (binding,) = [d for d in docs if d["kind"] == "RoleBinding" and d["metadata"]["namespace"] == ns]
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": team_account(team), "namespace": ns},
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": team_group(team)}]
        (role,) = [d for d in docs if d["kind"] == "Role" and d["metadata"]["namespace"] == ns]
        assert role["metadata"]["name"] == binding["roleRef"]["name"]
        assert not [r for r in role["rules"] if "localqueues" in r["resources"] and "create" in r["verbs"]]
    for job in _jobs(fleet):  # the first team's jobs: in its namespace, naming a queue there
        assert job["metadata"]["namespace"] == "ml-vision" and job["metadata"]["labels"][QUEUE_LABEL] in \
            {name for name, _ in kueue.queues(fleet, "vision")}


def test_a_team_namespace_name_is_checked() -> None:
    data = {"pools": {"p": {"gpus": 1, "capacity": "spot", "price_per_gpu_hour": 1.0}},
            "teams": {"t" * 60: {"gpu_quota": 1, "budget": 1.0}}, "priority_classes": {"batch": {"value": 1}},
            "kubernetes": {"namespace": "mlassets", "team_namespaces": True}}
    with pytest.raises(ConfigError, match=r"teams\.t+: its namespace: 'mlassets-t+' is not a name"):
        parse_fleet(data)
