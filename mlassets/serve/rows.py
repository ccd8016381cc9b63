"""Request bodies to feature rows: MLflow's scoring protocol and a plain JSON route, checked column by column.

Every refusal is a ``BadRequest`` with the HTTP status and a sentence naming the column, the row or the limit;
nothing a client sends reaches the model unchecked, so no input turns into a 500. A row is checked by the rules
validation checks a delivery by (the dataset config's columns: type, ``int`` whole, finite, ``min``/``max``,
``allowed``; ``schema_polars.first_failure``), which are also what the registered pyfunc's signature declares, and
an answer holds only finite predictions (``predictions``).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mlassets.core.config import PipelineConfig
from mlassets.core.config.schema import ColumnSpec
from mlassets.core.data.column_rules import Rule, breaks, rules


class BadRequest(ValueError):
    """A request the endpoint refuses: ``status`` (4xx) and a sentence for the client."""

    def __init__(self, status: int, message: str, kind: str = "bad_request") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind  # kind: the label of the refusal in the errors metric


@dataclass(frozen=True)
class Schema:
    """The raw columns a model takes: categorical and numeric ones, which may be missing (null/NaN), and the
    declared rules (the dataset config's column specs) of those the config declares."""

    categorical: list[str]
    numeric: list[str]
    nullable: frozenset[str]
    specs: Mapping[str, ColumnSpec] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        return [*self.categorical, *self.numeric]

    @functools.cached_property
    def rules(self) -> dict[str, list[Rule]]:
        """Each declared column's value rules (``column_rules``), listed once per endpoint."""
        return {name: rules(spec) for name, spec in self.specs.items()}


def schema_of(categorical: list[str], numeric: list[str], cfg: PipelineConfig | None) -> Schema:
    """A model's columns; nullability from the config's column specs (a column the config does not declare,
    e.g. a derived one, may be missing: the preprocessing imputes it)."""
    specs: dict[str, ColumnSpec] = {}
    if cfg is not None:
        for table in cfg.dataset.tables.values():
            specs.update(table.columns)
        specs.update(cfg.dataset.columns)
    columns = [*categorical, *numeric]
    nullable = frozenset(c for c in columns if c not in specs or specs[c].nullable)
    return Schema(list(categorical), list(numeric), nullable, {c: specs[c] for c in columns if c in specs})


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
    out = Rows({c: np.array(v, dtype=np.float64 if c in numeric else object) for c, v in data.items()})
    _check_declared(out, schema)
    return out


def _check_declared(checked: Rows, schema: Schema) -> None:
    """A 422 naming the first row, column and value that breaks the column's declared rules (``column_rules``):
    judged in NumPy where the values are already of the declared type (numbers of a numeric column, text of a
    ``str`` one), in validation's Polars engine otherwise and to word any failure."""
    if not schema.specs:
        return
    quick = True
    for name, spec in schema.specs.items():
        values = checked.columns[name]
        if values.dtype == np.float64 and spec.dtype in ("int", "float"):
            pass
        elif values.dtype == object and spec.dtype == "str":
            values = np.array([None if v is None else str(v) for v in values], dtype=object)
        else:
            quick = False
            break
        if any(breaks(rule, values).any() for rule in schema.rules[name]):
            quick = False
            break
    if quick:
        return
    from mlassets.core.data.coerce import to_polars
    from mlassets.core.data.schema_polars import first_failure

    failure = first_failure(to_polars(checked[list(schema.specs)]), dict(schema.specs))
    if failure is not None:
        row, column, value, check = failure
        raise BadRequest(422, f"row {row}: column {column!r} is {shown(value)}, which fails {check}: the dataset "
                              "config declares the column so, and validation refuses such a value too")


def shown(value: Any) -> str:
    """A value as a message shows it: JSON for a scalar (whole floats as integers), the kind of a list or object
    (never its text: it may nest a thousand levels)."""
    if isinstance(value, dict | list):
        return f"a JSON {'object' if isinstance(value, dict) else 'list'}"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    try:
        return json.dumps(value)[:40]
    except TypeError:  # a timestamp and the like
        return str(value)[:40]


def predictions(answer: Any) -> list[Any]:
    """The answer as JSON values (a multiclass frame as one object per row), or a 422 naming the first row whose
    prediction is not finite: a number that is none is never answered, neither as a number nor as null."""
    frame = isinstance(answer, pd.DataFrame)
    values = answer.select_dtypes("number").to_numpy(dtype=np.float64) if frame \
        else np.asarray(answer, dtype=np.float64)
    finite = np.isfinite(values) if values.ndim == 1 else np.isfinite(values).all(axis=1)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise BadRequest(422, f"row {row}: the model's prediction is not finite "
                              f"({values[row] if values.ndim == 1 else values[row].tolist()}); no prediction is "
                              "answered for this request", kind="non_finite_prediction")
    if frame:
        return json.loads(answer.to_json(orient="records"))
    return values.tolist()


def _value(value: Any, column: str, row: int, numeric: bool, nullable: bool) -> Any:
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    if missing:
        if not nullable:
            raise BadRequest(422, f"row {row}: column {column!r} may not be missing (null or NaN)")
        return math.nan if numeric else None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        kind = "a number" if numeric else "a string or a number"
        raise BadRequest(422, f"row {row}: column {column!r} must be {kind}, got {shown(value)}")
    if numeric:
        if isinstance(value, str):
            raise BadRequest(422, f"row {row}: column {column!r} must be a number, got {shown(value)}")
        try:
            number = float(value)
        except OverflowError:  # an integer past any float
            number = math.inf
        if math.isinf(number):
            raise BadRequest(422, f"row {row}: column {column!r} must be finite, got {shown(value)}")
        return number
    return value
