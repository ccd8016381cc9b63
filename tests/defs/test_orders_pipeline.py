"""The second dataset through the real assets: three orders weeks ingested, then snapshot and features of the
newest version, for the regression config and the binary one; lineage points both ways."""

from __future__ import annotations

import dagster as dg
import pytest

from mlassets.core.config import load_config, shipped_configs
from mlassets.core.datasets import raw_repo
from mlassets.core.store import open_store
from mlassets.definitions import build_definitions
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import LAKEFS_UI_LINK
from mlassets.defs.resources import StoreResource
from mlassets.demo import QUIET, ingest
from mlassets.instance import get_instance

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
    versions = [ingest(defs, instance, cfg, week) for week in WEEKS]
    assert instance.get_dynamic_partitions(f"{name}_data_versions") == versions
    newest = versions[-1]

    wanted = {keys.snapshot, keys.features}
    assets = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and set(a.keys) & wanted]
    result = dg.materialize(assets, instance=instance, partition_key=newest, resources={"store": StoreResource()},
                            run_config=QUIET)

    assert result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert sorted(checks) == ["min_rows", "row_change", "schema", "target_mean", "target_quantiles"]
    assert all(c.passed for c in checks.values()), {n: c.description for n, c in checks.items()}
    if cfg.dataset.task == "binary":
        assert "binary" in checks["target_quantiles"].description
    snapshot = _latest(instance, keys.snapshot, newest)
    assert (snapshot["data_commit"], snapshot["parent_commit"]) == (newest, versions[-2])
    assert snapshot["months"] == ", ".join(WEEKS) and snapshot["new_partitions"] == WEEKS[-1]
    features = _latest(instance, keys.features, newest)
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
