"""The schema of ``schema.build_schema`` on pandera's Polars backend: the fast check of a typed batch.

A batch whose columns already have their declared types (as the files source stores them: numbers, strings,
UTC timestamps) is cast to the schema's types in one pass and checked here, in Polars. Its verdict is only ever
"passes": a batch that fails, or one that
would need parsing (text in a number or date column, naive times), is checked again by the pandas schema, which
defines the rules and words the messages. So this schema must never pass what the pandas one fails: its checks
are the same or stricter (NaN fails a range check here and passes it there; the pandas check then decides).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from mlassets.core.config import ColumnSpec

if TYPE_CHECKING:
    import pandera.polars as pap
    import polars as pl


def _utc(text: str) -> datetime.datetime:
    value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value.replace(tzinfo=datetime.UTC) if value.tzinfo is None else value.astimezone(datetime.UTC)


def _integral(data: object) -> object:
    import polars as pl

    return data.lazyframe.select(pl.col(data.key) % 1 == 0)


def _dtype(spec: ColumnSpec) -> pl.DataType:
    import polars as pl

    return {"int": pl.Float64, "float": pl.Float64, "str": pl.String, "datetime": pl.Datetime("ns", "UTC")}[spec.dtype]


def _column(spec: ColumnSpec) -> pap.Column:
    import pandera.polars as pap

    checks = [pap.Check(_integral, name="integer_valued")] if spec.dtype == "int" else []
    if spec.min is not None:
        checks.append(pap.Check.ge(spec.min))
    if spec.max is not None:
        checks.append(pap.Check.le(spec.max))
    if spec.min_date is not None:
        checks.append(pap.Check.ge(_utc(spec.min_date)))
    if spec.max_date is not None:
        checks.append(pap.Check.le(_utc(spec.max_date)))
    if spec.allowed is not None:
        checks.append(pap.Check.isin(spec.allowed))
    return pap.Column(_dtype(spec), checks=checks, nullable=spec.nullable, coerce=False, required=True)


def polars_schema(columns: dict[str, ColumnSpec]) -> pap.DataFrameSchema:
    """Types, ranges, dates, nullability and allowed values of ``columns`` (the key is checked across batches), on a
    batch ``cast`` to their types."""
    import pandera.polars as pap

    return pap.DataFrameSchema({name: _column(spec) for name, spec in columns.items()}, strict=False)


def _typed(spec: ColumnSpec, dtype: pl.DataType) -> bool:
    import polars as pl

    if spec.dtype in ("int", "float"):
        return dtype.is_integer() or dtype.is_float()
    if spec.dtype == "str":
        return dtype == pl.String
    return isinstance(dtype, pl.Datetime) and dtype.time_zone is not None


def typed(columns: dict[str, ColumnSpec], schema: pl.Schema) -> bool:
    """Whether a batch of ``schema`` holds every declared column in its type already (no parsing needed)."""
    return all(name in schema and _typed(spec, schema[name]) for name, spec in columns.items())


def cast(frame: pl.DataFrame, columns: dict[str, ColumnSpec]) -> pl.DataFrame:
    """A ``typed`` batch with its declared columns in the schema's types (one pass; nothing can fail to parse), NaN
    read as missing (as pandas reads it)."""
    import polars as pl

    exprs = [pl.col(name).cast(_dtype(spec)) for name, spec in columns.items()]
    return frame.with_columns(e.fill_nan(None) if columns[n].dtype in ("int", "float") else e
                              for n, e in zip(columns, exprs, strict=True))
