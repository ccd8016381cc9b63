"""Resources shared by every dataset's assets: the versioned store, MLflow tracking, Pipes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import dagster as dg
from pydantic import Field

from mlassets.core import settings
from mlassets.core.data.store import VersionedStore, default_backend, open_store
from mlassets.defs.fleet.runs import grace_s
from mlassets.defs.jobs import STOPPED_TAG
from mlassets.defs.lookup import tags_for_dagster_run
from mlassets.defs.records import RecordIOManager
from mlassets.defs.verdict import GATE_TAG, REJECTED, keep_verdict

if TYPE_CHECKING:
    from dagster_mlflow.resources import MlFlow


class StoreResource(dg.ConfigurableResource):
    """The ``VersionedStore`` backend: ``local`` under ``$MLASSETS_HOME/store`` (default) or ``lakefs``.

    lakeFS settings left empty come from the SDK's own variables (``LAKECTL_SERVER_ENDPOINT_URL``,
    ``LAKECTL_CREDENTIALS_ACCESS_KEY_ID``, ``LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY``); give the secret as
    ``dg.EnvVar(...)`` if not through that variable, never as a literal. It is kept out of ``repr``.
    """

    backend: str = Field(default="", description="'local' or 'lakefs' (default: $MLASSETS_STORE, else local)")
    root: str = Field(default="", description="local: the store directory (default $MLASSETS_HOME/store)")
    endpoint: str = Field(default="", description="lakeFS: server URL (default $LAKECTL_SERVER_ENDPOINT_URL)")
    access_key_id: str = Field(default="", description="lakeFS: default $LAKECTL_CREDENTIALS_ACCESS_KEY_ID")
    secret_access_key: str = Field(default="", repr=False,
                                   description="lakeFS: default $LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY")
    namespace: str = Field(default="", description="lakeFS: storage namespace of new repos, e.g. s3://b/p/{repo}")

    def open(self) -> VersionedStore:
        if (self.backend or default_backend()) == "lakefs":
            return open_store("lakefs", endpoint=self.endpoint, access_key_id=self.access_key_id,
                              secret_access_key=self.secret_access_key, namespace=self.namespace)
        return open_store(self.backend, root=self.root)


# The keys of dagster-mlflow's resource config that mlassets sets (its MlFlow reads the others with .get); written
# here so that building the definitions does not import dagster-mlflow, and with it MLflow.
CONFIG_SCHEMA = {
    "experiment_name": dg.Field(dg.StringSource, is_required=True, description="MLflow experiment name."),
    "mlflow_tracking_uri": dg.Field(dg.Noneable(dg.StringSource), default_value=None, is_required=False,
                                    description="MLflow tracking URI (default: the profile's)."),
}


@dg.resource(config_schema=CONFIG_SCHEMA)
def mlflow_tracking(context: dg.InitResourceContext) -> Iterator[MlFlow]:
    """dagster-mlflow's resource, after creating the experiment with artifacts on the embedded stack.

    The MLflow run ends when the Dagster run's resources are torn down (after its last step, with the jobs'
    in-process executor): FINISHED when every step succeeded, or when the only skipped steps follow the gate's
    rejection (the candidate trained fine: its ``gate`` tag says ``rejected``), FAILED when a step failed or was
    skipped otherwise. No MLflow run stays RUNNING, and the next run in the same process is not logged into it.
    """
    import mlflow
    from dagster_mlflow.resources import MlFlow

    from mlassets.core import tracking

    tracking.configure(context.resource_config.get("mlflow_tracking_uri"), context.resource_config["experiment_name"])
    resource = MlFlow(context)
    started = mlflow.active_run()
    if started is not None and context.dagster_run is not None:  # named after its data version; links back
        mlflow.set_tags(keep_verdict(tags_for_dagster_run(context.dagster_run)))
    try:
        yield resource
    finally:
        active = mlflow.active_run()
        if active is not None and started is not None and active.info.run_id == started.info.run_id:
            mlflow.end_run(status=_status(context))


def _status(context: dg.InitResourceContext) -> str:
    import mlflow
    from mlflow.entities import RunStatus

    if context.instance is None or context.dagster_run is None:
        return RunStatus.to_string(RunStatus.FINISHED)
    run_id = context.dagster_run.run_id
    run = context.instance.get_run_by_id(run_id)
    if run is not None and STOPPED_TAG in run.tags:  # stopped on purpose (its budget), its steps skipped: no failure
        return RunStatus.to_string(RunStatus.FINISHED)
    if context.instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_FAILURE, limit=1).records:
        return RunStatus.to_string(RunStatus.FAILED)
    if not context.instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_SKIPPED, limit=1).records:
        return RunStatus.to_string(RunStatus.FINISHED)
    active = mlflow.active_run()  # steps skipped after the gate rejected the candidate: it trained fine
    rejected = active is not None and mlflow.get_run(active.info.run_id).data.tags.get(GATE_TAG) == REJECTED
    return RunStatus.to_string(RunStatus.FINISHED if rejected else RunStatus.FAILED)


def default_resources() -> dict[str, object]:
    """The resources of the profile ``$MLASSETS_PROFILE`` selects; production fails here, naming what is missing."""
    from mlassets.core import tracking

    settings.check()
    return {
        "store": StoreResource(),
        "mlflow": mlflow_tracking.configured({"experiment_name": tracking.EXPERIMENT}),
        "pipes": dg.PipesSubprocessClient(termination_timeout_seconds=grace_s()),  # a terminated run's checkpoint
        "io_manager": RecordIOManager(),
    }
