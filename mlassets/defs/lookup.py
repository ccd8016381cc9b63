"""Read what an upstream asset recorded for the same partition (its URIs, run ids, results); name the run."""

from __future__ import annotations

import os

import dagster as dg

LAKEFS_UI_LINK = "::lakefs::Dagster::url[url:ui]"  # lakeFS shows this commit-metadata key as a link


def upstream_metadata(context: dg.AssetExecutionContext, key: dg.AssetKey) -> dict[str, object]:
    """Metadata of the latest materialization of ``key`` for this run's partition, as plain values."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[context.partition_key]), limit=1
    ).records
    if not records:
        raise dg.Failure(f"{key.to_user_string()} has no materialization for partition {context.partition_key}")
    materialization = records[0].asset_materialization
    return {k: v.value for k, v in materialization.metadata.items()}


def run_url(run_id: str) -> str:
    """The run's page in the Dagster UI (``$DAGSTER_WEBSERVER_URL``, default http://127.0.0.1:3000)."""
    base = os.environ.get("DAGSTER_WEBSERVER_URL", "http://127.0.0.1:3000").rstrip("/")
    return f"{base}/runs/{run_id}"


def run_metadata(context: dg.AssetExecutionContext) -> dict[str, str]:
    """Names the Dagster run, asset and partition in a store commit's metadata, with a link to the run."""
    return {
        "dagster_run_id": context.run_id,
        "dagster_asset": context.asset_key.to_user_string(),
        "dagster_partition": context.partition_key if context.has_partition_key else "",
        LAKEFS_UI_LINK: run_url(context.run_id),
    }
