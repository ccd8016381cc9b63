"""Resources shared by every dataset's assets: the versioned store, MLflow tracking, Pipes."""

from __future__ import annotations

import dagster as dg
from dagster_mlflow.resources import CONFIG_SCHEMA, MlFlow

from mlassets.core import tracking
from mlassets.core.store import VersionedStore, open_store


class StoreResource(dg.ConfigurableResource):
    """The ``VersionedStore`` backend (``local`` under ``$MLASSETS_HOME/store`` by default)."""

    backend: str = "local"
    root: str = ""

    def open(self) -> VersionedStore:
        return open_store(self.backend, **({"root": self.root} if self.root else {}))


@dg.resource(config_schema=CONFIG_SCHEMA)
def mlflow_tracking(context: dg.InitResourceContext) -> MlFlow:
    """dagster-mlflow's resource, after creating the experiment with artifacts on the embedded stack."""
    tracking.configure(context.resource_config.get("mlflow_tracking_uri"), context.resource_config["experiment_name"])
    return MlFlow(context)


def default_resources() -> dict[str, object]:
    return {
        "store": StoreResource(),
        "mlflow": mlflow_tracking.configured({"experiment_name": tracking.EXPERIMENT}),
        "pipes": dg.PipesSubprocessClient(),
    }
