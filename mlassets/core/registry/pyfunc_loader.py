"""How MLflow loads an mlassets model: ``mlflow.pyfunc.load_model("models:/NAME@champion")`` scores raw rows.

Every logged model names this installed module as its pyfunc ``loader_module`` and holds its bundle as data: no
code is copied into the model folder. ``_load_pyfunc`` first checks the folder against the registered version it
is loaded as (``registered_model_meta``, which MLflow writes before loading): the registration history holds the
version, every file of the folder is the one sealed at registration (``verify_seal``), the folder is the version's
run and logged model, a bundled plug-in source is the code its record names, and the promotion log's chain and
anchor are intact when its promotions are logged. Only then is the bundle read (``weights_only=True``). A folder
loaded by a path or a run is checked against every version registered from its logged model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd


def _check(root: Path, bundle_dir: Path) -> None:
    import mlflow
    import yaml

    from mlassets.core.registry import projection, registrations, seal
    from mlassets.core.registry.client import RegistryError
    from mlassets.core.registry.folder import MLMODEL, check_folder, loaded_as
    from mlassets.core.registry.promotion import PromotionLog
    from mlassets.core.train.mlflow_model import bundle_in

    client = mlflow.MlflowClient()
    named = loaded_as(root)
    if named is not None:
        version = client.get_model_version(*named)
        registrations.check(version)
        registrations.verify_seal(version, root)
        if bundle_in(root) != bundle_dir.resolve():
            raise RegistryError(f"{bundle_dir} is not the bundle of model {version.name!r} version {version.version}")
        try:
            check_folder(root, version, bundle_dir)
        except ValueError as exc:
            raise RegistryError(str(exc)) from None
        seal.check_plugin(version, bundle_dir)
        if projection.anchored(version.name):  # its promotions are logged: trust no damaged log
            projection.refuse_if_damaged(version.name, PromotionLog())
        return
    spec = yaml.safe_load((root / MLMODEL).read_text()) or {}
    run_id, model_id = spec.get("run_id"), spec.get("model_id")
    for version in client.search_model_versions(f"run_id = '{run_id}'") if run_id else []:
        if model_id and getattr(version, "model_id", None) not in (None, "", model_id):
            continue  # another model the run logged
        if registrations.bound(version):
            registrations.verify_seal(version, root)
            seal.check_plugin(version, bundle_dir)


class BundleModel:
    """The pyfunc model: a checked bundle answering raw rows."""

    def __init__(self, bundle: Any) -> None:
        self.bundle = bundle

    def predict(self, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> Any:
        """Target units or P(1) per row; a multiclass model: ``prediction`` and ``probability_<class>`` columns."""
        from mlassets.core.train.outputs import served

        return served(self.bundle, model_input)


def _load_pyfunc(data_path: str) -> BundleModel:
    """MLflow's entry point: the bundle at ``data_path``, loaded once its model folder passed every check."""
    from mlassets.core.registry.folder import model_root
    from mlassets.core.train.artifact import load_bundle

    bundle_dir = Path(data_path)
    _check(model_root(bundle_dir), bundle_dir)
    return BundleModel(load_bundle(bundle_dir))
