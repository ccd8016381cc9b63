"""group registry: every candidate becomes a model version; only a passing one becomes champion."""

from collections.abc import Iterator

import dagster as dg
import mlflow

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate.gate import GateResult
from mlassets.core.registry import promote, versions
from mlassets.core.registry.promotion import PromotionError
from mlassets.core.registry.record import ChampionDecision, RegisteredVersion, RegistryRecord
from mlassets.core.train.result import Candidate
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.partitions import data_versions


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    versions_def = data_versions(cfg)
    name = cfg.model.registered_name
    gate_check = dg.AssetCheckSpec(
        "gate_passed", asset=keys.registered_model, blocking=True,
        description="the version's registry record holds a passing gate result; blocks promotion",
    )

    @dg.asset(key=keys.registered_model, partitions_def=versions_def, group_name="registry",
              ins={"candidate": dg.AssetIn(keys.candidate_model), "gate": dg.AssetIn(keys.gate_result)},
              check_specs=[gate_check], required_resource_keys={"mlflow"}, kinds={"mlflow"})
    def registered_model(context: dg.AssetExecutionContext, candidate: Candidate,
                         gate: GateResult) -> Iterator[object]:
        """The candidate as an MLflow model version whose tags are its registry record (provenance and gate
        result); its input/output signature was recorded when the training run logged it."""
        record = RegistryRecord.of(candidate.provenance, context.run_id, gate)
        version = versions.register(name, candidate.model_uri, record)
        if gate.passed:
            versions.set_alias(name, versions.CHALLENGER, version.version)
        mlflow.set_tag("registered_version", version.version)
        registered = RegisteredVersion(name=name, version=str(version.version), record=record)
        yield dg.Output(registered, metadata={
            "model_name": name, "version": registered.version, "gate_passed": gate.passed,
            "data_commit": record.data_commit, "git_sha": record.git_sha, "gated_against": gate.gated_against,
        })
        yield dg.AssetCheckResult(
            check_name="gate_passed", passed=gate.passed, severity=dg.AssetCheckSeverity.ERROR,
            description=f"version {registered.version}: {gate.summary()}",
        )

    @dg.asset(key=keys.champion, partitions_def=versions_def, group_name="registry",
              ins={"registered": dg.AssetIn(keys.registered_model)}, required_resource_keys={"mlflow"},
              kinds={"mlflow"})
    def champion(context: dg.AssetExecutionContext, registered: RegisteredVersion) -> dg.Output[ChampionDecision]:
        """Moves ``champion`` to this partition's version through the promotion log (``promotion: auto``),
        only if its recorded gate passed against the champion that is still live; ``manual`` waits."""
        version, gate = registered.version, registered.record.gate_result
        live = promote.live_version(name)
        meta = {"model_name": name, "version": version, "data_commit": registered.record.data_commit,
                "gate_passed": gate.passed, "promotion": cfg.gate.promotion}
        if not gate.passed:  # runs started by a sensor may not share the blocking check
            raise dg.Failure(f"{name} version {version} has no passing gate result; the champion stays v{live}",
                             metadata=meta)
        if cfg.gate.promotion == "manual" or live == version:
            note = "already champion" if live == version else "awaiting `mlassets promote` (promotion: manual)"
            decision = ChampionDecision(name=name, version=version, champion_version=live or "none", promoted=False,
                                        note=note)
            return dg.Output(decision, metadata={**meta, "champion_version": decision.champion_version, "note": note})
        try:
            entry = promote.promote(name, version, who=f"dagster run {context.run_id}",
                                    reason="gate passed (promotion: auto)", gated_against=gate.gated_against)
        except (PromotionError, versions.RegistryError) as exc:
            raise dg.Failure(str(exc), metadata=meta) from None
        decision = ChampionDecision(name=name, version=version, champion_version=version, promoted=True,
                                    previous_champion=entry.from_version or "none", promotion_seq=entry.seq,
                                    promotion_hash=entry.hash)
        return dg.Output(decision, metadata={
            **meta, "champion_version": version, "previous_champion": decision.previous_champion,
            "promotion_seq": entry.seq, "promotion_hash": entry.hash,
        })

    return [registered_model, champion]
