"""Who may submit to a team's Kueue queues (``mlassets fleet kueue --team-access``).

Per team a ServiceAccount ``mlassets-team-<team>`` in the fleet's namespace; one Role and RoleBinding that let the
team accounts (and the groups ``mlassets:team:<team>``) create the workloads ``mlassets fleet kueue --config``
renders; and a ValidatingAdmissionPolicy that refuses a workload naming a team's LocalQueue (the
``kueue.x-k8s.io/queue-name`` label) unless its creator is that team's account or in that team's group. Kueue checks
no creator and RBAC cannot tell one queue label from another, so the policy does; an update that keeps the label
(Kueue's controller admitting a job) passes. Every team's queues live in the fleet's one namespace, unless
``kubernetes.team_namespaces`` gives each team its own: then RBAC alone keeps each team to its own namespace.
"""

from __future__ import annotations

import json
from typing import Any

from mlassets.core.fleet.config import FleetConfig
from mlassets.core.fleet.kueue import meta, queues

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOADS = (("batch", "jobs"), ("trainer.kubeflow.org", "trainjobs"), ("kubeflow.org", "pytorchjobs"))
POLICY = "mlassets-team-queues"


def team_account(team: str) -> str:
    return f"mlassets-team-{team}"


def team_group(team: str) -> str:
    return f"mlassets:team:{team}"


def _label(obj: str) -> str:
    return f"has({obj}.metadata.labels) && '{QUEUE_LABEL}' in {obj}.metadata.labels ? " \
           f"{obj}.metadata.labels['{QUEUE_LABEL}'] : ''"


def team_rule(fleet: FleetConfig, team: str) -> dict[str, str]:
    """The policy's validation for ``team``: its queues only for its account or group."""
    names = json.dumps([name for name, _ in queues(fleet, team)])
    account = f"system:serviceaccount:{fleet.kubernetes.namespace}:{team_account(team)}"
    allowed = (f"!(variables.queue in {names}) || variables.kept || request.userInfo.username == '{account}' || "
               f"(has(request.userInfo.groups) && '{team_group(team)}' in request.userInfo.groups)")
    said = (f"'user ' + request.userInfo.username + ' may not submit to queue ' + variables.queue + ' of team {team}: "
            f"only its service account {team_account(team)} or the group {team_group(team)} may'")
    return {"expression": allowed, "messageExpression": said}


def _rules() -> list[dict[str, Any]]:
    rules = [{"apiGroups": [group], "resources": [kind], "verbs": ["create", "get", "list", "watch", "delete"]}
             for group, kind in WORKLOADS]
    rules.append({"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "localqueues"],
                  "verbs": ["get", "list", "watch"]})
    return rules


def _binding(ns: str, subjects: list[dict[str, str]]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": meta("mlassets-submit", ns), "subjects": subjects,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "mlassets-submit"}}


def _subjects(team: str, ns: str) -> list[dict[str, str]]:
    return [{"kind": "ServiceAccount", "name": team_account(team), "namespace": ns},
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": team_group(team)}]


def render_team_namespaces(fleet: FleetConfig) -> list[dict[str, Any]]:
    """With ``kubernetes.team_namespaces``: in each team's namespace its account, the account its pods run as
    (``mlassets-run``, no API token), and a Role and RoleBinding for that team's account and group alone. Another
    team has no rights there, and a ClusterQueue admits only its team's namespace: no admission policy is needed."""
    docs: list[dict[str, Any]] = []
    for team in fleet.teams:
        ns = fleet.namespace_of(team)
        docs += [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(team_account(team), ns)},
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("mlassets-run", ns),
                  "automountServiceAccountToken": False},
                 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                  "metadata": meta("mlassets-submit", ns), "rules": _rules()},
                 _binding(ns, _subjects(team, ns))]
    return docs


def render_access(fleet: FleetConfig) -> list[dict[str, Any]]:
    """Who may submit to each team's queues: per team namespace (``render_team_namespaces``), or in the fleet's one
    namespace an account per team, one Role and RoleBinding, and the admission policy that tells the queues apart."""
    if fleet.kubernetes.team_namespaces:
        return render_team_namespaces(fleet)
    ns = fleet.kubernetes.namespace
    docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(team_account(t), ns)}
                                  for t in fleet.teams]
    docs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta("mlassets-submit", ns),
                 "rules": _rules()})
    docs.append(_binding(ns, [s for t in fleet.teams for s in _subjects(t, ns)]))
    docs.append({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                 "metadata": meta(POLICY), "spec": {
                     "failurePolicy": "Fail",
                     "matchConstraints": {"resourceRules": [
                         {"apiGroups": [group], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
                          "resources": [kind]} for group, kind in WORKLOADS]},
                     "variables": [{"name": "queue", "expression": _label("object")},
                                   {"name": "kept", "expression": f"request.operation == 'UPDATE' && "
                                                                  f"({_label('oldObject')}) == variables.queue"}],
                     "validations": [team_rule(fleet, t) for t in fleet.teams]}})
    docs.append({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                 "metadata": meta(POLICY), "spec": {
                     "policyName": POLICY, "validationActions": ["Deny"],
                     "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}})
    return docs
