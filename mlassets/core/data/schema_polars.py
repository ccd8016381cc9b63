"""A table's declared rules in Polars: a batch brought to the declared types (``coerce``, the one engine that coerces
values, ingest's too), checked, and what fails worded.

``checks`` are a column's rules in the order a message ranks them, each a name (as the messages have always said
them: ``not_nullable``, ``integer_valued``, ``finite``, ``greater_than_or_equal_to(0)``,
``less_than_or_equal_to(10)``, ``isin(['a', 'b'])``) and the rows it fails. A batch is first judged by one expression
of every rule (``row_passes``: one pass), checked by pandera (``pandera_schema``); only a batch that fails is counted
check by check, with its first offending values and their rows.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from mlassets.core.config import ColumnSpec
from mlassets.core.data.coerce import coerce, declared_type

if TYPE_CHECKING:
    import pandera.polars as pap
    import polars as pl

NOT_NULLABLE = "not_nullable"  # the check of a missing value where the column takes none
TYPE_NAMES = {"int": "float64", "float": "float64", "str": "str", "datetime": "datetime64[ns, UTC]"}


def checks(name: str, spec: ColumnSpec) -> list[tuple[str, pl.Expr]]:
    """The column's configured rules (``column_rules.rules``) in order, each ``(name, whether a present value fails
    it)``."""
    import polars as pl

    from mlassets.core.data.column_rules import rules

    column, out = pl.col(name), []
    for rule in rules(spec):
        if rule.op == "integer":
            fails = ~(column % 1 == 0).fill_null(False)
        elif rule.op == "finite":
            fails = ~column.is_finite()
        elif rule.op == ">=":
            fails = ~(column >= rule.operand)
        elif rule.op == "<=":
            fails = ~(column <= rule.operand)
        else:
            fails = ~column.is_in(list(rule.operand))  # type: ignore[call-overload]
        out.append((rule.name, column.is_not_null() & fails.fill_null(True)))
    return out


def row_passes(name: str, spec: ColumnSpec) -> pl.Expr:
    """Per row of a ``coerce``d batch: whether the column's value meets every declared rule (missing only where
    nullable)."""
    import polars as pl

    column = pl.col(name)
    failing = [fails for _, fails in checks(name, spec)]
    held = ~pl.any_horizontal(failing) if failing else pl.lit(True)
    return held if spec.nullable else column.is_not_null() & held


def pandera_schema(columns: dict[str, ColumnSpec]) -> pap.DataFrameSchema:
    """The declared rules as a pandera schema on its Polars backend: each column's type, and every value rule of
    every column as one check of the whole batch (``row_passes`` in one expression: one pass, where a pandera check
    per column and rule costs a pass and a collect each). ``validate(..., lazy=True)`` judges a ``coerce``d batch;
    only a batch it fails is counted rule by rule (``checks``) to word the message."""
    import pandera.polars as pap
    import polars as pl

    def declared_values(data: object) -> object:
        return data.lazyframe.select(pl.all_horizontal([row_passes(n, s) for n, s in columns.items()]))

    return pap.DataFrameSchema({name: pap.Column(declared_type(spec), nullable=True, coerce=False, required=True)
                                for name, spec in columns.items()},
                               checks=[pap.Check(declared_values, name="declared_values")], strict=False)


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
