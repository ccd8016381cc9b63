"""Names and links between the platform's UIs: the Dagster run a store commit or an MLflow run came from, what a data
version is called (``2013-03 · 6870220f``), and the MLflow and store pages an asset's metadata links to.

``version_run_tags(cfg, data_version)`` gives the run tags of a pipeline run for a data version; every launcher
(``mlassets run``, the demo, the sensors) tags its runs with it, so the Runs list names each version.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.data.store import VersionedStore, open_store
from mlassets.core.data.version_keys import added_partitions

LAKEFS_UI_LINK = "::lakefs::Dagster::url[url:ui]"  # lakeFS shows this commit-metadata key as a link
DATASET_TAG, VERSION_NAME_TAG, PARTITIONS_TAG = "mlassets/dataset", "mlassets/version_name", "mlassets/partitions"
COMMIT_TAG = "mlassets/data_commit"  # the full commit id behind a run's data-version partition key
DAGSTER_URL_TAG = "dagster_run_url"  # on MLflow runs and model versions
MLFLOW_VERSION_NAME_TAG = "mlassets.version_name"


def run_url(run_id: str) -> str:
    """The run's page in the Dagster UI (the UI setting, ``mlassets.core.ui_urls``)."""
    from mlassets.core.ui_urls import dagster_run

    return dagster_run(run_id)


def run_metadata(context: dg.AssetExecutionContext) -> dict[str, str]:
    """Names the Dagster run, asset and partition in a store commit's metadata, with a link to the run."""
    return {
        "dagster_run_id": context.run_id,
        "dagster_asset": context.asset_key.to_user_string(),
        "dagster_partition": context.partition_key if context.has_partition_key else "",
        LAKEFS_UI_LINK: run_url(context.run_id),
    }


# ------------------------------------------------------------------ data version names


def version_run_tags(cfg: PipelineConfig, data_version: str, store: VersionedStore | None = None,
                     partitions: Sequence[str] | None = None) -> dict[str, str]:
    """Run tags of a pipeline run for ``data_version`` (a full commit id): ``mlassets/dataset``,
    ``mlassets/version_name`` (``2013-03 · 6870220f``), ``mlassets/partitions`` (what the version added) and
    ``mlassets/data_commit``. ``partitions`` when the caller knows them (a sensor holding the commit), else read
    from the store (the default one if none given)."""
    from mlassets.core import naming

    if partitions is None:
        partitions = added_partitions(store or open_store(), cfg, data_version)
    return {DATASET_TAG: cfg.dataset.name, VERSION_NAME_TAG: naming.version_label(partitions, data_version),
            PARTITIONS_TAG: ", ".join(partitions), COMMIT_TAG: data_version}


def version_metadata(store: VersionedStore, cfg: PipelineConfig, data_version: str) -> dict[str, object]:
    """The name of the version an asset partition belongs to, first in its metadata."""
    from mlassets.core import naming
    from mlassets.core.data.version_keys import version_key

    partitions = added_partitions(store, cfg, data_version)
    return {"data_version_name": naming.version_label(partitions, data_version),
            "data_version_key": version_key(partitions, data_version),
            "partitions_added": ", ".join(partitions) or "-"}


# ------------------------------------------------------------------ links


def store_link(store: VersionedStore, repo: str, commit: str) -> dg.MetadataValue:
    """A commit's page: lakeFS's UI (its API endpoint without ``/api/v1``); the local store has no UI, so the
    folder it keeps everything in."""
    settings = getattr(store, "settings", None)
    if store.backend == "lakefs" and settings is not None:
        ui = settings.endpoint.rstrip("/").removesuffix("/api/v1")
        return dg.MetadataValue.url(f"{ui}/repositories/{quote(repo, safe='')}/commits/{commit}")
    return dg.MetadataValue.path(str(Path(getattr(store, "root", ".")).resolve()))


def mlflow_links(run_id: str = "", experiment_id: str = "", model: str = "",
                 version: str | int = "") -> dict[str, dg.MetadataValue]:
    """``mlflow_run`` and ``model_version`` links for an asset's metadata (those given)."""
    from mlassets.core import tracking

    links: dict[str, dg.MetadataValue] = {}
    if run_id:
        links["mlflow_run"] = dg.MetadataValue.url(tracking.run_url(run_id, experiment_id))
    if model and str(version):
        links["model_version"] = dg.MetadataValue.url(tracking.model_version_url(model, version))
    return links


def active_run_links() -> dict[str, dg.MetadataValue]:
    """The ``mlflow_run`` link of the MLflow run this Dagster run logs into (none when there is none)."""
    import mlflow

    run = mlflow.active_run()
    return mlflow_links(run.info.run_id, run.info.experiment_id) if run is not None else {}


def active_experiment_id() -> str:
    """The experiment of the MLflow run this Dagster run logs into ("" when none), for links to its other runs."""
    import mlflow

    run = mlflow.active_run()
    return run.info.experiment_id if run is not None else ""


def mlflow_run_tags(dagster_run_id: str, dataset: str = "", label: str = "") -> dict[str, str]:
    """Tags of the MLflow run a Dagster run logs into: a link back to the Dagster run (a tag, and the run's
    description in MLflow's UI) and, when the data version is known, its name ``flights · 2013-03 · 6870220f``."""
    from mlassets.core import naming

    url = run_url(dagster_run_id)
    tags = {DAGSTER_URL_TAG: url, "mlflow.note.content": f"Dagster run [{dagster_run_id[:8]}]({url})",
            "mlflow.source.name": f"dagster run {dagster_run_id[:8]}"}  # the run list's Source column
    if dataset and label:
        name = naming.run_name(dataset, label)
        tags.update({"mlflow.runName": name, MLFLOW_VERSION_NAME_TAG: label,
                     "mlflow.note.content": f"{name}: Dagster run [{dagster_run_id[:8]}]({url})"})  # plain: no raw **
    return tags


def tags_for_dagster_run(run: dg.DagsterRun) -> dict[str, str]:
    """``mlflow_run_tags`` from a Dagster run's own tags (set by ``version_run_tags``)."""
    from mlassets.defs.fleet.runs import recorded_tags

    return {**mlflow_run_tags(run.run_id, run.tags.get(DATASET_TAG, ""), run.tags.get(VERSION_NAME_TAG, "")),
            **recorded_tags(run.tags)}  # the job spec, recorded with the model
