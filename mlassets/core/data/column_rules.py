"""A column's declared value rules as data: one list per column spec, read by validation and by serving.

``rules`` lists what a ``ColumnSpec`` declares (an ``int`` is whole, a ``float`` finite, ``min``/``max``,
``min_date``/``max_date``, ``allowed``), each named as the messages name it. Validation turns each rule into a Polars
expression over a batch (``schema_polars.checks``); the endpoint judges a request's few values by the same rules in
NumPy (``breaks``), where a Polars query per request would cost more than the model, and words a failure through
validation's own engine. A rule is added here, once, and both read it.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from mlassets.core.config import ColumnSpec

if TYPE_CHECKING:
    import numpy as np

Op = Literal["integer", "finite", ">=", "<=", "isin"]


@dataclass(frozen=True)
class Rule:
    """One declared rule: its name in messages (``less_than_or_equal_to(10)``), how it tests a value, the operand."""

    name: str
    op: Op
    operand: object = None


def utc(text: str) -> datetime.datetime:
    """An ISO date or time as an aware UTC instant (a naive one read as UTC)."""
    value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value.replace(tzinfo=datetime.UTC) if value.tzinfo is None else value.astimezone(datetime.UTC)


def rules(spec: ColumnSpec) -> list[Rule]:
    """The column's configured value rules in the order a message ranks them (missing values are not among them:
    ``spec.nullable`` says whether one may be)."""
    import pandas as pd

    out = []
    if spec.dtype == "int":
        out.append(Rule("integer_valued", "integer"))
    if spec.dtype == "float":
        out.append(Rule("finite", "finite"))
    bounds = [(spec.min, spec.min, ">="), (spec.max, spec.max, "<="),
              (spec.min_date, utc(spec.min_date) if spec.min_date else None, ">="),
              (spec.max_date, utc(spec.max_date) if spec.max_date else None, "<=")]
    for said, value, op in bounds:
        if said is None:
            continue
        shown = pd.Timestamp(value) if isinstance(value, datetime.datetime) else value
        word = "greater_than_or_equal_to" if op == ">=" else "less_than_or_equal_to"
        out.append(Rule(f"{word}({shown})", ">=" if op == ">=" else "<=", value))
    if spec.allowed is not None:
        out.append(Rule(f"isin({list(spec.allowed)!r})", "isin", tuple(spec.allowed)))
    return out


def breaks(rule: Rule, values: np.ndarray) -> np.ndarray:
    """Per value, whether it breaks ``rule``: numbers as float64 (NaN: missing, never breaking), text as an object
    array of ``str`` (None: missing)."""
    import numpy as np

    if rule.op == "isin":
        allowed = set(rule.operand)  # type: ignore[call-overload]
        return np.fromiter((v is not None and v not in allowed for v in values), bool, len(values))
    present = ~np.isnan(values)
    with np.errstate(invalid="ignore"):
        if rule.op == "integer":
            fails = values % 1 != 0
        elif rule.op == "finite":
            fails = ~np.isfinite(values)
        elif rule.op == ">=":
            fails = ~(values >= rule.operand)
        else:
            fails = ~(values <= rule.operand)
    return present & fails
