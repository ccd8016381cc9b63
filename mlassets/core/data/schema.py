"""Blocking data validation: a pandera schema built from the dataset config, plus the rows-per-partition minimum.

Every failure message names the column and an offending value. Count and distribution checks against the
rest of a version are in ``validation_counts``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import pandas as pd
import pandera.pandas as pa

from mlassets.core.config import ColumnSpec, DatasetConfig
from mlassets.core.data.days import utc_timestamp
from mlassets.core.data.outcome import CheckOutcome

if TYPE_CHECKING:
    from mlassets.core.data.validate import TableRules

# int columns are validated as float64 plus an integer_valued check, so 1545.5 is reported, not truncated.
_DTYPES = {"int": "float64", "float": "float64", "str": "str", "datetime": "datetime64[ns, UTC]"}


_INTEGRAL = pa.Check(lambda s: (s % 1 == 0) | s.isna(), name="integer_valued")
# inf is a value no model reads (the features would take it as missing): refused, also where missing is allowed
_FINITE = pa.Check(lambda s: s.isna() | ((s != float("inf")) & (s != float("-inf"))), name="finite")


def _column(name: str, spec: ColumnSpec) -> pa.Column:
    checks = [_INTEGRAL] if spec.dtype == "int" else [_FINITE] if spec.dtype == "float" else []
    if spec.min is not None:
        checks.append(pa.Check.ge(spec.min))
    if spec.max is not None:
        checks.append(pa.Check.le(spec.max))
    if spec.min_date is not None:
        checks.append(pa.Check.ge(utc_timestamp(spec.min_date)))
    if spec.max_date is not None:
        checks.append(pa.Check.le(utc_timestamp(spec.max_date)))
    if spec.allowed is not None:
        checks.append(pa.Check.isin(spec.allowed))
    return pa.Column(_DTYPES[spec.dtype], checks=checks, nullable=spec.nullable, coerce=True, required=True)


def build_schema(columns: dict[str, ColumnSpec], key: list[str]) -> pa.DataFrameSchema:
    """A table's schema: types, ranges, dates, nullability, allowed values, a unique key (when given)."""
    return pa.DataFrameSchema(
        {name: _column(name, spec) for name, spec in columns.items()},
        unique=key or None,
        report_duplicates="exclude_first",
        strict=False,
    )


def main_columns(cfg: DatasetConfig) -> dict[str, ColumnSpec]:
    """The main table's columns as validated: with ``drop_missing_target`` a row without a target is let in (the
    features stage drops it, counted)."""
    columns = dict(cfg.columns)
    if cfg.drop_missing_target:
        columns[cfg.target] = dataclasses.replace(columns[cfg.target], nullable=True)
    return columns


def validate_schema(frame: pd.DataFrame, cfg: DatasetConfig) -> CheckOutcome:
    """The main table (the examples) against ``dataset.columns`` and ``dataset.key``."""
    return target_hint(validate_table(frame, main_columns(cfg), cfg.key, budget_mb=cfg.memory_budget_mb), cfg)


def target_hint(outcome: CheckOutcome, cfg: DatasetConfig) -> CheckOutcome:
    """A main-table outcome whose target has missing values says which key lets such rows in (and drops them)."""
    if outcome.passed or cfg.drop_missing_target or f"column {cfg.target!r} failed not_nullable" not in outcome.message:
        return outcome
    return dataclasses.replace(outcome, message=f"{outcome.message}; column {cfg.target!r} is the target: set "
                               "dataset.drop_missing_target: true to drop rows without one (they are counted)")


def table_rules(columns: dict[str, ColumnSpec], key: list[str], table: str = "") -> TableRules:
    """What ``validate`` checks a table against: these columns and key, worded by ``build_schema``."""
    from mlassets.core.data.validate import TableRules

    return TableRules(columns, list(key), build_schema, table)


def validate_table(frame: pd.DataFrame, columns: dict[str, ColumnSpec], key: list[str],
                   table: str = "", budget_mb: int = 1024) -> CheckOutcome:
    """One table against its schema; messages of another table than the main one start with its name. Checked
    in slices of the memory budget, as the store's objects are (``validate.scan_objects``)."""
    from mlassets.core.data.validate import scan_frame

    return scan_frame(frame, table_rules(columns, key, table), budget_mb)


def merge_outcomes(outcomes: list[CheckOutcome]) -> CheckOutcome:
    """One ``schema`` outcome for several tables: failed when any failed, naming each failure."""
    failed = [o for o in outcomes if not o.passed]
    if not failed:
        return CheckOutcome("schema", True, "; ".join(o.message for o in outcomes))
    return CheckOutcome("schema", False, "; ".join(o.message for o in failed), sum(o.failures for o in failed))


MIN_ROWS_SHARE = 0.1  # dataset.min_rows unset: a new partition holds at least this share of the others' median


def min_rows_of(cfg: DatasetConfig, reference: dict[str, int]) -> tuple[int, str]:
    """``dataset.min_rows`` (scaled by the sample fraction), or, unset, a tenth of the median rows of the other
    partitions (1 when there are none); and how it was derived ("" when configured)."""
    import math

    import numpy as np

    if cfg.min_rows is not None:
        return max(1, round(cfg.min_rows * cfg.sample_fraction)), ""
    if not reference:
        return 1, "derived: no other partition yet; dataset.min_rows sets it"
    median = float(np.median(list(reference.values())))
    return max(1, math.ceil(MIN_ROWS_SHARE * median)), (
        f"derived: {MIN_ROWS_SHARE:.0%} of the median {median:.0f} rows of {len(reference)} other "
        f"partition{'s' if len(reference) > 1 else ''}; dataset.min_rows sets it")


def validate_min_rows(counts: dict[str, int], cfg: DatasetConfig,
                      reference: dict[str, int] | None = None) -> CheckOutcome:
    """Every partition (month, week) in ``counts`` holds at least ``min_rows`` rows (see ``min_rows_of``;
    ``reference``: the rows of the version's other partitions)."""
    minimum, how = min_rows_of(cfg, reference or {})
    said = f" ({how})" if how else ""
    short = {m: n for m, n in counts.items() if n < minimum}
    if short:
        key, n = min(short.items(), key=lambda kv: kv[1])
        return CheckOutcome(
            "min_rows", False, f"partition {key}: {n} rows, fewer than the minimum {minimum}{said}", len(short)
        )
    return CheckOutcome("min_rows", True, f"every partition has at least {minimum} rows{said}")
