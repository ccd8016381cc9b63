"""The second dataset through the real assets: three orders weeks ingested, then snapshot and features of the
newest version, for the regression config and the binary one; lineage points both ways."""

from __future__ import annotations

import dagster as dg
import pytest

from mlassets.cli.demo import play as run_pipeline
from mlassets.core import paths, tracking
from mlassets.core.config import load_config, shipped_configs
from mlassets.core.data.raw import partition_tables, raw_repo
from mlassets.core.data.store import open_store
from mlassets.core.evaluate.gate import GateResult
from mlassets.core.features.split import partition_frame
from mlassets.core.records import RecordFiles
from mlassets.core.registry import versions as registry
from mlassets.core.registry.record import RegisteredVersion
from mlassets.definitions import build_definitions
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import LAKEFS_UI_LINK
from mlassets.defs.resources import default_resources
from mlassets.host.instance import get_instance
from mlassets.host.runs import QUIET, ingest
from mlassets.serve import load_champion

pytestmark = pytest.mark.e2e
WEEKS = ("2024-W01", "2024-W02", "2024-W03")


def _latest(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str) -> dict:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1
    ).records
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


@pytest.mark.parametrize("name", ["orders", "orders_late"])
def test_three_weeks_to_snapshot_and_features(home: str, name: str) -> None:
    cfg = load_config(shipped_configs()[name])
    keys = DatasetKeys.of(cfg)
    defs, instance = build_definitions([cfg]), get_instance()
    ingested = [ingest(instance, cfg, week) for week in WEEKS]
    keys_added = [i.key for i in ingested]
    assert instance.get_dynamic_partitions(f"{name}_data_versions") == keys_added
    assert keys_added == [f"{week}.{i.data_version[:8]}" for week, i in zip(WEEKS, ingested, strict=True)]
    versions = [i.data_version for i in ingested]
    newest, newest_key = versions[-1], keys_added[-1]

    wanted = {keys.snapshot, keys.features}
    assets = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and set(a.keys) & wanted]
    result = dg.materialize(assets, instance=instance, partition_key=newest_key, resources=default_resources(),
                            run_config=QUIET)

    assert result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert sorted(checks) == ["min_rows", "row_change", "schema", "target_mean", "target_quantiles"]
    assert all(c.passed for c in checks.values()), {n: c.description for n, c in checks.items()}
    if cfg.dataset.task == "binary":
        assert "binary" in checks["target_quantiles"].description
    snapshot = _latest(instance, keys.snapshot, newest_key)
    assert (snapshot["data_commit"], snapshot["parent_commit"]) == (newest, versions[-2])
    assert snapshot["partitions"] == ", ".join(WEEKS) and snapshot["new_partitions"] == WEEKS[-1]
    features = _latest(instance, keys.features, newest_key)
    assert features["data_commit"] == newest and features["parent_commit"] == versions[-2]
    assert features["partitions_computed"] == ", ".join(WEEKS) and features["partitions_reused"] == "none"
    assert min(features[f"rows_{s}"] for s in ("train", "validation", "holdout")) > 2000
    assert features["store_uri"] == f"local://{raw_repo(cfg)}/{newest}"

    # The data version's commit names the run that ingested it, and that run materialized this version.
    commit = open_store().get_commit(raw_repo(cfg), newest)
    ingest_run = commit.metadata["dagster_run_id"]
    assert commit.metadata["dagster_asset"] == keys.raw.to_user_string()
    assert commit.metadata["dagster_partition"] == WEEKS[-1]
    assert commit.metadata[LAKEFS_UI_LINK] == f"http://127.0.0.1:3000/runs/{ingest_run}"
    raw = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=keys.raw, asset_partitions=[WEEKS[-1]]), limit=1
    ).records[0]
    assert raw.run_id == ingest_run and raw.asset_materialization.metadata["data_commit"].value == newest
    instance.dispose()


def test_binary_pipeline_trains_calibrated_models_and_gates_them(home: str) -> None:
    """orders_late end to end: BCE training, log loss and calibration in the evaluation, a gate that judges
    them (one training week gives ECE ~0.054 here, over the 0.05 limit), a champion serving probabilities."""
    cfg = load_config(shipped_configs()["orders_late"])
    keys, limit = DatasetKeys.of(cfg), cfg.gate.calibration_max_ece
    instance = get_instance()
    rows = []
    for i, week in enumerate(cfg.dataset.partitions.keys[:6]):
        version = ingest(instance, cfg, week).key
        if i == 0:  # one week cannot fill three splits: the features step says so
            early = run_pipeline(instance, cfg, week, version)
            assert early.decision == "error" and not early.success
            assert early.reasons == ["orders_late__features: ValueError: features: the train split is empty "
                                     "(rows span too few days for the windows)"]
        if i >= 2:  # a training, a validation and a holdout week
            rows.append(run_pipeline(instance, cfg, week, version))
    evaluations = [_latest(instance, keys.evaluation, row.data_version) for row in rows]
    files = RecordFiles(paths.records_root())
    for row, evaluation in zip(rows, evaluations, strict=True):
        print(row.month, row.decision, row.reasons, evaluation["candidate_logloss"], evaluation["candidate_ece"])
        assert 0 < evaluation["candidate_logloss"] < 0.45  # the base rate alone scores ~0.47
        assert {"mean_predicted", "observed_rate"} <= {c.name for c in evaluation["calibration"].schema.columns}
        verdict = files.read(keys.registered_model.path, row.data_version, RegisteredVersion).record.gate_result
        assert "calibration_ece" in {r.name for r in verdict.rules}
        assert files.read(keys.gate_result.path, row.data_version, GateResult) == verdict  # rejected ones too
        if evaluation["candidate_ece"] > limit:
            assert row.decision == "reject" and any("calibration error (ECE)" in r for r in row.reasons), row
        if row.decision == "pass":
            assert evaluation["candidate_ece"] <= limit and row.success
    passed = [i for i, row in enumerate(rows) if row.decision == "pass"]
    assert passed and passed[0] < len(rows) - 1, [(r.month, r.decision, r.reasons) for r in rows]
    assert evaluations[passed[0] + 1]["champion_logloss"] > 0  # compared with the champion on the same week

    import mlflow

    tracking.configure()
    champion = registry.alias_version(cfg.model.registered_name, registry.CHAMPION)
    run = mlflow.get_run(champion.run_id)  # tracking imports MLflow only inside its functions now
    assert {"val_logloss", "best_val_logloss"} <= set(run.data.metrics) and "val_mae" not in run.data.metrics
    assert run.data.params["training.loss"] == "auto"
    week = partition_frame(partition_tables(cfg, "2024-W06"), cfg)  # raw rows plus the derived features
    prob = load_champion(cfg.model.registered_name).predict(week)
    assert ((prob > 0) & (prob < 1)).all() and abs(prob.mean() - week["late"].mean()) < 0.05
    instance.dispose()
