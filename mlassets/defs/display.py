"""Metadata for people to read: tables and rounded numbers (the records hold the exact values)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import dagster as dg

_TEXT = ("slice", "value", "model", "rule", "reason", "check", "message")
_INTS = ("n", "count", "bin", "rows", "failures")


def number(value: float | None, digits: int = 4) -> dg.MetadataValue:
    """A float for display: rounded to ``digits`` significant decimals; NaN and None show as empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return dg.MetadataValue.text("")
    return dg.MetadataValue.float(round(float(value), digits))


def _cell(column: str, value: object) -> object:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 4)
    return value


def table(records: Sequence[dict], columns: Sequence[str] | None = None) -> dg.TableMetadataValue:
    """A metadata table; text, boolean and integer columns typed by name, the rest floats (rounded)."""
    columns = list(columns or (records[0] if records else ["slice"]))

    def kind(c: str) -> str:
        return "string" if c in _TEXT else "bool" if c == "passed" else "int" if c in _INTS else "float"

    return dg.MetadataValue.table(
        records=[dg.TableRecord({c: _cell(c, r.get(c)) for c in columns}) for r in records],
        schema=dg.TableSchema(columns=[dg.TableColumn(c, kind(c)) for c in columns]),
    )
