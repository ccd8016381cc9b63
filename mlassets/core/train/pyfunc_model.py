"""MLflow "models from code" wrapper: ``mlflow.pyfunc.load_model("models:/NAME@champion")`` scores raw rows.

MLflow copies this file into every logged model; it loads the bundle with ``weights_only=True``.
"""

import mlflow
import pandas as pd


class BundleModel(mlflow.pyfunc.PythonModel):
    def load_context(self, context) -> None:  # noqa: ANN001 - MLflow's signature
        from mlassets.core.train.artifact import load_bundle

        self.bundle = load_bundle(context.artifacts["bundle"])

    def predict(self, context, model_input: pd.DataFrame, params=None):  # noqa: ANN001
        return self.bundle.predict(model_input)


mlflow.models.set_model(BundleModel())
