"""group registry: every candidate becomes a model version; only a passing one becomes champion.

``registered_model`` reads the evaluation record and judges it with the gate's own function (``evaluate_gate``,
the one ``gate_result`` calls), so a rejected candidate is registered too, while its ``gate_result`` partition
fails. A rejected candidate fails its run with the gate's reasons as the failure's first words (a ``dg.Failure``
raised after the blocking check ``gate_passed`` reports them), so the run's page and the check's history say why;
``champion`` waits for ``gate_result``, so a rejected version's champion partition is failed as well.
"""

from collections.abc import Iterator

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate.gate import GateResult, evaluate_gate
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.registry.made import AGAIN_TAG, RETRAIN_OF_TAG, ROOT_RUN_TAG, Made
from mlassets.core.registry.record import ChampionDecision, RegisteredVersion, RegistryRecord
from mlassets.core.train.result import Candidate
from mlassets.defs.display import table
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import (
    DAGSTER_URL_TAG,
    MLFLOW_VERSION_NAME_TAG,
    active_experiment_id,
    mlflow_links,
    run_url,
    version_metadata,
)
from mlassets.defs.one_candidate import stop_reason, stopped
from mlassets.defs.partitions import blocking_check, data_versions
from mlassets.defs.verdict import rejection_failure


def rejection(name: str, version: str, label: str, gate: GateResult, live: str | None) -> str:
    """Why a version may not become champion, reasons first: what a failed run and its check say."""
    reasons = "; ".join(gate.reasons()) or "the gate failed"
    stays = f"v{live}" if live else "none"
    return f"gate rejected {label}: {reasons}. {name} version {version} has no passing gate result; the champion " \
           f"stays {stays}."


