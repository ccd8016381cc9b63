"""A batch of a files source coerced in Arrow wherever Arrow gives what pandas would, and by pandas elsewhere.

A Parquet file usually stores a declared column in its type already (numbers as numbers, text as text, times as
timestamps), and a CSV's number columns are mostly plain decimals. Such a column is coerced in Arrow to what the
pandas coercion (``files_parse.coerce_batch``) would have given it: text trimmed of exactly what ``str.strip``
trims, integers with gaps as float64, NaN as missing, times in UTC, plain decimals read to the same bits. Only the other
columns (dates as text, dates built from parts, booleans, numbers in any other spelling, values that do not parse)
go through pandas, which parses them and names the rows that do not parse. The result is the table the pandas
coercion gives (``tests/core/data/test_files_arrow.py`` compares them), without a round trip of every cell
through Python objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mlassets.core.config import ColumnSpec

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from mlassets.core.data.sources.files_parse import Problems

# what str.strip() removes: every character whose isspace() is true (a test checks the list against Python's)
WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
              "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")

DECIMAL = r"^[+-]?(\d+\.?\d*|\.\d+)$"  # a plain decimal: digits, at most one point, no exponent
SHORT = 15  # characters: at most 15 digits, which pandas' parser and Arrow's read to the same float64


def fits(kind: pa.DataType, spec: ColumnSpec) -> bool:
    """Whether a column stored as ``kind`` is already in the declared dtype (only trimmed or relabelled)."""
    import pyarrow as pa

    types = pa.types
    if spec.from_columns:
        return False
    if spec.dtype in ("int", "float"):
        return types.is_integer(kind) or types.is_float32(kind) or types.is_float64(kind)
    if spec.dtype == "str":
        return types.is_string(kind) or types.is_large_string(kind)
    return spec.dtype == "datetime" and types.is_timestamp(kind)


def in_arrow(column: pa.ChunkedArray, spec: ColumnSpec) -> pa.ChunkedArray:
    """A fitting column as the pandas coercion leaves it once written back to Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if spec.dtype in ("int", "float"):
        if pa.types.is_integer(column.type):  # pandas holds an integer column with gaps as float64
            return column.cast(pa.float64(), safe=False) if column.null_count else column
        nan = pc.is_nan(column)
        return pc.if_else(nan, pa.scalar(None, column.type), column) if pc.any(nan).as_py() else column
    if spec.dtype == "str":
        return pc.utf8_trim(column, WHITESPACE).cast(pa.string())
    return column.cast(pa.timestamp(column.type.unit, "UTC"))  # naive times are UTC; aware ones the same instant


def from_frame(frame: pd.DataFrame) -> pa.Table:
    import pyarrow as pa

    return pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(None)


def plain_numbers(column: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """Text of a number column as float64, as ``pd.to_numeric`` reads it (blanks missing): only when every value is
    a plain decimal of at most ``SHORT`` characters (both parsers read those to the same bits; longer ones or
    exponents can differ in the last bit) and none is a negative zero; else None, and pandas parses the column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.utf8_trim(column, WHITESPACE)
    text = pc.if_else(pc.equal(text, ""), pa.scalar(None, text.type), text)
    plain = pc.and_(pc.match_substring_regex(text, DECIMAL), pc.less_equal(pc.utf8_length(text), SHORT))
    if not pc.all(plain).as_py():
        return None
    numbers = text.cast(pa.float64())
    if pc.any(pc.and_(pc.starts_with(text, "-"), pc.equal(numbers, 0))).as_py():
        return None  # pandas reads "-0" as an integer, so as 0.0, and "-0.0" as -0.0
    return numbers


def coerce_table(table: pa.Table, columns: Mapping[str, ColumnSpec], first: int,
                 frame: pd.DataFrame | None = None) -> tuple[pa.Table, Problems]:
    """``files_parse.coerce_batch`` of a batch whose first row is row ``first`` of its file: columns already in
    their type, and text of plain numbers, coerced in Arrow; the rest by pandas (all of them when a column is built
    from others). ``table`` holds the batch in Arrow, or (with ``frame``, a CSV's text in pandas) the columns of it
    worth trying in Arrow."""
    import pyarrow as pa

    from mlassets.core.data.sources.files_parse import coerce_batch

    names = list(frame.columns) if frame is not None else table.column_names
    present = {n: s for n, s in columns.items() if n in names}
    built = any(s.from_columns for s in columns.values())
    arrow: dict[str, pa.ChunkedArray] = {}
    for name, spec in ({} if built else present).items():
        column = table.column(name) if name in table.column_names else None
        if column is not None and fits(column.type, spec):
            arrow[name] = in_arrow(column, spec)
        elif column is not None and spec.dtype in ("int", "float") and pa.types.is_string(column.type):
            numbers = plain_numbers(column)
            if numbers is not None:
                arrow[name] = numbers
    rest = [n for n in names if n in columns and n not in arrow]
    problems: Problems = {}
    parsed = pa.table({})
    if rest:
        part = frame[rest] if frame is not None else table.select(rest).to_pandas()
        part = part.set_axis(range(first, first + len(part)), axis=0)
        out, problems = coerce_batch(part, {n: s for n, s in columns.items() if n not in arrow})
        parsed = from_frame(out)
    if built:
        return parsed, problems
    order = [n for n in present if n in arrow or n in parsed.column_names]
    arrays = [arrow[n] if n in arrow else parsed.column(n) for n in order]
    return pa.table(arrays, names=order) if order else pa.table({}), problems
