"""group evaluation: candidate and champion on the same holdout (one record); the gate's verdict on that record."""

import math
from collections.abc import Iterator

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.evaluate.gate import evaluate_gate
from mlassets.core.evaluate.record import Evaluation
from mlassets.core.features.store import FeatureSet
from mlassets.core.train.result import Candidate
from mlassets.defs.display import number, table
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import active_run_links, version_metadata
from mlassets.defs.partitions import data_versions
from mlassets.defs.verdict import gate_check_result, gate_check_spec, gate_metadata, tag_mlflow_run

_LATENCY = ("single_median_ms", "single_p50_ms", "single_p99_ms", "batch_rows", "batch_p50_ms", "batch_p99_ms",
            "rows_per_s")
_OVERALL = {"regression": ("mae", "rmse", "bias"), "binary": ("logloss", "brier", "ece"),
            "multiclass": ("logloss", "accuracy", "macro_f1", "ece", "unseen_class_rows")}


def evaluation_metadata(result: Evaluation) -> dict[str, object]:
    """What a person reads on the evaluation asset: overall numbers, latency and size, slices, calibration, and
    the class table of a multiclass model."""
    from mlassets.core.evaluate.gate_rules import MB

    meta: dict[str, object] = {}
    for key in _OVERALL.get(result.task, ()):
        meta[f"candidate_{key}"] = number(result.candidate.get(key))
        meta[f"champion_{key}"] = number((result.champion or {}).get(key))
    candidate = result.performance.get("candidate", {})
    meta["candidate_latency_ms"] = number(candidate.get("single_median_ms"))  # what the gate reads
    meta["candidate_latency_p99_ms"] = number(candidate.get("single_p99_ms"))
    if "vs_champion_change" in candidate:
        meta["latency_vs_champion"] = number(candidate["vs_champion_change"])
    meta["candidate_size_mb"] = number(candidate.get("size_bytes", math.nan) / MB)
    meta["performance"] = table([{"model": m, **{k: p.get(k, math.nan) for k in _LATENCY},
                                  "size_mb": p.get("size_bytes", math.nan) / MB}
                                 for m, p in result.performance.items()], ["model", *_LATENCY, "size_mb"])
    if result.calibration:
        meta["calibration"] = table([{"model": m, **row} for m, report in result.calibration.items()
                                     for row in report["table"]],
                                    ["model", "bin", "lower", "upper", "count", "mean_predicted", "observed_rate"])
    meta["slices"] = table(result.slice_frame().to_dict(orient="records"))
    if result.classes:
        meta["classes"] = table(result.class_frame().to_dict(orient="records"))
    meta["derived"] = dg.MetadataValue.md("\n".join(f"- {line}" for line in result.derived) or "nothing: the config "
                                          "sets every threshold")
    meta.update({"main_metric": result.main_metric, "champion_version": result.champion_version or "none",
                 "holdout_rows": dg.MetadataValue.int(result.holdout_rows),
                 "dropped_missing_target": dg.MetadataValue.int(result.dropped_missing_target),
                 "predictions_uri": result.predictions_uri})
    return meta


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    versions_def = data_versions(cfg)
    name = cfg.model.registered_name

    @dg.asset(key=keys.evaluation, partitions_def=versions_def, group_name="evaluation",
              ins={"candidate": dg.AssetIn(keys.candidate_model), "features": dg.AssetIn(keys.features)},
              required_resource_keys={"store", "mlflow"})
    def evaluation(context: dg.AssetExecutionContext, candidate: Candidate, features: FeatureSet
                   ) -> dg.Output[Evaluation]:
        """Candidate and the live champion (by the promotion log) on this version's holdout (from ``features``):
        metrics overall and per slice (and per class for multiclass models) with bootstrap intervals, latency and
        size, calibration for probabilistic models; the record is logged to the MLflow run too."""
        from mlassets.core.evaluate import score, stream
        from mlassets.core.features.store import split_tables
        from mlassets.core.registry import promote, versions
        from mlassets.core.train.artifact import load_bundle
        from mlassets.core.train.mlflow_model import bundle_path

        version = candidate.provenance.data_commit
        store = context.resources.store.open()
        live = promote.live_version(name)
        dirs = {"candidate": bundle_path(candidate.model_uri)}
        if live:
            dirs["champion"] = versions.verified_bundle_dir(versions.get_version(name, live))
        bundles = {model: load_bundle(path) for model, path in dirs.items()}
        record = {"champion_version": live, "data_version": version,
                  "dropped_missing_target": features.dropped_missing_target}
        tables = split_tables(store, cfg, version, "holdout", budget_mb=stream.READ_BUDGET_MB)  # one chunk if it fits
        train_y = stream.read_train_target(store, cfg, version)
        result = stream.evaluate_logged(tables, cfg, bundles, dirs, train_y, score.artifact_dir(version), **record)
        score.log_evaluation(result)
        score.log_record(result, score.artifact_dir(version))
        for line in result.derived:
            context.log.info(f"derived: {line}")
        return dg.Output(result, metadata={**version_metadata(store, cfg, version), **evaluation_metadata(result),
                                           **active_run_links()})

    @dg.asset(key=keys.gate_result, partitions_def=versions_def, group_name="evaluation",
              ins={"evaluation": dg.AssetIn(keys.evaluation)}, required_resource_keys={"store", "mlflow"},
              check_specs=[gate_check_spec(keys.gate_result, versions_def)])
    def gate_result(context: dg.AssetExecutionContext, evaluation: Evaluation) -> Iterator[object]:
        """Every gate rule with value, limit and pass/fail, one sentence per failure, and the unjudged slices:
        materialized for every candidate (the verdict is data), with the check ``gate_passed`` failing for a
        rejection."""
        import mlflow

        gate = evaluate_gate(cfg.gate, evaluation)
        mlflow.log_metric("gate_passed", float(gate.passed))
        for reason in gate.reasons():
            context.log.info(f"gate: {reason}")
        names = version_metadata(context.resources.store.open(), cfg, evaluation.data_version)
        tag_mlflow_run(gate)
        yield dg.Output(gate, metadata={**gate_metadata(gate), **names, **active_run_links()})
        yield gate_check_result(gate, str(names["data_version_name"]))

    return [evaluation, gate_result]
