"""A table's declared rules in Polars: a batch brought to the declared types (``coerce``, the one engine that coerces
values, ingest's too), checked, and what fails worded.

``checks`` are a column's rules in the order a message ranks them, each a name (as the messages have always said
them: ``not_nullable``, ``integer_valued``, ``finite``, ``greater_than_or_equal_to(0)``,
``less_than_or_equal_to(10)``, ``isin(['a', 'b'])``) and the rows it fails. A batch is first judged by one query of
every rule reduced to one boolean (``batch_passes``), checked by pandera (``pandera_schema``); only a batch that fails
is counted check by check, with its first offending values and their rows.
"""

from __future__ import annotations

import datetime
import functools
import math
import operator
from typing import TYPE_CHECKING

from mlassets.core.config import ColumnSpec
from mlassets.core.data.coerce import coerce, declared_type

if TYPE_CHECKING:
    import pandera.polars as pap
    import polars as pl

    from mlassets.core.data.column_rules import Rule

NOT_NULLABLE = "not_nullable"  # the check of a missing value where the column takes none
TYPE_NAMES = {"int": "float64", "float": "float64", "str": "str", "datetime": "datetime64[ns, UTC]"}
SCHEMAS_KEPT = 64  # pandera schemas kept built, by their columns (``pandera_schema``)
_SCHEMAS: dict[str, pap.DataFrameSchema] = {}


def _holds(column: pl.Expr, rule: Rule) -> pl.Expr:
    """Per present value, whether it meets ``rule`` (null where the value is missing)."""
    if rule.op == "integer":
        return column % 1 == 0
    if rule.op == "finite":
        return column.is_finite()
    if rule.op == ">=":
        return column >= rule.operand
    if rule.op == "<=":
        return column <= rule.operand
    return column.is_in(list(rule.operand))  # type: ignore[call-overload]


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def checks(name: str, spec: ColumnSpec) -> list[tuple[str, pl.Expr]]:
    """The column's configured rules (``column_rules.rules``) in order, each ``(name, whether a present value fails
    it)``."""
    import polars as pl

    from mlassets.core.data.column_rules import rules

    column = pl.col(name)
    return [(rule.name, column.is_not_null() & (~_holds(column, rule)).fill_null(True)) for rule in rules(spec)]


def row_passes(name: str, spec: ColumnSpec) -> pl.Expr:
    """Per row of a ``coerce``d batch: whether the column's value meets every declared rule (missing only where
    nullable)."""
    import polars as pl

    column = pl.col(name)
    failing = [fails for _, fails in checks(name, spec)]
    held = ~pl.any_horizontal(failing) if failing else pl.lit(True)
    return held if spec.nullable else column.is_not_null() & held


def batch_passes(columns: dict[str, ColumnSpec]) -> pl.Expr:
    """Whether every row of a ``coerce``d batch meets every declared rule (``row_passes`` of all rows, as one
    boolean), reduced column by column: the null count where a value may not be missing, and ``all`` of the
    column's rules met together (``all`` passes over a missing value, as ``checks`` do). ``finite`` is left out
    where two finite bounds hold the column: NaN and infinities fail one of them."""
    import polars as pl

    from mlassets.core.data.column_rules import rules

    held = []
    for name, spec in columns.items():
        column, kept = pl.col(name), rules(spec)
        if not spec.nullable:
            held.append(column.null_count() == 0)
        bounds = [r for r in kept if r.op in (">=", "<=")]
        if {r.op for r in bounds} == {">=", "<="} and all(_finite(r.operand) for r in bounds):
            kept = [r for r in kept if r.op != "finite"]
        if kept:
            held.append(functools.reduce(operator.and_, [_holds(column, r) for r in kept]).all())
    return pl.all_horizontal(held) if held else pl.lit(True)


def pandera_schema(columns: dict[str, ColumnSpec]) -> pap.DataFrameSchema:
    """The declared rules as a pandera schema on its Polars backend: each column's type, and every value rule of
    every column as one check of the whole batch (``batch_passes``: one query whose answer is one boolean, where a
    pandera check per column and rule costs a pass and a collect each, and a check a row a mask as long as the
    batch). ``validate(..., lazy=True)`` judges a ``coerce``d batch; only a batch it fails is counted rule by rule
    (``checks``) to word the message. Built once a process for the same columns (a table's every scan)."""
    import pandera.polars as pap

    said = repr(list(columns.items()))
    if said in _SCHEMAS:
        return _SCHEMAS[said]
    verdict = batch_passes(columns)

    def declared_values(data: pap.PolarsData) -> bool:
        return bool(data.lazyframe.select(verdict).collect().item())

    schema = pap.DataFrameSchema({name: pap.Column(declared_type(spec), nullable=True, coerce=False, required=True)
                                  for name, spec in columns.items()},
                                 checks=[pap.Check(declared_values, name="declared_values")], strict=False)
    if len(_SCHEMAS) >= SCHEMAS_KEPT:
        _SCHEMAS.clear()
    _SCHEMAS[said] = schema
    return schema


def missing_value(spec: ColumnSpec) -> object:
    """How a missing value of the column's type is shown (as pandas holds it)."""
    import pandas as pd

    return float("nan") if spec.dtype in ("int", "float") else pd.NaT if spec.dtype == "datetime" else None


def shown(value: object) -> object:
    """A value as a message shows it (timestamps as pandas writes them)."""
    import pandas as pd

    return pd.Timestamp(value) if isinstance(value, datetime.datetime) else value


def first_failure(frame: pl.DataFrame, columns: dict[str, ColumnSpec]) -> tuple[int, str, object, str] | None:
    """The first row (then column, in the declared order) of ``frame`` whose value breaks its column's declared
    rules, as ``(row, column, value, check)`` with the check named as validation names it (``coerce_dtype(...)``,
    ``not_nullable``, ``integer_valued``, ``finite``, a bound, ``isin``); None when every row passes. The rules are
    validation's own (``coerce``, ``checks``, ``row_passes``), so a row served is judged as a row ingested."""
    import polars as pl

    cast, bad = coerce(frame, columns)
    present = {n: s for n, s in columns.items() if n in cast.columns}
    if not present or (not bad and cast.select(pl.all_horizontal(
            [row_passes(n, s) for n, s in present.items()])).to_series().all()):
        return None
    found: list[tuple[int, int, str, object, str]] = []
    for order, (name, spec) in enumerate(present.items()):
        rules = [(f"coerce_dtype({TYPE_NAMES[spec.dtype]!r})", bad[name], frame[name])] if name in bad else []
        valid = pl.lit(True) if name not in bad else pl.lit(~bad[name])
        if not spec.nullable:
            rules.append((NOT_NULLABLE, cast.select(pl.col(name).is_null() & valid).to_series(), cast[name]))
        rules += [(check, cast.select(fails).to_series(), cast[name]) for check, fails in checks(name, spec)]
        for check, mask, values in rules:
            rows = mask.arg_true()
            if len(rows):
                row = int(rows[0])
                found.append((row, order, name, shown(values[row]), check))
                break
    row, _, name, value, check = min(found, key=lambda f: (f[0], f[1]))
    return row, name, value, check
