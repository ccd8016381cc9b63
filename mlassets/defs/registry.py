"""group registry: every candidate becomes a model version; only a passing one becomes champion."""

import json
from collections.abc import Iterator

import dagster as dg
import mlflow

from mlassets.core import registry
from mlassets.core.config import PipelineConfig
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import upstream_metadata
from mlassets.defs.partitions import data_versions

RECORD_KEYS = ("data_commit", "git_sha", "git_dirty", "config_hash", "lock_hash", "seed", "world_size",
               "threads", "torch_version", "cpu_capability", "weights_sha256", "mlflow_run_id")


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    versions = data_versions(cfg)
    name = cfg.model.registered_name
    gate_check = dg.AssetCheckSpec(
        "gate_passed", asset=keys.registered_model, blocking=True,
        description="the version's registry record holds a passing gate result; blocks promotion",
    )

    @dg.asset(key=keys.registered_model, partitions_def=versions, group_name="registry",
              deps=[keys.candidate_model, keys.gate_result], check_specs=[gate_check],
              required_resource_keys={"mlflow"}, kinds={"mlflow"})
    def registered_model(context: dg.AssetExecutionContext) -> Iterator[object]:
        """The candidate as an MLflow model version whose tags are its full record and gate result."""
        candidate = upstream_metadata(context, keys.candidate_model)
        gate = upstream_metadata(context, keys.gate_result)
        tags = {k: str(candidate[k]) for k in RECORD_KEYS if k in candidate}
        tags.update({"dagster_run_id": context.run_id, "gate_passed": str(bool(gate["passed"])).lower(),
                     "gate_summary": str(gate["summary"])[:5000], "gate_result": json.dumps(gate["gate_json"])})
        version = registry.register(name, str(candidate["model_uri"]), tags)
        if gate["passed"]:
            registry.set_alias(name, registry.CHALLENGER, version.version)
        mlflow.set_tag("registered_version", version.version)
        yield dg.MaterializeResult(metadata={
            "model_name": name, "version": version.version, "gate_passed": bool(gate["passed"]),
            "data_commit": tags.get("data_commit", ""), "git_sha": tags.get("git_sha", ""),
        })
        recorded = registry.get_version(name, version.version)
        yield dg.AssetCheckResult(
            check_name="gate_passed", passed=registry.gate_passed(recorded),
            severity=dg.AssetCheckSeverity.ERROR,
            description=f"version {version.version}: {recorded.tags.get('gate_summary', 'no gate result')}",
        )

    @dg.asset(key=keys.champion, partitions_def=versions, group_name="registry",
              deps=[keys.registered_model], required_resource_keys={"mlflow"}, kinds={"mlflow"})
    def champion(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        """Moves the ``champion`` alias to this partition's version, only if its record passed the gate."""
        version = str(upstream_metadata(context, keys.registered_model)["version"])
        record = registry.get_version(name, version)
        if not registry.gate_passed(record):  # runs started elsewhere may not share the blocking check
            raise dg.Failure(f"{name} version {version} has no passing gate result; the champion stays")
        previous = registry.alias_version(name, registry.CHAMPION)
        registry.set_alias(name, registry.CHAMPION, version)
        return dg.MaterializeResult(metadata={
            "model_name": name, "champion_version": version,
            "previous_champion": previous.version if previous else "none",
            "data_commit": record.tags.get("data_commit", ""),
        })

    return [registered_model, champion]
