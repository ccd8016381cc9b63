"""A served row is judged by the rules validation judges a delivery by (the config's declared columns), the body
is refused with a 4xx before any row when it is not JSON the server reads, and an answer holds only finite
numbers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import load_config, shipped_configs
from mlassets.core.data.schema import validate_table
from mlassets.serve import body, rows

ORDERS = load_config(shipped_configs()["orders"])
SCHEMA = rows.schema_of(ORDERS.features.categorical, ORDERS.features.numeric, ORDERS)
ROW = {"city": "paris", "hour": 3, "weekday": 2, "distance_km": 3.0, "items": 2, "courier_load": 0.5,
       "rain_mm": 0.0, "promised_minutes": 30}


def _refusal(**change: object) -> rows.BadRequest | None:
    try:
        rows.to_rows([ROW, {**ROW, **change}], SCHEMA, 100)
    except rows.BadRequest as exc:
        return exc
    return None


@pytest.mark.parametrize(("change", "sentence"), [
    ({"items": 1.5}, "row 1: column 'items' is 1.5, which fails integer_valued"),
    ({"courier_load": 2}, "row 1: column 'courier_load' is 2, which fails less_than_or_equal_to(1.0)"),
    ({"distance_km": 1e308}, "row 1: column 'distance_km' is 1e+308, which fails less_than_or_equal_to(30.0)"),
    ({"distance_km": 0.0}, "row 1: column 'distance_km' is 0, which fails greater_than_or_equal_to(0.1)"),
    ({"city": "oslo"}, "row 1: column 'city' is \"oslo\", which fails isin(['amsterdam'"),
    ({"rain_mm": 10 ** 400}, "row 1: column 'rain_mm' must be finite, got 1000000"),
])
def test_a_value_the_config_does_not_allow_is_a_422_naming_column_value_and_rule(change: dict,
                                                                                 sentence: str) -> None:
    refused = _refusal(**change)
    assert refused is not None and refused.status == 422 and sentence in str(refused), refused


@pytest.mark.parametrize("column", ["items", "courier_load", "distance_km", "promised_minutes", "city"])
def test_serving_refuses_exactly_what_validation_refuses(column: str) -> None:
    """For each value tried, the endpoint's verdict is validation's verdict on the same value."""
    spec = ORDERS.dataset.columns[column]
    values: list[object] = (["paris", "rome", "oslo", "Paris", "7"] if spec.dtype == "str" else
                            [0, 0.05, 0.1, 1, 1.5, 2, 29.5, 30, 30.0001, 50, 51, 240, 241, -1, 1e308, -1e308])
    for value in values:
        served = _refusal(**{column: value}) is None
        frame = pd.DataFrame({column: pd.Series([value], dtype=object if spec.dtype == "str" else float)})
        validated = validate_table(frame, {column: spec}, []).passed
        assert served == validated, (column, value, served, validated)


def test_undeclared_columns_and_missing_values_where_nullable_pass() -> None:
    assert set(SCHEMA.specs) == {"city", "distance_km", "items", "courier_load", "rain_mm", "promised_minutes"}
    assert _refusal(hour=99, weekday="x") is None  # derived columns: not declared, no rules of the config


def test_bodies_the_server_will_not_read_are_400s() -> None:
    deep = b'{"rows": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    with pytest.raises(rows.BadRequest, match="nests too deep") as nested:
        body.parse_json(deep)
    assert nested.value.status == 400
    with pytest.raises(rows.BadRequest, match="not valid JSON") as digits:
        body.parse_json(b'{"rows": [{"items": ' + b"9" * 5000 + b"}]}")
    assert digits.value.status == 400
    row = json.dumps({**ROW, "city": "<deep>"}).replace('"<deep>"', "[" * 900 + "]" * 900)
    within = body.parse_json(f'{{"rows": [{row}]}}'.encode())  # parsed, then refused
    with pytest.raises(rows.BadRequest, match="column 'city' must be a string or a number, got a JSON list"):
        rows.to_rows(rows.plain_records(within), SCHEMA, 100)


def test_a_prediction_that_is_not_finite_is_never_answered() -> None:
    assert rows.predictions(np.array([1.5, -2.0])) == [1.5, -2.0]
    for bad in ([1.0, np.nan], [1.0, np.inf]):
        with pytest.raises(rows.BadRequest, match="row 1: the model's prediction is not finite") as refused:
            rows.predictions(np.array(bad))
        assert (refused.value.status, refused.value.kind) == (422, "non_finite_prediction")
    classes = pd.DataFrame({"prediction": ["a", "b"], "probability_a": [0.4, np.nan], "probability_b": [0.6, 0.5]})
    with pytest.raises(rows.BadRequest, match="row 1"):
        rows.predictions(classes)
    assert rows.predictions(classes.iloc[:1]) == [{"prediction": "a", "probability_a": 0.4, "probability_b": 0.6}]
