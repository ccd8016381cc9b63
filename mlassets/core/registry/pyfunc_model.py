"""MLflow "models from code" wrapper: ``mlflow.pyfunc.load_model("models:/NAME@champion")`` scores raw rows.

MLflow copies this file into every logged model. Loading checks the folder against the registered version it
is loaded as (its run, its logged model, the weights its record names: a folder copied from another version is
refused, ``folder``), checks the promotion log's chain and anchor when the model's promotions are logged, checks
the bundle's manifest and loads the weights with ``weights_only=True``. It lives with the registry because that
is what it checks against; training logs it (``mlassets.core.train.mlflow_model``).
"""

import mlflow
import pandas as pd


def _check(bundle_dir: str) -> None:
    from mlassets.core.registry import projection
    from mlassets.core.registry.folder import check_loaded_bundle
    from mlassets.core.registry.promotion import PromotionLog

    name = check_loaded_bundle(bundle_dir)
    if name is not None and projection.anchored(name):  # its promotions are logged: trust no damaged log
        projection.refuse_if_damaged(name, PromotionLog())


class BundleModel(mlflow.pyfunc.PythonModel):
    def load_context(self, context) -> None:  # noqa: ANN001 - MLflow's signature
        from mlassets.core.train.artifact import load_bundle

        _check(context.artifacts["bundle"])
        self.bundle = load_bundle(context.artifacts["bundle"])

    def predict(self, context, model_input: pd.DataFrame, params=None):  # noqa: ANN001
        """Target units or P(1) per row; a multiclass model: ``prediction`` and ``probability_<class>`` columns."""
        from mlassets.core.train.outputs import served

        return served(self.bundle, model_input)


mlflow.models.set_model(BundleModel())
