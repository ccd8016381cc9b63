"""The schema of ``schema.build_schema`` on pandera's Polars backend: the fast check of a typed batch.

A batch whose columns already have their declared types (as the files source stores them: numbers, strings,
UTC timestamps) is cast to the schema's types in one pass and checked here, in Polars: the types per column, the
values as one pandera check of the whole batch (``row_passes`` of every column in one expression: a pass of the
batch, where a pandera check per column and rule costs a pass and a collect each, about 0.07 s a batch of the
flights-scale month whatever its rows). Its verdict is only ever "passes": a batch that fails, or one that
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


def _dtype(spec: ColumnSpec) -> pl.DataType:
    import polars as pl

    return {"int": pl.Float64, "float": pl.Float64, "str": pl.String, "datetime": pl.Datetime("ns", "UTC")}[spec.dtype]


def row_passes(name: str, spec: ColumnSpec) -> pl.Expr:
    """Per row of a ``cast`` batch: whether the column's value meets its declared rules (integral, ranges, dates,
    allowed values; missing only where nullable)."""
    import polars as pl

    column, rules = pl.col(name), []
    if spec.dtype == "int":
        rules.append(column % 1 == 0)
    if spec.dtype == "float":
        rules.append(column.is_finite())
    for low in (spec.min, _utc(spec.min_date) if spec.min_date is not None else None):
        if low is not None:
            rules.append(column >= low)
    for high in (spec.max, _utc(spec.max_date) if spec.max_date is not None else None):
        if high is not None:
            rules.append(column <= high)
    if spec.allowed is not None:
        rules.append(column.is_in(spec.allowed))
    held = pl.all_horizontal(rules).fill_null(False) if rules else pl.lit(True)
    return column.is_null() | held if spec.nullable else column.is_not_null() & held


def _rows_pass(columns: dict[str, ColumnSpec]):
    import polars as pl

    def check(data: object) -> object:
        return data.lazyframe.select(pl.all_horizontal([row_passes(n, s) for n, s in columns.items()]))

    return check


def polars_schema(columns: dict[str, ColumnSpec]) -> pap.DataFrameSchema:
    """Types of ``columns`` per column, and their values (ranges, dates, nullability, allowed values) as one check
    of the whole batch (``row_passes`` of every column): one Polars pass, where a check per column and rule cost a
    pass each (the key is checked across batches), on a batch ``cast`` to their types."""
    import pandera.polars as pap

    return pap.DataFrameSchema({name: pap.Column(_dtype(spec), nullable=True, coerce=False, required=True)
                                for name, spec in columns.items()},
                               checks=[pap.Check(_rows_pass(columns), name="declared_values")], strict=False)


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
