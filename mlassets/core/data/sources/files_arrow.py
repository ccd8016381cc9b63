"""A batch of a files source coerced to the declared types: Arrow (a Parquet batch) or pandas (a CSV's text) in,
the one engine (``coerce``, Polars, ``delivered``) in between, Arrow out, with each column's problems named by row.

What comes out is what ingest has always stored: text as ``string``; a number column in its type (integers with gaps
as float64); times in UTC in their unit (Polars holds seconds as milliseconds: they are given back in seconds), text
read as times in nanoseconds; a column built from others (``from_columns``) after the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mlassets.core.config import ColumnSpec

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    from mlassets.core.data.sources.files_parse import Problems


def _problems(raw: pl.DataFrame, bad: Mapping[str, pl.Series], first: int) -> Problems:
    out: Problems = {}
    for name, failed in bad.items():
        rows = failed.arg_true()
        out[name] = (first + int(rows[0]), raw[name][int(rows[0])], len(rows))
    return out


def _with_built(raw: pl.DataFrame, cast: pl.DataFrame, columns: Mapping[str, ColumnSpec], first: int,
                problems: Problems) -> pl.DataFrame:
    """``cast`` with each column built from others whose parts it holds (``coerce.built``), its bad rows named by
    the parts' values as read."""
    from mlassets.core.data.coerce import built

    for name, spec in columns.items():
        parts = spec.from_columns or {}
        if not parts or not set(parts.values()) <= set(cast.columns):
            continue  # a part missing from the file: the schema check names it
        dates, bad = built(cast, parts)
        cast = cast.drop(name, strict=False).with_columns(dates.alias(name))
        if bad.any():
            row = int(bad.arg_true()[0])
            named = ", ".join(f"{p}={raw[c][row]!r}" for p, c in parts.items())
            problems[name] = (first + row, named, int(bad.sum()))
    return cast


def _to_arrow(cast: pl.DataFrame, read: pa.Schema | None) -> pa.Table:
    """The coerced batch in Arrow: text as ``string``, a time in the unit it was read in."""
    import pyarrow as pa

    table = cast.to_arrow()
    fields = []
    for field in table.schema:
        kind = field.type
        if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
            kind = pa.string()
        elif pa.types.is_timestamp(kind) and read is not None and field.name in read.names:
            was = read.field(field.name).type
            kind = pa.timestamp(was.unit, "UTC") if pa.types.is_timestamp(was) else kind
        fields.append(pa.field(field.name, kind))
    schema = pa.schema(fields)
    return table if schema == table.schema else table.cast(schema)


def coerce_table(batch: pa.Table | pd.DataFrame, columns: Mapping[str, ColumnSpec],
                 first: int) -> tuple[pa.Table, Problems]:
    """A batch whose first row is row ``first`` of its file, as read (headers clean), coerced to ``columns``; and
    per column whose non-blank values do not parse, (the first such row, its value, how many rows)."""
    import polars as pl
    import pyarrow as pa

    from mlassets.core.data.coerce import coerce

    names = list(batch.column_names) if isinstance(batch, pa.Table) else list(batch.columns)
    keep = [n for n in names if n in columns]
    raw = pl.from_arrow(batch.select(keep)) if isinstance(batch, pa.Table) else pl.from_pandas(batch[keep])
    assert isinstance(raw, pl.DataFrame)
    cast, bad = coerce(raw, dict(columns), delivered=True)
    problems = _problems(raw, bad, first)
    if any(spec.from_columns for spec in columns.values()):
        cast = _with_built(raw, cast, columns, first, problems)
    return _to_arrow(cast, batch.schema if isinstance(batch, pa.Table) else None), problems
