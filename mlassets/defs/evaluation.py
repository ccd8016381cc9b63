"""group evaluation: candidate and champion on the same holdout; the gate's verdict on the candidate."""

import math

import dagster as dg
import mlflow

from mlassets.core import registry, scoring, tracking
from mlassets.core.artifact import load_bundle
from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate import Evaluation
from mlassets.core.feature_store import read_split
from mlassets.core.gate_rules import MB
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import upstream_metadata
from mlassets.defs.partitions import data_versions

_TEXT = ("slice", "value", "model", "rule", "reason")
_LATENCY = ("single_p50_ms", "single_p99_ms", "batch_rows", "batch_p50_ms", "batch_p99_ms", "rows_per_s")
_OVERALL = {"regression": ("mae", "rmse", "bias"), "binary": ("logloss", "brier", "ece")}


def _cell(value: object) -> object:
    return None if isinstance(value, float) and math.isnan(value) else value


def _table(records: list[dict], columns: list[str] | None = None) -> dg.TableMetadataValue:
    columns = columns or (list(records[0]) if records else ["slice"])

    def kind(c: str) -> str:
        return "string" if c in _TEXT else "bool" if c == "passed" else "int" if c in ("n", "count", "bin") else "float"

    return dg.MetadataValue.table(
        records=[dg.TableRecord({c: _cell(r.get(c)) for c in columns}) for r in records],
        schema=dg.TableSchema(columns=[dg.TableColumn(c, kind(c)) for c in columns]),
    )


def _performance_table(result: Evaluation) -> dg.TableMetadataValue:
    records = [{"model": model, **{k: perf.get(k, math.nan) for k in _LATENCY},
                "size_mb": perf.get("size_bytes", math.nan) / MB} for model, perf in result.performance.items()]
    return _table(records, ["model", *_LATENCY, "size_mb"])


def _calibration_table(result: Evaluation) -> dg.TableMetadataValue:
    records = [{"model": model, **row} for model, report in (result.calibration or {}).items()
               for row in report["table"]]
    return _table(records, ["model", "bin", "lower", "upper", "count", "mean_predicted", "observed_rate"])


def _evaluation_metadata(result: Evaluation) -> dict[str, object]:
    meta: dict[str, object] = {}
    for key in _OVERALL.get(result.task, ()):
        meta[f"candidate_{key}"] = dg.MetadataValue.float(result.candidate.get(key, math.nan))
        meta[f"champion_{key}"] = dg.MetadataValue.float((result.champion or {}).get(key, math.nan))
    candidate = result.performance.get("candidate", {})
    meta["candidate_latency_p99_ms"] = dg.MetadataValue.float(candidate.get("single_p99_ms", math.nan))
    meta["candidate_size_mb"] = dg.MetadataValue.float(candidate.get("size_bytes", math.nan) / MB)
    meta["performance"] = _performance_table(result)
    if result.calibration:
        meta["calibration"] = _calibration_table(result)
    meta["slices"] = _table(result.to_dict()["slices"])
    return meta


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    versions = data_versions(cfg)

    @dg.asset(key=keys.evaluation, partitions_def=versions, group_name="evaluation",
              deps=[keys.candidate_model], required_resource_keys={"store", "mlflow"})
    def evaluation(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        """Candidate and current champion on this version's holdout: metrics overall and per slice,
        latency and size (and calibration for binary models)."""
        candidate = upstream_metadata(context, keys.candidate_model)
        holdout = read_split(context.resources.store.open(), cfg, context.partition_key, "holdout")
        champ = registry.alias_version(cfg.model.registered_name, registry.CHAMPION)
        dirs = {"candidate": tracking.bundle_path(str(candidate["model_uri"]))}
        if champ:
            dirs["champion"] = tracking.bundle_path(champ.source)
        bundles = {model: load_bundle(path) for model, path in dirs.items()}
        predictions = scoring.score_holdout(holdout, cfg, bundles["candidate"], bundles.get("champion"))
        performance = scoring.measure_models(bundles, dirs, holdout, cfg.training.seed)
        result = scoring.evaluation_of(predictions, cfg, performance)
        path = f"evaluation/{context.partition_key[:16]}"
        uri = scoring.log_predictions(predictions, path)
        evaluation_uri = scoring.log_evaluation(result, path)
        return dg.MaterializeResult(metadata={
            **_evaluation_metadata(result),
            "main_metric": cfg.gate.main_metric,
            "champion_version": champ.version if champ else "none",
            "holdout_rows": dg.MetadataValue.int(len(predictions)),
            "predictions_uri": uri,
            "evaluation_uri": evaluation_uri,
        })

    @dg.asset(key=keys.gate_result, partitions_def=versions, group_name="evaluation",
              deps=[keys.evaluation], required_resource_keys={"mlflow"})
    def gate_result(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        """Every gate rule with value, limit and pass/fail, and one sentence per failure."""
        evaluated = upstream_metadata(context, keys.evaluation)
        measured = scoring.load_evaluation(str(evaluated["evaluation_uri"])) if "evaluation_uri" in evaluated else None
        gate = scoring.gate_of(scoring.load_predictions(str(evaluated["predictions_uri"])), cfg, measured)
        mlflow.log_dict(gate.to_dict(), f"gate/{context.partition_key[:16]}.json")
        mlflow.log_metric("gate_passed", float(gate.passed))
        for reason in gate.reasons():
            context.log.warning(f"gate: {reason}")
        return dg.MaterializeResult(metadata={
            "passed": gate.passed,
            "summary": gate.summary(),
            "reasons": dg.MetadataValue.md("\n".join(f"- {r}" for r in gate.reasons()) or "all rules passed"),
            "rules": _table([{"rule": r.name, "value": r.value, "limit": r.limit, "passed": r.passed,
                              "reason": r.reason} for r in gate.rules]),
            "gate_json": dg.MetadataValue.json(gate.to_dict()),
            "champion_version": evaluated.get("champion_version", "none"),
        })

    return [evaluation, gate_result]
