"""A table's schema check over batches, saying what a check of the whole table says.

Each batch is checked as it comes: in Polars when its columns are typed already (``schema_polars``), else (and
whenever that check fails) by the pandas schema of the table's rules (``schema.build_schema``), which words the
messages. What a batch fails is kept per column and check: how many rows, the first three offending values in row
order. The key is checked across all batches (``keys``). The outcome names each missing column, a key that is not
unique, and per column its first failed check in the order the schema runs them (coercion, type, missing values,
then the configured checks), columns in the config's order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mlassets.core.config import ColumnSpec
from mlassets.core.data.batches import object_file, open_parquet, polars_batches
from mlassets.core.data.budget import batch_rows
from mlassets.core.data.keys import KeyIndex, key_hashes
from mlassets.core.data.outcome import CheckOutcome
from mlassets.core.data.store import VersionedStore

if TYPE_CHECKING:
    import pandas as pd
    import pandera.pandas
    import polars as pl

    Batch = pl.DataFrame | pd.DataFrame
    Again = Callable[[], Iterable[tuple[Batch, Mapping[bytes, bytes] | None]]]

_RANKS = {"coerce_dtype": 0, "dtype": 1, "not_nullable": 2, "field_uniqueness": 3}
SAMPLES = 3


@dataclass(frozen=True)
class TableRules:
    """What a table is checked against: its declared columns and key, and the builder of their pandas schema
    (``schema.build_schema``), which words every failure. ``table``: named in messages (not the main table)."""

    columns: dict[str, ColumnSpec]
    key: list[str]
    schema: Callable[[dict[str, ColumnSpec], list[str]], pandera.pandas.DataFrameSchema]
    table: str = ""


@dataclass
class _Failed:
    rank: float
    count: int = 0
    samples: list[tuple[float, object]] = field(default_factory=list)  # (row, offending value), first in row order


def _plain(value: object) -> object:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _number(value: object, default: float) -> float:
    try:
        return default if value is None or value != value else float(value)
    except (TypeError, ValueError):
        return default


class TableScan:
    """Feed a table's batches in order (``add``), then ask for the ``outcome``."""

    def __init__(self, rules: TableRules, rows: int, budget_mb: int) -> None:
        from mlassets.core.data.schema_polars import polars_schema

        self.rules, self.budget_mb = rules, budget_mb
        self.columns, self.key, self.table = rules.columns, list(rules.key), rules.table
        self.pandas_schema = rules.schema(self.columns, [])  # the key is checked across batches, not in one
        self.polars_schema = polars_schema(self.columns)
        self.keys = KeyIndex(rows, budget_mb)
        self.rows = 0
        self.missing: list[str] = []
        self.failed: dict[tuple[str, str], _Failed] = {}
        self.eager = ""
        self.keyed = all(k in self.columns for k in self.key)  # every batch's key hashed (else no key check)
        self.fast = 0  # batches the Polars check passed

    def add(self, batch: Batch, metadata: Mapping[bytes, bytes] | None = None) -> None:
        """The next batch: a pandas frame, or a Polars one read from Parquet whose schema ``metadata`` (pandas
        dtypes) makes it the frame ``pd.read_parquet`` gives when the pandas schema has to check it."""
        import pandera.errors
        import polars as pl

        from mlassets.core.data.schema_polars import cast, typed

        first, self.rows = self.rows, self.rows + len(batch)
        if isinstance(batch, pl.DataFrame):
            if typed(self.columns, batch.schema):
                try:
                    self.polars_schema.validate(cast(batch, self.columns), lazy=True)
                except (pandera.errors.SchemaErrors, pandera.errors.SchemaError):
                    pass  # the pandas schema says what failed, and how
                else:
                    self.fast += 1
                    self._hash(batch)
                    return
            step = batch_rows(self.budget_mb, batch.estimated_size() / max(1, len(batch)))
            for start in range(0, len(batch), step):  # in pandas, a batch takes more room: in slices
                part = as_pandas(batch.slice(start, step), metadata)
                self._hash(self._pandas(part.set_axis(range(first + start, first + start + len(part)), axis=0)))
            return
        self._hash(self._pandas(batch.set_axis(range(first, self.rows), axis=0)))

    def _hash(self, frame: pl.DataFrame | pd.DataFrame) -> None:
        self.keyed = self.keyed and all(k in frame.columns for k in self.key)
        if self.keyed:
            self.keys.add(key_hashes(frame, self.key))

    def _pandas(self, frame: pd.DataFrame) -> pd.DataFrame:
        import pandera.errors

        try:
            return self.pandas_schema.validate(frame, lazy=True)
        except pandera.errors.SchemaErrors as exc:
            self._collect(exc.failure_cases)
            return exc.data
        except pandera.errors.SchemaError as exc:  # raised eagerly for some frame-level problems
            self.eager = self.eager or str(exc).splitlines()[0]
            return frame

    def _collect(self, cases: pd.DataFrame) -> None:
        found: dict[tuple[str, str], list[tuple[float, object]]] = {}
        for row in cases.itertuples(index=False):
            check, column = str(row.check), row.column if isinstance(row.column, str) else ""
            if check == "column_in_dataframe":
                if row.failure_case not in self.missing:
                    self.missing.append(row.failure_case)
                continue
            failed = self.failed.get((column, check))
            if failed is None:
                rank = _RANKS.get(check.split("(")[0], 10 + _number(row.check_number, 0))
                failed = self.failed[(column, check)] = _Failed(rank)
            failed.count += 1
            found.setdefault((column, check), []).append((_number(row.index, -1), row.failure_case))
        for where, samples in found.items():
            kept = self.failed[where].samples
            kept.extend(sorted(samples, key=lambda s: s[0])[: SAMPLES - len(kept)])

    def _duplicates(self, again: Again) -> tuple[int, dict[str, object], int] | None:
        """``(duplicate rows, the first one's key, failure cases)`` of the candidates' pandera check, or None."""
        import numpy as np
        import pandas as pd
        import pandera.errors
        import polars as pl

        candidates = self.keys.candidates()
        self.keys.close()
        if not len(candidates):
            return None
        parts, first = [], 0
        for batch, metadata in again():
            lo, hi = np.searchsorted(candidates, [first, first + len(batch)])
            if hi > lo:
                rows = candidates[lo:hi]
                part = (as_pandas(batch.select(self.key)[rows - first], metadata) if isinstance(batch, pl.DataFrame)
                        else batch.iloc[rows - first][self.key])
                parts.append(part.set_axis(rows, axis=0))
            first += len(batch)
        schema = self.rules.schema({k: self.columns[k] for k in self.key}, self.key)
        try:
            schema.validate(pd.concat(parts), lazy=True)
        except pandera.errors.SchemaErrors as exc:
            cases = exc.failure_cases
            group = cases[cases["check"] == "multiple_fields_uniqueness"]
            if len(group):
                earliest = group[group["index"] == group["index"].min()]
                values = dict(zip(earliest["column"], earliest["failure_case"], strict=False))
                return len(group) // len(self.key), {k: _plain(values.get(k)) for k in self.key}, len(group)
        return None

    def outcome(self, again: Again) -> CheckOutcome:
        """The verdict; ``again`` reads the same batches (with their metadata) once more, only when some keys may
        repeat."""
        where = f"table {self.table!r}: " if self.table else ""
        if not self.rows:
            self.keys.close()
            return CheckOutcome("schema", False, f"{where}no rows: the table is empty", 1)
        if self.eager:
            self.keys.close()
            return CheckOutcome("schema", False, where + self.eager, 1)
        parts = [f"column {name!r} is missing" for name in self.missing]
        failures = len(self.missing)
        duplicates = self._duplicates(again) if self.keyed else None
        if duplicates:
            n, example, cases = duplicates
            parts.append(f"key {self.key} is not unique: {n} duplicate rows, e.g. {example}")
            failures += cases
        order = {name: i for i, name in enumerate(self.columns)}
        for column in sorted({c for c, _ in self.failed}, key=lambda c: order.get(c, len(order))):
            checks = {check: f for (c, check), f in self.failed.items() if c == column}
            check, failed = min(checks.items(), key=lambda kv: kv[1].rank)
            sample = [value for _, value in failed.samples]
            parts.append(f"column {column!r} failed {check}: {failed.count} rows, e.g. {sample}")
            failures += sum(f.count for f in checks.values())
        if parts:
            return CheckOutcome("schema", False, where + "; ".join(parts), failures)
        return CheckOutcome("schema", True, f"{where}{self.rows} rows match the schema of {len(self.columns)} columns")


