"""MLflow "models from code" wrapper: ``mlflow.pyfunc.load_model("models:/NAME@champion")`` scores raw rows.

MLflow copies this file into every logged model. Loading checks the bundle's manifest, loads the weights with
``weights_only=True``, and refuses weights that differ from the registry record of the version registered
from this model's training run (a swapped ``weights.pt``, or a whole bundle copied from another version).
"""

from pathlib import Path

import mlflow
import pandas as pd
import yaml


def _check_against_the_registry(bundle_dir: str) -> None:
    from mlassets.core.records import RecordError
    from mlassets.core.train.artifact import check_weights
    from mlassets.core.train.result import Provenance

    mlmodel = Path(bundle_dir).resolve().parents[1] / "MLmodel"  # <model>/artifacts/bundle -> <model>/MLmodel
    run_id = (yaml.safe_load(mlmodel.read_text()) or {}).get("run_id") if mlmodel.is_file() else None
    if not run_id:
        return  # not logged by a run: nothing was registered from it
    for version in mlflow.MlflowClient().search_model_versions(f"run_id = '{run_id}'"):
        try:
            expected = Provenance.from_tags(version.tags).weights_sha256
        except RecordError:
            continue  # registered by something else than mlassets
        check_weights(bundle_dir, expected, f"the registry record of {version.name!r} version {version.version}")


class BundleModel(mlflow.pyfunc.PythonModel):
    def load_context(self, context) -> None:  # noqa: ANN001 - MLflow's signature
        from mlassets.core.train.artifact import load_bundle

        _check_against_the_registry(context.artifacts["bundle"])
        self.bundle = load_bundle(context.artifacts["bundle"])

    def predict(self, context, model_input: pd.DataFrame, params=None):  # noqa: ANN001
        """Target units or P(1) per row; a multiclass model: ``prediction`` and ``probability_<class>`` columns."""
        from mlassets.core.train.outputs import served

        return served(self.bundle, model_input)


mlflow.models.set_model(BundleModel())
