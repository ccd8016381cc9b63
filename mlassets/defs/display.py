"""Metadata for people to read: tables and rounded numbers (the records hold the exact values)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

_TEXT = ("slice", "value", "model", "rule", "reason", "note", "check", "message", "bound", "class")
_INTS = ("n", "count", "bin", "rows", "failures")


def round_for_display(value: float, digits: int = 4) -> float:
    """``digits`` decimals, and at least ``digits`` significant digits for small numbers (0.0001235)."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, max(digits, digits - 1 - math.floor(math.log10(abs(value)))))


def number(value: float | None, digits: int = 4) -> dg.MetadataValue:
    """A float for display (``round_for_display``: 19.31737020425067 -> 19.3174); NaN and None show as empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return dg.MetadataValue.text("")
    return dg.MetadataValue.float(round_for_display(float(value), digits))


def rounded(value: Any, digits: int = 4) -> Any:
    """Every float inside lists and mappings rounded for display (JSON metadata); NaN becomes None."""
    if isinstance(value, float):
        return None if math.isnan(value) else round_for_display(value, digits)
    if isinstance(value, Mapping):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v, digits) for v in value]
    return value


def json_value(value: Any) -> dg.MetadataValue:
    """JSON metadata with its floats rounded for display."""
    return dg.MetadataValue.json(rounded(value))


def _cell(column: str, value: object) -> object:
    return rounded(value) if isinstance(value, float) else value


def table(records: Sequence[dict], columns: Sequence[str] | None = None) -> dg.TableMetadataValue:
    """A metadata table; text, boolean and integer columns typed by name, the rest floats (rounded)."""
    columns = list(columns or (records[0] if records else ["slice"]))

    def kind(c: str) -> str:
        if c in _TEXT:
            return "string"
        return "bool" if c == "passed" or c.endswith("_knows") else "int" if c in _INTS else "float"

    return dg.MetadataValue.table(
        records=[dg.TableRecord({c: _cell(c, r.get(c)) for c in columns}) for r in records],
        schema=dg.TableSchema(columns=[dg.TableColumn(c, kind(c)) for c in columns]),
    )
