"""The batch verdict pandera gives (``batch_passes``, reductions) is the verdict of every row (``row_passes``) on any
values: missing, NaN, infinities, fractions, values on and past a bound, text not allowed; a failing batch leaves
pandera no copy of its rows; a schema built once is the schema of its own rules only; stored numbers coerce with NaN
missing."""

from __future__ import annotations

import datetime

import numpy as np
import polars as pl
import pytest
from pandera.errors import SchemaErrors

from mlassets.core.config import ColumnSpec
from mlassets.core.data.coerce import coerce
from mlassets.core.data.schema_polars import batch_passes, pandera_schema, row_passes

UTC = datetime.UTC
COLUMNS = {
    "n": ColumnSpec(dtype="int", min=0.0, max=10.0),
    "m": ColumnSpec(dtype="int", nullable=True),
    "x": ColumnSpec(dtype="float", nullable=True, min=-1.5, max=2.5),
    "y": ColumnSpec(dtype="float"),
    "z": ColumnSpec(dtype="float", min=0.0, max=float("inf")),  # a bound that holds infinity: finite still checks
    "c": ColumnSpec(dtype="str", allowed=["a", "b"]),
    "s": ColumnSpec(dtype="str", nullable=True),
    "t": ColumnSpec(dtype="datetime", min_date="2013-01-01", max_date="2013-12-31"),
}
GOOD = {"n": [0.0, 10.0, 3.0], "m": [None, -7.0, 1e6], "x": [-1.5, 2.5, None], "y": [-1e300, 0.0, 1e300],
        "z": [0.0, 1.0, 1e300],
        "c": ["a", "b", "a"], "s": [None, "", "z"],
        "t": [datetime.datetime(2013, 1, 1, tzinfo=UTC), datetime.datetime(2013, 12, 31, tzinfo=UTC),
              datetime.datetime(2013, 6, 1, 12, tzinfo=UTC)]}
# per column, values that break a rule (or that only seem to: they must pass)
ODD = {"n": [None, 0.5, -1.0, 11.0, float("nan"), float("inf"), 10.0], "m": [0.25, float("nan"), float("-inf")],
       "x": [float("nan"), float("inf"), -1.6, 2.6, -1.5], "y": [None, float("nan"), float("inf"), -0.0],
       "z": [float("inf"), float("nan"), -1.0, -0.0],
       "c": [None, "c", "A", "b"], "s": ["anything"],
       "t": [None, datetime.datetime(2012, 12, 31, 23, tzinfo=UTC), datetime.datetime(2014, 1, 1, tzinfo=UTC)]}


def _frame(values: dict[str, list[object]]) -> pl.DataFrame:
    return pl.DataFrame({name: pl.Series(name, values[name], dtype=pl.Datetime("ns", "UTC") if name == "t" else None,
                                         strict=False) for name in COLUMNS})


def _verdicts(frame: pl.DataFrame) -> tuple[bool, bool]:
    rows = frame.select(pl.all_horizontal([row_passes(n, s) for n, s in COLUMNS.items()])).to_series().all()
    return bool(frame.select(batch_passes(COLUMNS)).item()), bool(rows)


def test_the_batch_verdict_is_every_rows_verdict() -> None:
    rng = np.random.default_rng(7)
    seen = set()
    for column, odd in ODD.items():
        for value in odd:
            for row in range(3):
                values = {n: list(v) for n, v in GOOD.items()}
                values[column][row] = value
                batch, rows = _verdicts(_frame(values))
                assert batch == rows, (column, value, row)
                seen.add(rows)
    for _ in range(200):  # several odd values at once, in random columns and rows
        values = {n: list(v) for n, v in GOOD.items()}
        for column in rng.choice(list(ODD), size=rng.integers(1, 4)):
            values[column][rng.integers(3)] = ODD[column][rng.integers(len(ODD[column]))]
        batch, rows = _verdicts(_frame(values))
        assert batch == rows, values
        seen.add(rows)
    assert seen == {True, False}  # both verdicts were given
    assert _verdicts(_frame(GOOD).head(0)) == (True, True)
    assert _verdicts(_frame({**GOOD, "m": [None] * 3, "x": [None] * 3})) == (True, True)  # nothing but missing


def test_a_failing_batch_leaves_pandera_one_failure_case_not_its_rows() -> None:
    """The check answers one boolean: pandera keeps no failing row (a check a row kept every one, and its failure
    cases held dozens of times the batch)."""
    columns = {"x": ColumnSpec(dtype="float", min=0.0), "c": ColumnSpec(dtype="str", allowed=["a", "b"])}
    cast, _ = coerce(pl.DataFrame({"x": [-1.0] * 5000, "c": ["z"] * 5000}), columns)
    with pytest.raises(SchemaErrors) as failed:
        pandera_schema(columns).validate(cast, lazy=True)
    assert failed.value.failure_cases.height == 1
    assert failed.value.failure_cases["check"].to_list() == ["declared_values"]


def test_a_schema_kept_built_is_its_own_rules_only() -> None:
    cast, _ = coerce(pl.DataFrame({"x": [3.0, 4.0]}), {"x": ColumnSpec(dtype="float")})
    loose, tight = {"x": ColumnSpec(dtype="float", min=0.0)}, {"x": ColumnSpec(dtype="float", min=3.5)}
    assert pandera_schema(loose) is pandera_schema({"x": ColumnSpec(dtype="float", min=0.0)})
    pandera_schema(loose).validate(cast, lazy=True)
    with pytest.raises(SchemaErrors, match="declared_values"):
        pandera_schema(tight).validate(cast, lazy=True)
    pandera_schema(loose).validate(cast, lazy=True)


def test_a_stored_number_is_coerced_to_float64_with_nan_missing() -> None:
    """Integers, booleans and floats become float64; NaN is a missing value, whether or not a column holds one."""
    columns = {n: ColumnSpec(dtype="float", nullable=True) for n in ("i", "b", "f", "g", "h")}
    frame = pl.DataFrame({"i": [1, None, -3], "b": [True, False, None], "f": [0.5, float("nan"), None],
                          "g": [0.5, -0.0, 2.0], "h": pl.Series([1.5, float("nan"), 3.0], dtype=pl.Float32)})
    cast, bad = coerce(frame, columns)
    assert not bad and all(dtype == pl.Float64 for dtype in cast.dtypes)
    assert cast.to_dict(as_series=False) == {"i": [1.0, None, -3.0], "b": [1.0, 0.0, None], "f": [0.5, None, None],
                                             "g": [0.5, -0.0, 2.0], "h": [1.5, None, 3.0]}
