"""Blocking data validation: a table's declared columns and key (checked in Polars by ``validate``, worded by
``schema_polars``), plus the rows-per-partition minimum.

Every failure message names the column, an offending value and its row. Count and distribution checks against the
rest of a version are in ``validation_counts``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from mlassets.core.config import ColumnSpec, DatasetConfig
from mlassets.core.data.outcome import CheckOutcome

if TYPE_CHECKING:
    import pandas as pd

    from mlassets.core.data.validate import TableRules


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
    """What ``validate`` checks a table against: these columns and key."""
    from mlassets.core.data.validate import TableRules

    return TableRules(columns, list(key), table)


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
