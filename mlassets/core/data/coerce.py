"""Values brought to their declared types, in Polars: the one engine that coerces, for ingest and for validation.

``coerce`` casts each declared column present to its type and marks the rows whose value has none. Two callers, two
readings of a value, one set of rules:

- a batch already stored, or a request served (``delivered=False``): numbers (and booleans) as float64, NaN read as
  missing; text as text; UTC timestamps (naive ones read as UTC, text read as any date pandas reads);
- a delivery's raw values (``delivered=True``, the files source: a CSV's text, a Parquet file's types): text trimmed
  of what ``str.strip`` trims; blank text missing, not a failure; numbers parsed from text (``" 7"``, ``1e5``), a
  stored number column kept in its type (integers with gaps as float64, as pandas holds them); a boolean is no
  number; a value declared text written as Python writes it; dates by the declared format, ISO 8601 by default
  (``dates.parse_dates``), or built from whole-number columns (``dates.built_date``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlassets.core.config import ColumnSpec

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

# what str.strip() removes: every character whose isspace() is true (a test checks the list against Python's)
WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
              "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
EDGE = f"^[{WHITESPACE}]|[{WHITESPACE}]$"  # a value that begins or ends with some of it
WHOLE = r"^[+-]?\d+$"  # text pandas reads as an integer (so "-0" as 0, not -0.0)


def declared_type(spec: ColumnSpec) -> pl.DataType:
    """The Polars type a declared column is validated in."""
    import polars as pl

    if spec.dtype == "datetime":
        return pl.Datetime("ns", "UTC")
    return pl.String() if spec.dtype == "str" else pl.Float64()


def to_polars(frame: pd.DataFrame) -> pl.DataFrame:
    """A pandas batch as Polars; a column of Python objects as the text pandas makes of each value (missing kept)."""
    import polars as pl

    if frame.columns.duplicated().any():
        raise ValueError(f"duplicate column names: {sorted(set(frame.columns[frame.columns.duplicated()]))}")
    plain = frame.copy(deep=False)
    for name in plain.columns:
        if plain[name].dtype == object:
            column = plain[name]
            plain[name] = column.astype(str).where(column.notna(), None)
    return pl.from_pandas(plain.reset_index(drop=True))


def _times(parsed: pd.Series, name: str) -> pl.Series:
    import polars as pl

    return pl.Series(name, parsed).cast(pl.Datetime("ns", "UTC"))


def _parse_times(values: pl.Series) -> pl.Series:
    """Text as UTC timestamps (ISO 8601 first, then any form pandas reads; naive ones as UTC); null where not."""
    import pandas as pd

    text = values.to_pandas()
    parsed = pd.to_datetime(text, utc=True, errors="coerce", format="ISO8601")
    again = parsed.isna() & text.notna()
    if again.any():
        parsed[again] = pd.to_datetime(text[again], utc=True, errors="coerce", format="mixed")
    return _times(parsed, values.name)


def _is_text(dtype: pl.DataType) -> bool:
    import polars as pl

    return dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum)


def _trimmed(values: pl.Series) -> pl.Series:
    import polars as pl

    text = values.cast(pl.String)
    spaced = text.str.contains_any(list(WHITESPACE)).any() and text.str.contains(EDGE).any()
    return text.str.strip_chars(WHITESPACE) if spaced else text  # the checks are faster than the trim


def _delivered(values: pl.Series, spec: ColumnSpec) -> pl.Series | None:
    """A raw value's reading where a delivery's differs from a stored one's (None: the same)."""
    import polars as pl

    from mlassets.core.data.dates import parse_dates

    dtype = values.dtype
    if spec.dtype in ("int", "float"):
        if dtype.is_integer():  # kept in its type; with gaps as float64, as pandas holds it
            return values.cast(pl.Float64) if values.null_count() else values
        if dtype.is_float():
            return values.fill_nan(None) if values.is_nan().any() else values
        if _is_text(dtype):
            text = _trimmed(values)
            numbers = text.cast(pl.Float64, strict=False).fill_nan(None)
            if not ((numbers == 0) & text.str.starts_with("-")).any():
                return numbers
            return pl.select(pl.when(text.str.contains(WHOLE) & (numbers == 0)).then(0.0).otherwise(numbers)
                             ).to_series().alias(values.name)
        return None if dtype.is_numeric() else pl.Series(values.name, [None] * len(values), dtype=pl.Float64)
    if spec.dtype == "str":
        if _is_text(dtype):
            return _trimmed(values)
        if dtype.is_integer() and values.null_count():  # pandas held it as float64, and wrote 10 as "10.0"
            values = values.cast(pl.Float64)
        shown = (None if v is None or v != v else str(v) for v in values.to_list())  # as pandas writes it
        return pl.Series(values.name, list(shown), dtype=pl.String)
    if isinstance(dtype, pl.Datetime):  # kept in its unit
        return values.dt.convert_time_zone("UTC") if dtype.time_zone else values.dt.replace_time_zone("UTC")
    if _is_text(dtype):
        return _times(parse_dates(values.cast(pl.String).to_pandas(), spec.format), values.name)
    return None