def check_result(name: str, version: str, label: str, gate: GateResult) -> dg.AssetCheckResult:
    """``gate_passed`` for this partition: the verdict, and every failed rule with its value and limit."""
    failed = [{"rule": r.name, "value": r.value, "limit": r.limit, "reason": r.reason} for r in gate.failures()]
    text = f"v{version} · {label}: " + (gate.summary() if gate.passed else "; ".join(gate.reasons()) or "fail")
    return dg.AssetCheckResult(
        check_name="gate_passed", passed=gate.passed, severity=dg.AssetCheckSeverity.ERROR, description=text,
        metadata={"data_version_name": label, "model_version": version,
                  "failed_rules": table(failed, ["rule", "value", "limit", "reason"]),
                  "reasons": dg.MetadataValue.md("\n".join(f"- {r}" for r in gate.reasons()) or "all rules passed"),
                  "gated_against": gate.gated_against, **mlflow_links(model=name, version=version)},
    )


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    versions_def = data_versions(cfg)
    name = cfg.model.registered_name
    gate_check = blocking_check("gate_passed", keys.registered_model, versions_def,
                                "per data version: its registry record holds a passing gate result (blocks "
                                "promotion). A rejected version stays Failed in this check's status while the latest "
                                "execution, a newer version, passes: the history lists each version's verdict")

    doc = ("The candidate as an MLflow model version whose tags are its registry record (provenance and gate "
           "result), described for people; its input/output signature was recorded when the training run logged it.")
    out = keys.registered_model.to_python_identifier()

    @dg.multi_asset(  # a multi-asset only to make the output and its check optional: none when the candidate was
        # registered already (``defs.one_candidate``); it is one asset
        name=out, outs={out: dg.AssetOut(key=keys.registered_model, group_name="registry", kinds={"mlflow"},
                                         description=doc, is_required=False)},
        ins={"candidate": dg.AssetIn(keys.candidate_model), "evaluation": dg.AssetIn(keys.evaluation)},
        partitions_def=versions_def, check_specs=[gate_check], required_resource_keys={"store", "mlflow"},
        can_subset=True)
    def registered_model(context: dg.AssetExecutionContext, candidate: Candidate,
                         evaluation: Evaluation) -> Iterator[object]:
        import mlflow

        from mlassets.core.registry import promote, versions

        gate = evaluate_gate(cfg.gate, evaluation)
        record = RegistryRecord.of(candidate.provenance, context.run_id, gate)
        names = version_metadata(context.resources.store.open(), cfg, record.data_commit)
        label, url = str(names["data_version_name"]), run_url(context.run_id)
        root = context.run.root_run_id or context.run_id  # a retry of the run finds the version it registered
        version = versions.registered_by(name, candidate.model_uri, ROOT_RUN_TAG, root)
        if version is None:
            duplicate = stop_reason(context, cfg, keys, Made.of(candidate.provenance), "nothing registered")
            if duplicate:  # a candidate made from the same data, config and code is registered already
                stopped(context, duplicate, "already registered")
                return
            again = {RETRAIN_OF_TAG: context.run.tags[AGAIN_TAG]} if AGAIN_TAG in context.run.tags else {}
            version = versions.register(
                name, candidate.model_uri, record, description=versions.describe(record, label, url),
                links={DAGSTER_URL_TAG: url, MLFLOW_VERSION_NAME_TAG: label, ROOT_RUN_TAG: root, **again})
        if gate.passed:
            versions.set_alias(name, versions.CHALLENGER, version.version)
        mlflow.set_tag("registered_version", version.version)
        registered = RegisteredVersion(name=name, version=str(version.version), record=record)
        yield dg.Output(registered, output_name=out, metadata={
            **names, "model_name": name, "version": registered.version, "gate_passed": gate.passed,
            "data_commit": record.data_commit, "git_sha": record.git_sha, "gated_against": gate.gated_against,
            **mlflow_links(record.mlflow_run_id, active_experiment_id(), name, registered.version),
        })
        yield check_result(name, registered.version, label, gate)
        if not gate.passed:  # the step fails with the reasons, not with Dagster's "1 blocking asset check failed"
            raise rejection_failure(rejection(name, registered.version, label, gate, promote.live_version(name)),
                                    {"failed_rules": dg.MetadataValue.md("\n".join(f"- {r}" for r in gate.reasons())
                                                                         or "-")})

    @dg.asset(key=keys.champion, partitions_def=versions_def, group_name="registry",
              ins={"registered": dg.AssetIn(keys.registered_model)}, deps=[keys.gate_result],
              required_resource_keys={"store", "mlflow"}, kinds={"mlflow"})
    def champion(context: dg.AssetExecutionContext, registered: RegisteredVersion) -> dg.Output[ChampionDecision]:
        """Moves ``champion`` to this partition's version through the promotion log (``promotion: auto``),
        only if its recorded gate passed against the champion that is still live; ``manual`` waits; ``online``
        starts its online test (``serving.online``: a canary or a shadow on the endpoint, which decides). An alias
        moved outside mlassets (MLflow's own buttons) is reported and set back from the log first."""
        from mlassets.core.registry import promote, versions
        from mlassets.core.registry.promotion import PromotionError

        version, record = registered.version, registered.record
        gate = record.gate_result
        names = version_metadata(context.resources.store.open(), cfg, record.data_commit)
        meta = {**names, "model_name": name, "version": version, "data_commit": record.data_commit,
                "gate_passed": gate.passed, "promotion": cfg.gate.promotion,
                **mlflow_links(record.mlflow_run_id, active_experiment_id(), name, version)}
        try:
            repairs = promote.sync(name)  # the log is the truth: a disagreeing alias is reported, then repaired
        except PromotionError as exc:
            raise dg.Failure(str(exc), metadata=meta) from None
        for line in repairs:
            context.log.warning(line)
        meta["alias_disagreement"] = dg.MetadataValue.md("\n".join(f"- {r}" for r in repairs) or "none")
        live = promote.live_version(name)
        if not gate.passed:  # runs started by a sensor may not share the blocking check
            raise dg.Failure(rejection(name, version, str(names["data_version_name"]), gate, live), metadata=meta)
        if cfg.gate.promotion == "manual" or live == version:
            note = "already champion" if live == version else "awaiting `mlassets promote` (promotion: manual)"
            decision = ChampionDecision(name=name, version=version, champion_version=live or "none", promoted=False,
                                        note=note)
            return dg.Output(decision, metadata={**meta, "champion_version": decision.champion_version, "note": note})
        if cfg.gate.promotion == "online" and live is not None:  # a first champion has nothing to test against
            return _online_start(context, name, version, live, meta)
        try:
            entry = promote.promote(name, version, who=f"dagster run {context.run_id}",
                                    reason=f"gate passed (promotion: {cfg.gate.promotion})",
                                    gated_against=gate.gated_against)
        except (PromotionError, versions.RegistryError) as exc:
            raise dg.Failure(str(exc), metadata=meta) from None
        decision = ChampionDecision(name=name, version=version, champion_version=version, promoted=True,
                                    previous_champion=entry.from_version or "none", promotion_seq=entry.seq,
                                    promotion_hash=entry.hash)
        return dg.Output(decision, metadata={
            **meta, "champion_version": version, "previous_champion": decision.previous_champion,
            "promotion_seq": entry.seq, "promotion_hash": entry.hash,
        })

    def _online_start(context: dg.AssetExecutionContext, name: str, version: str, live: str,
                      meta: dict) -> dg.Output[ChampionDecision]:
        from mlassets.core.registry import online_log
        from mlassets.core.registry.promotion import PromotionError

        mode = cfg.serving.online.mode
        try:
            entry = online_log.start(name, version, mode, who=f"dagster run {context.run_id}",
                                 reason=f"gate passed (promotion: online); {mode} against v{live}")
        except PromotionError as exc:
            raise dg.Failure(str(exc), metadata=meta) from None
        note = f"online test started: {mode} against v{live} (mlassets online status {name})"
        decision = ChampionDecision(name=name, version=version, champion_version=live, promoted=False, note=note,
                                    previous_champion=live, promotion_seq=entry.seq, promotion_hash=entry.hash)
        return dg.Output(decision, metadata={**meta, "champion_version": live, "note": note,
                                             "promotion_seq": entry.seq, "promotion_hash": entry.hash})

    return [registered_model, champion]
