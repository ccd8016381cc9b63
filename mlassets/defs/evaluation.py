"""group evaluation: candidate and champion on the same holdout; the gate's verdict on the candidate."""

import dagster as dg
import mlflow

from mlassets.core import registry, scoring, tracking
from mlassets.core.artifact import load_bundle
from mlassets.core.config import PipelineConfig
from mlassets.core.feature_store import read_split
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import upstream_metadata
from mlassets.defs.partitions import data_versions


def _slice_table(records: list[dict]) -> dg.TableMetadataValue:
    columns = list(records[0]) if records else ["slice"]
    return dg.MetadataValue.table(
        records=[dg.TableRecord({k: (v if v == v else None) for k, v in r.items()}) for r in records],
        schema=dg.TableSchema(columns=[dg.TableColumn(c, "string" if c in ("slice", "value") else "float")
                                       for c in columns]),
    )


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    versions = data_versions(cfg)

    @dg.asset(key=keys.evaluation, partitions_def=versions, group_name="evaluation",
              deps=[keys.candidate_model], required_resource_keys={"store", "mlflow"})
    def evaluation(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        """Candidate and current champion scored on this version's holdout, overall and per slice."""
        candidate = upstream_metadata(context, keys.candidate_model)
        holdout = read_split(context.resources.store.open(), cfg, context.partition_key, "holdout")
        champ = registry.alias_version(cfg.model.registered_name, registry.CHAMPION)
        predictions = scoring.score_holdout(
            holdout, cfg, load_bundle(tracking.bundle_path(str(candidate["model_uri"]))),
            registry.load_version_bundle(champ) if champ else None,
        )
        result = scoring.evaluation_of(predictions, cfg)
        uri = scoring.log_predictions(predictions, f"evaluation/{context.partition_key[:16]}")
        mlflow.log_metrics({f"holdout_candidate_{k}": v for k, v in result.candidate.items()})
        champion_mae = result.champion["mae"] if result.champion else float("nan")
        return dg.MaterializeResult(metadata={
            "candidate_mae": dg.MetadataValue.float(result.candidate["mae"]),
            "champion_mae": dg.MetadataValue.float(champion_mae),
            "champion_version": champ.version if champ else "none",
            "holdout_rows": dg.MetadataValue.int(len(predictions)),
            "predictions_uri": uri,
            "slices": _slice_table(result.to_dict()["slices"]),
        })

    @dg.asset(key=keys.gate_result, partitions_def=versions, group_name="evaluation",
              deps=[keys.evaluation], required_resource_keys={"mlflow"})
    def gate_result(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        """Every gate rule with value, limit and pass/fail, and one sentence per failure."""
        evaluated = upstream_metadata(context, keys.evaluation)
        gate = scoring.gate_of(scoring.load_predictions(str(evaluated["predictions_uri"])), cfg)
        mlflow.log_dict(gate.to_dict(), f"gate/{context.partition_key[:16]}.json")
        mlflow.log_metric("gate_passed", float(gate.passed))
        for reason in gate.reasons():
            context.log.warning(f"gate: {reason}")
        return dg.MaterializeResult(metadata={
            "passed": gate.passed,
            "summary": gate.summary(),
            "reasons": dg.MetadataValue.md("\n".join(f"- {r}" for r in gate.reasons()) or "all rules passed"),
            "rules": dg.MetadataValue.table(
                records=[dg.TableRecord({"rule": r.name, "value": float(r.value), "limit": float(r.limit),
                                         "passed": r.passed, "reason": r.reason}) for r in gate.rules],
                schema=dg.TableSchema(columns=[dg.TableColumn("rule"), dg.TableColumn("value", "float"),
                                               dg.TableColumn("limit", "float"), dg.TableColumn("passed", "bool"),
                                               dg.TableColumn("reason")]),
            ),
            "gate_json": dg.MetadataValue.json(gate.to_dict()),
            "champion_version": evaluated.get("champion_version", "none"),
        })

    return [evaluation, gate_result]


