"""group registry: every candidate becomes a model version; only a passing one becomes champion.

``registered_model`` reads the evaluation record and judges it with the gate's own function (``evaluate_gate``,
the one ``gate_result`` calls), so a rejected candidate is registered too. ``champion`` yields no output for a
rejected version (an optional output: a finished step that says why in its log), so the champion stays where it was
and ``predictions`` is skipped; the run succeeds, the check ``gate_passed`` on ``gate_result`` failed.
"""

from collections.abc import Iterator

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate.gate import GateResult, evaluate_gate
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.registry.made import AGAIN_TAG, RETRAIN_OF_TAG, ROOT_RUN_TAG, Made
from mlassets.core.registry.record import ChampionDecision, RegisteredVersion, RegistryRecord
from mlassets.core.train.result import Candidate
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
from mlassets.defs.partitions import data_versions
from mlassets.defs.verdict import GATE_TAG, verdict


def rejection(name: str, version: str, label: str, gate: GateResult, live: str | None) -> str:
    """Why a version does not become champion, reasons first (the ``champion`` step's log line)."""
    reasons = "; ".join(gate.reasons()) or "the gate failed"
    stays = f"v{live}" if live else "none"
    return f"gate rejected {label}: {reasons}. {name} version {version} has no passing gate result; the champion " \
           f"stays {stays}."


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    versions_def = data_versions(cfg)
    name = cfg.model.registered_name
    doc = ("The candidate as an MLflow model version whose tags are its registry record (provenance and gate "
           "result), described for people; its input/output signature was recorded when the training run logged it.")
    out = keys.registered_model.to_python_identifier()

    @dg.multi_asset(  # a multi-asset only to make the output optional: none when the candidate was registered
        # already (``defs.one_candidate``); it is one asset
        name=out, outs={out: dg.AssetOut(key=keys.registered_model, group_name="registry", kinds={"mlflow"},
                                         description=doc, is_required=False)},
        ins={"candidate": dg.AssetIn(keys.candidate_model), "evaluation": dg.AssetIn(keys.evaluation)},
        partitions_def=versions_def, required_resource_keys={"store", "mlflow"},
        can_subset=True)
    def registered_model(context: dg.AssetExecutionContext, candidate: Candidate,
                         evaluation: Evaluation) -> Iterator[object]:
        import mlflow

        from mlassets.core.registry import versions

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
                links={DAGSTER_URL_TAG: url, MLFLOW_VERSION_NAME_TAG: label, ROOT_RUN_TAG: root, **again,
                       GATE_TAG: verdict(gate)})  # readable beside the record's tags: passed or rejected
        mlflow.set_tag("registered_version", version.version)
        registered = RegisteredVersion(name=name, version=str(version.version), record=record)
        yield dg.Output(registered, output_name=out, metadata={
            **names, "model_name": name, "version": registered.version, "gate_passed": gate.passed,
            "data_commit": record.data_commit, "git_sha": record.git_sha, "gated_against": gate.gated_against,
            **mlflow_links(record.mlflow_run_id, active_experiment_id(), name, registered.version),
        })

    @dg.asset(key=keys.champion, partitions_def=versions_def, group_name="registry",
              ins={"registered": dg.AssetIn(keys.registered_model)}, deps=[keys.gate_result],
              required_resource_keys={"store", "mlflow"}, kinds={"mlflow"}, output_required=False)
    def champion(context: dg.AssetExecutionContext, registered: RegisteredVersion) -> Iterator[dg.Output]:
        """Moves ``champion`` to this partition's version through the promotion log (``promotion: auto``),
        only if its recorded gate passed against the champion that is still live; ``manual`` waits; ``online``
        starts its online test (``serving.online``: a canary or a shadow on the endpoint, which decides). An alias
        moved outside mlassets (MLflow's own buttons) is reported and set back from the log first. A rejected
        version yields nothing: the champion stays, and ``predictions`` is skipped."""
        decision = _decide(context, registered)
        if decision is not None:
            yield decision

    def _decide(context: dg.AssetExecutionContext, registered: RegisteredVersion
                ) -> dg.Output[ChampionDecision] | None:
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
        if not gate.passed:  # an answer, not a failure: nothing to promote
            context.log.info(rejection(name, version, str(names["data_version_name"]), gate, live))
            return None
        if cfg.gate.promotion == "manual" or live == version:
            note = "already champion" if live == version else "awaiting `mlassets promote` (promotion: manual)"
            if live != version:  # the passing version that waits, named in MLflow's UI until it is promoted
                versions.set_alias(name, versions.CHALLENGER, version)
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