def _coerced(values: pl.Series, spec: ColumnSpec, delivered: bool) -> pl.Series:
    import polars as pl

    dtype = values.dtype
    if delivered and (out := _delivered(values, spec)) is not None:
        return out
    if spec.dtype in ("int", "float"):
        if dtype.is_numeric() or dtype == pl.Boolean:
            numbers = values.cast(pl.Float64)  # only a float can hold NaN: looked for before a copy is made
            return numbers.fill_nan(None) if dtype.is_float() and numbers.is_nan().any() else numbers
        if _is_text(dtype):
            return values.cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False).fill_nan(None)
    elif spec.dtype == "str":
        return values.cast(pl.String, strict=False)
    elif isinstance(dtype, pl.Datetime):
        values = values.dt.convert_time_zone("UTC") if dtype.time_zone else values.dt.replace_time_zone("UTC")
        return values.dt.cast_time_unit("ns")
    elif dtype == pl.Date:
        return values.cast(pl.Datetime("ns")).dt.replace_time_zone("UTC")
    elif _is_text(dtype):
        return _parse_times(values.cast(pl.String))
    return pl.Series(values.name, [None] * len(values), dtype=declared_type(spec))  # nothing of this type reads as one


def _always_casts(dtype: pl.DataType, spec: ColumnSpec, delivered: bool) -> bool:
    """Whether every present value of ``dtype`` has a value of the declared type (``_coerced`` of a number is a
    number but for NaN, which is missing anyway; text stays text; a time stays a time): no row can fail the cast."""
    import polars as pl

    if spec.dtype in ("int", "float"):
        return dtype.is_numeric() or (dtype == pl.Boolean and not delivered)
    if spec.dtype == "str":
        return dtype == pl.String or delivered
    return isinstance(dtype, pl.Datetime) or dtype == pl.Date


def coerce(frame: pl.DataFrame, columns: dict[str, ColumnSpec],
           delivered: bool = False) -> tuple[pl.DataFrame, dict[str, pl.Series]]:
    """``(the declared columns present, in their types; per column, the rows whose value is not of its type)``;
    ``delivered``: the values are a delivery's, as read from its file (the module says how they differ). Columns
    built from others (``from_columns``) are ``built``'s."""
    import polars as pl

    out, bad = [], {}
    for name, spec in columns.items():
        if name not in frame.columns or (delivered and spec.from_columns):
            continue
        values = frame[name]
        cast = _coerced(values, spec, delivered)
        out.append(cast)
        if _always_casts(values.dtype, spec, delivered):
            continue
        failed = values.is_not_null() & cast.is_null()
        if values.dtype.is_float():
            failed = failed & values.is_not_nan()
        if delivered and _is_text(values.dtype):
            failed = failed & (_trimmed(values) != "")  # a blank value is a missing one
        if failed.any():
            bad[name] = failed
    return pl.DataFrame(out), bad


def built(cast: pl.DataFrame, parts: dict[str, str]) -> tuple[pl.Series, pl.Series]:
    """``(dates, bad)`` of a column built from the whole numbers of ``cast``'s ``parts`` columns
    (``dates.built_date``)."""
    import polars as pl

    from mlassets.core.data.dates import built_date

    dates, bad = built_date(cast.select(sorted(set(parts.values()))).to_pandas(), parts)
    return _times(dates, ""), pl.Series("", bad, dtype=pl.Boolean)
