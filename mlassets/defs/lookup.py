"""Name the Dagster run in what an asset writes elsewhere (store commit metadata), with a link to the run."""

from __future__ import annotations

import os

import dagster as dg

LAKEFS_UI_LINK = "::lakefs::Dagster::url[url:ui]"  # lakeFS shows this commit-metadata key as a link


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
