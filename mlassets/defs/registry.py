"""group registry: every candidate becomes a model version; only a passing one becomes champion."""

import json
from collections.abc import Iterator

import dagster as dg
import mlflow

from mlassets.core import registry
from mlassets.core.config import PipelineConfig
from mlassets.core.promotion import PromotionError
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
        """The candidate as an MLflow model version whose tags are its full record and gate result (its
        input/output signature was recorded when the training run logged it)."""
        candidate = upstream_metadata(context, keys.candidate_model)
        gate = upstream_metadata(context, keys.gate_result)
        model_uri = str(candidate["model_uri"])
        tags = {k: str(candidate[k]) for k in RECORD_KEYS if k in candidate}
        tags.update({"dagster_run_id": context.run_id, "gate_passed": str(bool(gate["passed"])).lower(),
                     "gate_summary": str(gate["summary"])[:5000], "gate_result": json.dumps(gate["gate_json"])})
        if gate.get("champion_version") is not None:  # the champion the gate compared with ("none": none)
            tags["gated_against"] = str(gate["champion_version"])
        version = registry.register(name, model_uri, tags)
        if gate["passed"]:
            registry.set_alias(name, registry.CHALLENGER, version.version)
        mlflow.set_tag("registered_version", version.version)
        yield dg.MaterializeResult(metadata={
            "model_name": name, "version": version.version, "gate_passed": bool(gate["passed"]),
            "data_commit": tags.get("data_commit", ""), "git_sha": tags.get("git_sha", ""),
            "gated_against": tags.get("gated_against", "unknown"),
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
        """Moves ``champion`` to this partition's version through the promotion log (``promotion: auto``),
        only if its recorded gate passed against the champion that is still live; ``manual`` waits."""
        version = str(upstream_metadata(context, keys.registered_model)["version"])
        record = registry.get_version(name, version)
        live = registry.live_version(name)
        meta = {"model_name": name, "version": version, "data_commit": record.tags.get("data_commit", ""),
                "gate_passed": registry.gate_passed(record), "promotion": cfg.gate.promotion}
        if not registry.gate_passed(record):  # runs started by a sensor may not share the blocking check
            raise dg.Failure(f"{name} version {version} has no passing gate result; the champion stays v{live}",
                             metadata=meta)
        if cfg.gate.promotion == "manual" or live == version:
            note = "already champion" if live == version else "awaiting `mlassets promote` (promotion: manual)"
            return dg.MaterializeResult(metadata={**meta, "champion_version": live or "none", "note": note})
        try:
            entry = registry.promote(name, version, who=f"dagster run {context.run_id}",
                                     reason="gate passed (promotion: auto)",
                                     gated_against=record.tags.get("gated_against"))
        except (PromotionError, registry.RegistryError) as exc:
            raise dg.Failure(str(exc), metadata=meta) from None
        return dg.MaterializeResult(metadata={
            **meta, "champion_version": version, "previous_champion": entry.from_version or "none",
            "promotion_seq": entry.seq, "promotion_hash": entry.hash,
        })

    return [registered_model, champion]
