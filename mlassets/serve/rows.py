"""Request bodies to feature rows: MLflow's scoring protocol and a plain JSON route, checked column by column.

Every refusal is a ``BadRequest`` with the HTTP status and a sentence naming the column, the row or the limit;
nothing a client sends reaches the model unchecked, so no input turns into a 500.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mlassets.core.config import PipelineConfig
from mlassets.core.config.schema import ColumnSpec


class BadRequest(ValueError):
    """A request the endpoint refuses: ``status`` (4xx) and a sentence for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Schema:
    """The raw columns a model takes: categorical and numeric ones, and which may be missing (null/NaN)."""

    categorical: list[str]
    numeric: list[str]
    nullable: frozenset[str]

    @property
    def columns(self) -> list[str]:
        return [*self.categorical, *self.numeric]


def schema_of(categorical: list[str], numeric: list[str], cfg: PipelineConfig | None) -> Schema:
    """A model's columns; nullability from the config's column specs (a column the config does not declare,
    e.g. a derived one, may be missing: the preprocessing imputes it)."""
    specs: dict[str, ColumnSpec] = {}
    if cfg is not None:
        for table in cfg.dataset.tables.values():
            specs.update(table.columns)
        specs.update(cfg.dataset.columns)
    nullable = frozenset(c for c in [*categorical, *numeric] if c not in specs or specs[c].nullable)
    return Schema(list(categorical), list(numeric), nullable)


def parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except UnicodeDecodeError:
        raise BadRequest(400, "the body is not UTF-8 text; send JSON") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(400, f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") \
            from None


def mlflow_records(payload: Any) -> list[Mapping[str, Any]]:
    """Rows of an MLflow scoring request: ``dataframe_split`` or ``dataframe_records``."""
    if not isinstance(payload, dict):
        raise BadRequest(400, "the body must be a JSON object with 'dataframe_split' or 'dataframe_records'")
    keys = [k for k in ("dataframe_split", "dataframe_records") if k in payload]
    if len(keys) != 1 or len(set(payload) - {"params"}) != 1:  # params: MLflow's inference params (none used)
        raise BadRequest(400, "the body must hold exactly one of 'dataframe_split' or 'dataframe_records' (got "
                              f"{', '.join(map(repr, payload)) or 'no key'}); 'instances' and 'inputs' are for "
                              "tensor models")
    if keys[0] == "dataframe_records":
        return _records(payload["dataframe_records"], "dataframe_records")
    split = payload["dataframe_split"]
    if not isinstance(split, dict) or not isinstance(split.get("columns"), list) \
            or not isinstance(split.get("data"), list):
        raise BadRequest(400, "'dataframe_split' must be an object with a 'columns' list and a 'data' list of rows")
    columns = split["columns"]
    if not all(isinstance(c, str) for c in columns) or len(set(columns)) != len(columns):
        raise BadRequest(400, "'dataframe_split.columns' must be distinct column names")
    rows = []
    for i, row in enumerate(split["data"]):
        if not isinstance(row, list) or len(row) != len(columns):
            raise BadRequest(400, f"'dataframe_split.data' row {i} must be a list of {len(columns)} values, one "
                                  "per column")
        rows.append(dict(zip(columns, row, strict=True)))
    return rows


def plain_records(payload: Any) -> list[Mapping[str, Any]]:
    """Rows of the plain route: ``{"rows": [{column: value, ...}, ...]}``."""
    if not isinstance(payload, dict) or set(payload) != {"rows"}:
        raise BadRequest(400, 'the body must be a JSON object {"rows": [{"column": value, ...}, ...]}')
    return _records(payload["rows"], "rows")


def _records(rows: Any, where: str) -> list[Mapping[str, Any]]:
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise BadRequest(400, f"'{where}' must be a list of objects, one per row")
    return rows


class Rows:
    """A request's checked rows as columns (numbers float64, the rest objects), not yet a DataFrame: requests
    merged into one pass are joined column by column and become one frame there (``frame``), not one each."""

    __slots__ = ("columns", "length")

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        self.columns = columns
        self.length = len(next(iter(columns.values()))) if columns else 0

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, names: list[str]) -> pd.DataFrame:
        return pd.DataFrame({c: self.columns[c] for c in names}, copy=False)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.columns, copy=False)

    @staticmethod
    def join(parts: list[Rows]) -> Rows:
        if len(parts) == 1:
            return parts[0]
        return Rows({c: np.concatenate([p.columns[c] for p in parts]) for c in parts[0].columns})


def to_frame(records: list[Mapping[str, Any]], schema: Schema, max_rows: int,
             ignore_extra: bool = False) -> pd.DataFrame:
    """``to_rows`` as a DataFrame."""
    return to_rows(records, schema, max_rows, ignore_extra).frame()


def to_rows(records: list[Mapping[str, Any]], schema: Schema, max_rows: int, ignore_extra: bool = False) -> Rows:
    """The rows in the model's columns, or a ``BadRequest`` naming what is wrong (every unknown column of a row at
    once); ``ignore_extra``: columns the model does not take are dropped, as MLflow's scoring server does."""
    if not records:
        raise BadRequest(400, "the request holds no rows")
    if len(records) > max_rows:
        raise BadRequest(413, f"{len(records)} rows is over the limit of {max_rows} rows per request "
                              "(serving.max_rows)")
    wanted = set(schema.columns)
    for i, row in enumerate(records):
        unknown = [] if ignore_extra else sorted(set(row) - wanted)
        missing = [c for c in schema.columns if c not in row]
        if unknown:
            named = f"column {unknown[0]!r}" if len(unknown) == 1 else f"columns {', '.join(map(repr, unknown))}"
            raise BadRequest(422, f"row {i}: unknown {named}; the model takes {', '.join(schema.columns)} "
                                  "(serving.ignore_extra_columns: true drops the others)")
        if missing:
            raise BadRequest(422, f"row {i}: missing column {missing[0]!r}; the model takes "
                                  f"{', '.join(schema.columns)}")
    data: dict[str, list[Any]] = {}
    for column in schema.columns:
        numeric = column in schema.numeric
        data[column] = [_value(r[column], column, i, numeric, column in schema.nullable)
                        for i, r in enumerate(records)]
    numeric = set(schema.numeric)
    return Rows({c: np.array(v, dtype=np.float64 if c in numeric else object) for c, v in data.items()})


def _value(value: Any, column: str, row: int, numeric: bool, nullable: bool) -> Any:
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    if missing:
        if not nullable:
            raise BadRequest(422, f"row {row}: column {column!r} may not be missing (null or NaN)")
        return math.nan if numeric else None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        kind = "a number" if numeric else "a string or a number"
        raise BadRequest(422, f"row {row}: column {column!r} must be {kind}, got {json.dumps(value)[:40]}")
    if numeric:
        if isinstance(value, str):
            raise BadRequest(422, f"row {row}: column {column!r} must be a number, got {json.dumps(value)[:40]}")
        if math.isinf(value):
            raise BadRequest(422, f"row {row}: column {column!r} must be finite, got {value}")
        return float(value)
    return value
