"""The registered pyfunc takes raw rows as the config declares them: a numeric ``dtype: int`` column stored as
float by the features stage is still declared ``long``, so int rows are not refused (MLflow's int64 -> float64)."""

from __future__ import annotations

from pathlib import Path

import mlflow
import numpy as np
import pytest

from mlassets.core.registry import versions as registry
from mlassets.core.train import mlflow_model
from mlassets.core.train.artifact import save_bundle, weights_sha256
from tests.core.registry import test_promotion as shared

reg = shared.reg
Registry = shared.Registry


def _registered(reg: Registry, folder: Path, int_columns: list[str]) -> str:
    bundle = shared.tiny_bundle()
    path = save_bundle(bundle, folder)
    stored = shared.flights_rows(30).astype({"distance": "float64"})  # as the features stage stores it
    with mlflow.start_run():
        uri = mlflow_model.log_model(path, stored, int_columns=int_columns)
    return str(registry.register(reg.name, uri, shared.record(True, weights_sha256(path))).version)


def test_an_int_column_declared_by_the_config_is_taken_as_int(reg: Registry, tmp_path: Path) -> None:
    raw = shared.flights_rows(8, seed=9)
    assert raw["distance"].dtype == "int64"  # raw rows: as the config declares them
    before = _registered(reg, tmp_path / "a", [])
    with pytest.raises(mlflow.exceptions.MlflowException, match="distance"):
        mlflow.pyfunc.load_model(f"models:/{reg.name}/{before}").predict(raw)
    after = _registered(reg, tmp_path / "b", ["distance", "flight"])
    served = mlflow.pyfunc.load_model(f"models:/{reg.name}/{after}").predict(raw)
    np.testing.assert_allclose(np.asarray(served), shared.tiny_bundle().predict(raw))