def as_pandas(frame: pl.DataFrame, metadata: Mapping[bytes, bytes] | None) -> pd.DataFrame:
    """A Polars batch as the pandas frame of the Parquet it was read from (its pandas dtypes, from ``metadata``)."""
    import polars as pl

    table = frame.to_arrow(compat_level=pl.CompatLevel.oldest())
    return (table.replace_schema_metadata(metadata) if metadata else table).to_pandas()


def scan_frame(frame: pd.DataFrame, rules: TableRules, budget_mb: int) -> CheckOutcome:
    """A frame in memory, checked in budget-sized slices (the same verdict and message as one object of it)."""
    width = frame.memory_usage(index=False).sum() / max(1, len(frame))
    step = batch_rows(budget_mb, width)

    def slices() -> Iterator[tuple[pd.DataFrame, None]]:
        return ((frame.iloc[i:i + step], None) for i in range(0, len(frame), step))

    scan = TableScan(rules, len(frame), budget_mb)
    for part, _ in slices():
        scan.add(part)
    return scan.outcome(slices)


def scan_objects(store: VersionedStore, repo: str, ref: str, paths: list[str], rules: TableRules,
                 budget_mb: int) -> CheckOutcome:
    """The objects at ``paths`` as one table (their rows in order), read where they lie in the store, in Polars
    batches of the memory budget (only the declared columns)."""
    with contextlib.ExitStack() as stack:
        readers = []
        for path in paths:
            file = stack.enter_context(object_file(store, repo, ref, path))
            readers.append((file, open_parquet(file, f"{repo}@{ref[:12]}:{path}")))

        def batches() -> Iterator[tuple[pl.DataFrame, Mapping[bytes, bytes] | None]]:
            for file, reader in readers:
                for frame in polars_batches(file, reader, budget_mb, list(rules.columns)):
                    yield frame, reader.schema_arrow.metadata
                    del frame  # before the next batch is read: one batch at a time

        scan = TableScan(rules, sum(r.metadata.num_rows for _, r in readers), budget_mb)
        for batch in batches():
            scan.add(*batch)
            del batch
        return scan.outcome(batches)
