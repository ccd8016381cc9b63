"""Shared helpers of the infra checks: where the files are, and their YAML loaded safely."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
PG_ENV = {"DAGSTER_PG_HOST": "db.internal", "DAGSTER_PG_PORT": "5432", "DAGSTER_PG_DB": "dagster",
          "DAGSTER_PG_USER": "mlassets", "DAGSTER_PG_PASSWORD": "pw-for-config-validation"}


def load(relative: str) -> Any:
    return yaml.safe_load((INFRA / relative).read_text())


def load_all(relative: str) -> list[Any]:
    return [doc for doc in yaml.safe_load_all((INFRA / relative).read_text()) if doc is not None]


def k8s_instance_yaml() -> dict[str, Any]:
    """The dagster.yaml inside infra/k8s/dagster-instance.yaml's ConfigMap."""
    config_map = next(d for d in load_all("k8s/dagster-instance.yaml") if d["metadata"]["name"] == "mlassets-dagster")
    return yaml.safe_load(config_map["data"]["dagster.yaml"])


def render_module(name: str) -> ModuleType:
    """``infra/k8s/<name>.py`` (a script, not a package module) loaded as a module."""
    spec = importlib.util.spec_from_file_location(name, INFRA / "k8s" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def valid_k8s(doc: dict) -> None:
    """Strict validation against the newest Kubernetes schema: an unknown field is an error, not ignored."""
    import kubernetes_validate

    kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
