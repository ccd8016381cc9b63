"""Offline validation of Kueue and Kubeflow documents against their CRDs (``tests/infra/crds``): the
``openAPIV3Schema`` of the document's apiVersion and kind as JSON Schema, made strict (an object with ``properties``
takes no other key unless the schema says ``x-kubernetes-preserve-unknown-fields``: the API server would drop a
misspelt field without a word), and the CEL rules (``x-kubernetes-validations``) a created object of these kinds
must meet, written in Python because no CEL engine runs here."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

CRDS = Path(__file__).resolve().parent / "crds"


def _strict(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out \
            and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


@functools.cache
def validators() -> dict[tuple[str, str], jsonschema.Draft7Validator]:
    """(apiVersion, kind) -> the strict validator of every version each CRD serves."""
    out = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            out[(f"{group}/{version['name']}", kind)] = jsonschema.Draft7Validator(
                _strict(version["schema"]["openAPIV3Schema"]))
    return out


def _cel(doc: dict[str, Any]) -> list[str]:
    """The CEL rules of the CRDs that a new object can break, each as the CRD's message."""
    spec, kind, errors = doc.get("spec", {}), doc["kind"], []
    if kind in ("ClusterQueue", "Cohort"):
        for group in spec.get("resourceGroups", []):
            if any(len(f["resources"]) != len(group["coveredResources"]) for f in group["flavors"]):
                errors.append("resourceGroups: every flavor lists each covered resource")
            if any([r["name"] for r in f["resources"]] != group["coveredResources"] for f in group["flavors"]):
                errors.append("resourceGroups: a flavor's resources are the covered ones, in their order")
    if kind == "ClusterQueue":
        if "cohortName" not in spec and any("borrowingLimit" in r for g in spec.get("resourceGroups", [])
                                            for f in g["flavors"] for r in f["resources"]):
            errors.append("borrowingLimit needs a cohortName")
        fungibility = spec.get("flavorFungibility", {})
        if "preference" in fungibility and not (fungibility.get("whenCanBorrow") == "TryNextFlavor"
                                                and fungibility.get("whenCanPreempt") == "TryNextFlavor"):
            errors.append("flavorFungibility.preference needs TryNextFlavor for both")
        preemption = spec.get("preemption", {})
        if preemption.get("reclaimWithinCohort") == "Never" \
                and preemption.get("borrowWithinCohort", {}).get("policy", "Never") != "Never":
            errors.append("borrowWithinCohort needs reclaimWithinCohort other than Never")
    if kind == "TrainJob":
        name = doc["metadata"]["name"]
        if not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name) or len(name) > 63:
            errors.append(f"metadata.name {name!r}: a DNS label of at most 63 characters")
        if spec.get("trainer", {}).get("numProcPerNode", 1) < 1:
            errors.append("trainer.numProcPerNode must be >= 1")
    return errors


def errors(doc: dict[str, Any]) -> list[str]:
    """What the API server would refuse in ``doc`` (its CRD's schema and rules), one line each; [] when valid."""
    validator = validators().get((doc["apiVersion"], doc["kind"]))
    if validator is None:
        return [f"no CRD serves {doc['apiVersion']} {doc['kind']}"]
    found = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
    return found + _cel(doc)
