"""A blocking data check's verdict: the record every validation (schema, counts, target) hands on."""

from __future__ import annotations

from dataclasses import dataclass

from mlassets.core.records import Record


@dataclass(frozen=True)
class CheckOutcome(Record):
    """One blocking check's verdict; ``message`` names the column and an offending value."""

    name: str
    passed: bool
    message: str
    failures: int = 0
