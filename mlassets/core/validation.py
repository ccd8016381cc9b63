"""Blocking data validation: a pandera schema built from the dataset config, plus count checks.

Every failure message names the column and an offending value.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pandera.pandas as pa

from mlassets.core.config import ColumnSpec, DatasetConfig

# int columns are validated as float64 plus an integer_valued check, so 1545.5 is reported, not truncated.
_DTYPES = {"int": "float64", "float": "float64", "str": "str", "datetime": "datetime64[ns, UTC]"}


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    message: str
    failures: int = 0


_INTEGRAL = pa.Check(lambda s: (s % 1 == 0) | s.isna(), name="integer_valued")


def _column(name: str, spec: ColumnSpec) -> pa.Column:
    checks = [_INTEGRAL] if spec.dtype == "int" else []
    if spec.min is not None:
        checks.append(pa.Check.ge(spec.min))
    if spec.max is not None:
        checks.append(pa.Check.le(spec.max))
    if spec.allowed is not None:
        checks.append(pa.Check.isin(spec.allowed))
    return pa.Column(_DTYPES[spec.dtype], checks=checks, nullable=spec.nullable, coerce=True, required=True)


def build_schema(cfg: DatasetConfig) -> pa.DataFrameSchema:
    """The raw table's schema: types, ranges, nullability, allowed slice values, a unique key."""
    return pa.DataFrameSchema(
        {name: _column(name, spec) for name, spec in cfg.columns.items()},
        unique=cfg.key,
        report_duplicates="exclude_first",
        strict=False,
    )


def _summarize(errors: pa.errors.SchemaErrors, key: list[str]) -> str:
    cases = errors.failure_cases
    parts, seen = [], set()
    for row in cases.itertuples(index=False):
        column, check = row.column if isinstance(row.column, str) else "", str(row.check)
        if check == "column_in_dataframe":
            parts.append(f"column {row.failure_case!r} is missing")
        elif check == "multiple_fields_uniqueness":
            if "<key>" not in seen:
                seen.add("<key>")
                n = int((cases["check"] == check).sum()) // max(1, len(key))
                parts.append(f"key {key} is not unique: {n} duplicate rows")
        elif column not in seen:  # the first failed check per column says the most (coercion first)
            seen.add(column)
            group = cases[(cases["column"] == column) & (cases["check"] == check)]
            sample = group["failure_case"].head(3).tolist()
            parts.append(f"column {column!r} failed {check}: {len(group)} rows, e.g. {sample}")
    return "; ".join(parts)


def validate_schema(frame: pd.DataFrame, cfg: DatasetConfig) -> CheckOutcome:
    if frame.empty:
        return CheckOutcome("schema", False, "no rows: the data version holds an empty table", 1)
    try:
        build_schema(cfg).validate(frame, lazy=True)
    except pa.errors.SchemaErrors as exc:
        return CheckOutcome("schema", False, _summarize(exc, cfg.key), len(exc.failure_cases))
    except pa.errors.SchemaError as exc:  # raised eagerly for some frame-level problems
        return CheckOutcome("schema", False, str(exc).splitlines()[0], 1)
    return CheckOutcome("schema", True, f"{len(frame)} rows match the schema of {len(cfg.columns)} columns")


def validate_min_rows(counts: dict[str, int], cfg: DatasetConfig) -> CheckOutcome:
    """Every month holds at least ``min_rows`` rows."""
    minimum = max(1, round(cfg.min_rows * cfg.sample_fraction))
    short = {m: n for m, n in counts.items() if n < minimum}
    if short:
        month, n = min(short.items(), key=lambda kv: kv[1])
        return CheckOutcome(
            "min_rows", False, f"month {month}: {n} rows, fewer than the minimum {minimum}", len(short)
        )
    return CheckOutcome("min_rows", True, f"every month has at least {minimum} rows")
