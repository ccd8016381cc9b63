"""The registered model's signature marks the config's nullable columns optional (``ColSpec(required=False)``), so
MLflow's own checks take a row that leaves one empty; every other column stays required."""

from __future__ import annotations

from mlassets.core.train.mlflow_model import nullable_columns, signature_of
from tests.core.registry.test_promotion import FLIGHTS, flights_rows, tiny_bundle


def test_the_flights_weather_columns_that_may_be_missing_are_named() -> None:
    nullable = nullable_columns(FLIGHTS)  # from the weather table (keyed), beside the main table's
    assert "wind_speed" in nullable and "temp" in nullable and "precip" not in nullable and "distance" not in nullable


def test_a_nullable_column_is_optional_in_the_signature() -> None:
    rows = flights_rows()
    inputs = signature_of(tiny_bundle(), rows, optional_columns=nullable_columns(FLIGHTS)).inputs.input_dict()
    assert inputs["wind_speed"].required is False
    assert all(spec.required for name, spec in inputs.items() if name != "wind_speed")
    assert signature_of(tiny_bundle(), rows).inputs.input_dict()["wind_speed"].required is True  # none declared
