"""A batch coerced by the one engine (``coerce``, Polars) is the table the former pandas coercion gave, column by
column and type by type: that coercion, kept here as the oracle (``_oracle``), is what ingest has always stored.

Every kind a user's file may store a declared column as: integers with and without gaps, floats with NaN and
nulls, text with every kind of surrounding whitespace (``str.strip``'s, not only ASCII), large text, naive and
zoned times in several units, text of numbers, booleans, numbers declared as text, dates as text.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlassets.core.config import ColumnSpec
from mlassets.core.data.coerce import WHITESPACE
from mlassets.core.data.dates import as_dates, built_date
from mlassets.core.data.sources.files_arrow import coerce_table
from mlassets.core.data.sources.files_parse import FileRejected
from mlassets.core.data.sources.files_read import iter_table

DATES = [datetime(2024, 1, 1, 5), None, datetime(2024, 1, 31, 23, 59, 59)]


def _table() -> pa.Table:
    return pa.table({
        "n_int": pa.array([1, 2, 3], pa.int64()),
        "n_gaps": pa.array([1, None, 3], pa.int32()),
        "x_nan": pa.array([1.5, float("nan"), None], pa.float64()),
        "x_f32": pa.array([0.25, None, 2.0], pa.float32()),
        "name": pa.array([" a\x1c", "\xa0b\u3000", None], pa.string()),
        "big": pa.array(["\tc ", "d", "e\u2028"], pa.large_string()),
        "t_naive": pa.array(DATES, pa.timestamp("us")),
        "t_zoned": pa.array([d and d.replace(tzinfo=UTC) for d in DATES], pa.timestamp("ns", "Europe/Paris")),
        "t_sec": pa.array(DATES, pa.timestamp("s", "UTC")),
        "as_text": pa.array([" 7", "8.5", None], pa.string()),
        "flag": pa.array([True, False, None], pa.bool_()),
        "code": pa.array([10, 20, None], pa.int64()),
        "day_text": pa.array(["2024-01-02", None, "2024-01-03T04:00"], pa.string()),
        "kind": pa.array([" x", "y\t", None]).dictionary_encode(),
        "kind_number": pa.array([" 1.5", "2", None]).dictionary_encode(),
        "undeclared": pa.array([1, 2, 3]),
    })


COLUMNS = {
    "n_int": ColumnSpec(dtype="int"), "n_gaps": ColumnSpec(dtype="int"), "x_nan": ColumnSpec(dtype="float"),
    "x_f32": ColumnSpec(dtype="float"), "name": ColumnSpec(dtype="str"), "big": ColumnSpec(dtype="str"),
    "t_naive": ColumnSpec(dtype="datetime"), "t_zoned": ColumnSpec(dtype="datetime"),
    "t_sec": ColumnSpec(dtype="datetime"), "as_text": ColumnSpec(dtype="float"), "flag": ColumnSpec(dtype="int"),
    "code": ColumnSpec(dtype="str"), "day_text": ColumnSpec(dtype="datetime"), "kind": ColumnSpec(dtype="str"),
    "kind_number": ColumnSpec(dtype="float"),
}


def _oracle_column(values: pd.Series, spec: ColumnSpec) -> pd.Series:
    if spec.dtype in ("int", "float"):
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            return values
        return pd.to_numeric(values.astype("string").str.strip(), errors="coerce").astype("float64")
    if spec.dtype == "datetime":
        return as_dates(values, spec.format)
    return values.astype("string").str.strip().astype(object).where(values.notna(), None)


def _oracle(frame: pd.DataFrame, columns: dict[str, ColumnSpec]) -> tuple[pd.DataFrame, dict]:
    """The pandas coercion ingest used before the one engine (its ``coerce_batch``), unchanged."""
    problems, out = {}, {}
    for name, spec in columns.items():
        if name not in frame.columns or spec.from_columns:
            continue
        raw = frame[name]
        out[name] = parsed = _oracle_column(raw, spec)
        lost = raw.notna() & parsed.isna()
        if lost.any():
            rows = lost[lost].index
            rows = rows[raw[rows].astype("string").str.strip() != ""]
            if len(rows):
                problems[name] = (rows[0], raw[rows[0]], len(rows))
    for name, spec in columns.items():
        parts = spec.from_columns or {}
        if not parts or not set(parts.values()) <= set(out):
            continue
        out[name], bad = built_date(pd.DataFrame(out, index=frame.index), parts)
        if bad.any():
            row = bad[bad].index[0]
            problems[name] = (row, ", ".join(f"{p}={frame[c][row]!r}" for p, c in parts.items()), int(bad.sum()))
    return pd.DataFrame(out, index=frame.index), problems


def from_frame(frame: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(None)


def _pandas(table: pa.Table, columns: dict[str, ColumnSpec]) -> tuple[pa.Table, dict]:
    return (lambda out: (from_frame(out[0]), out[1]))(_oracle(table.to_pandas(), columns))


def test_whitespace_is_what_str_strip_removes() -> None:
    assert set(WHITESPACE) == {c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace()}


def test_an_arrow_batch_coerces_to_the_table_pandas_gives() -> None:
    table = _table()
    out, problems = coerce_table(table, COLUMNS, 0)
    expected, expected_problems = _pandas(table, COLUMNS)
    assert out.schema == expected.schema
    assert out.equals(expected), (out.to_pydict(), expected.to_pydict())
    assert problems == expected_problems
    assert out.column("name").to_pylist() == ["a", "b", None]
    assert out.column("x_nan").null_count == 2 and out.schema.field("n_gaps").type == pa.float64()
    assert out.column("t_naive").to_pylist()[0] == datetime(2024, 1, 1, 5, tzinfo=UTC)


def test_a_value_that_does_not_parse_is_named_by_its_row_in_the_file() -> None:
    table = pa.table({"amount": pa.array(["1", "x", "2", "y"]), "n": pa.array([1, 2, 3, 4])})
    columns = {"amount": ColumnSpec(dtype="float"), "n": ColumnSpec(dtype="int")}
    out, problems = coerce_table(table, columns, 100)
    assert problems == {"amount": (101, "x", 2)}
    assert out.column_names == ["amount", "n"]


def test_a_date_built_from_parts_is_coerced_as_pandas_coerced_it() -> None:
    table = pa.table({"year": pa.array([2009, 2010]), "month": pa.array([3, 4]), "v": pa.array([" a", "b "])})
    columns = {"year": ColumnSpec(dtype="int"), "month": ColumnSpec(dtype="int"), "v": ColumnSpec(dtype="str"),
               "when": ColumnSpec(dtype="datetime", from_columns={"year": "year", "month": "month"})}
    out, _ = coerce_table(table, columns, 0)
    expected, _ = _pandas(table, columns)
    assert out.equals(expected) and out.column_names[-1] == "when"


def test_a_file_read_in_batches_gives_the_batches_of_the_whole_and_names_the_first_missing_target(
        tmp_path: Path) -> None:
    path = tmp_path / "t_2024-01.parquet"
    pq.write_table(_table(), path)
    columns = {n: s for n, s in COLUMNS.items() if n != "flag"}  # a boolean is no integer: the file would fail
    whole = pa.concat_tables(iter_table(str(tmp_path / "t_{partition}.parquet"), "2024-01", "auto", columns))
    batched = pa.concat_tables(iter_table(str(tmp_path / "t_{partition}.parquet"), "2024-01", "auto", columns,
                                          rows=2), promote_options="permissive")
    assert whole.num_rows == batched.num_rows == 3
    assert whole.column("name").to_pylist() == batched.column("name").to_pylist()
    with pytest.raises(FileRejected, match=r"column 'x_nan', row 2: the target is missing \(and 1 more rows\)"):
        list(iter_table(str(tmp_path / "t_{partition}.parquet"), "2024-01", "auto", columns, rows=2,
                        target="x_nan"))


@pytest.mark.parametrize("values", [
    [" 7", "8.5", None, "", "-12.25", "+3", ".5", "5.", "007", "123456789012345"],  # plain decimals
    ["1e5", "2", None],  # an exponent
    ["-0", "1", "2"],  # pandas reads "-0" as the integer 0
    ["1234567890.1234567", "1"],  # 17 digits: the two parsers may differ in the last bit
    ["1", "x", " ", "2,5"],  # values that do not parse: named, a blank one missing
])
def test_a_csv_column_of_numbers_as_text_coerces_to_what_pandas_gives(values: list) -> None:
    frame = pd.DataFrame({"x": pd.Series(values, dtype=object), "name": [f" v{i}" for i in range(len(values))]})
    columns = {"x": ColumnSpec(dtype="float"), "name": ColumnSpec(dtype="str")}
    out, problems = coerce_table(frame, columns, 5)
    expected, expected_problems = _oracle(frame.set_axis(range(5, 5 + len(frame)), axis=0), columns)
    expected = from_frame(expected)
    assert out.schema == expected.schema and problems == expected_problems
    got, want = out.column("x").to_numpy(zero_copy_only=False), expected.column("x").to_numpy(zero_copy_only=False)
    assert got.tobytes() == want.tobytes()  # the same bits, negative zero and the last digit included
    if values[1] == "x":
        assert problems == {"x": (6, "x", 2)}
