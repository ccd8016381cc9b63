"""A schema-invalid data version that bypassed ingestion's validation fails the snapshot's blocking check (defense
in depth), and nothing downstream materializes."""

from __future__ import annotations

import dagster as dg
import mlflow
import pytest

from mlassets.cli.demo import play as run_pipeline
from mlassets.core import tracking
from mlassets.core.data.ingest import ingest_partition
from mlassets.core.data.raw import partition_tables
from mlassets.core.data.store import open_store
from mlassets.host.instance import get_instance
from tests.conftest import small_flights

pytestmark = pytest.mark.e2e
DOWNSTREAM = ("features", "candidate_model", "evaluation", "gate_result", "registered_model", "champion")


def test_schema_invalid_month_is_blocked_before_features(home):
    cfg = small_flights()
    instance = get_instance()
    tables = partition_tables(cfg, "2013-01")
    flights = tables["flights"].copy()
    flights.loc[7, "origin"] = "XXX"
    bad = {**tables, "flights": flights}
    ingested = ingest_partition(open_store(), cfg, "2013-01", bad, validate=False)
    version = ingested.key
    instance.add_dynamic_partitions("flights_data_versions", [version])

    row = run_pipeline(instance, cfg, "2013-01", version)

    assert row.decision == "invalid data" and not row.success
    assert any("'origin'" in r and "XXX" in r for r in row.reasons), row.reasons
    snapshot = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["flights", "snapshot"]), asset_partitions=[version]), limit=1
    ).records
    assert snapshot[0].asset_materialization.metadata["data_commit"].value == ingested.data_version
    for name in DOWNSTREAM:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(["flights", name]), asset_partitions=[version]), limit=1
        ).records
        assert not records, f"{name} materialized from invalid data"
    tracking.configure()
    assert not mlflow.MlflowClient().search_registered_models()
    assert mlflow.active_run() is None  # the MLflow run ended with the Dagster run, though its last steps skipped
    runs = mlflow.search_runs(search_all_experiments=True, filter_string=f"tags.dagster_run_id = '{row.run_id}'")
    assert list(runs["status"]) == ["FAILED"]
    instance.dispose()
