"""Shared helpers of the infra checks: where the files are, and their YAML loaded safely."""

from __future__ import annotations

from pathlib import Path
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
