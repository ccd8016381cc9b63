"""``mlassets fleet kueue --team-access``: valid Kubernetes objects (strict schema); each team's queues, and only
those, are guarded by a rule naming that team's account and group; the Role covers every workload kind the fleet
renders and the policy matches the same kinds."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from mlassets.cli import main
from mlassets.core.fleet import kueue
from mlassets.core.fleet.kueue_access import QUEUE_LABEL, render_access, team_account, team_group
from tests.infra.conftest import valid_k8s
from tests.infra.test_kueue import FLEETS, _jobs


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
