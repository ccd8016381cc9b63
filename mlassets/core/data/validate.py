"""A table's schema check over batches, saying what a check of the whole table says.

Each batch is checked as it comes, in Polars: cast to the declared types by ``coerce`` (the one engine that coerces
values), judged by pandera in one query that answers one boolean, and worded by ``schema_polars``. What a batch fails
is kept per column and check: how many rows, the first three offending values and their rows, in row order. The key
is checked across all batches (``keys``). The outcome names each missing column, a key that is not unique, and per
column its first failed check in the order they run (coercion, missing values, then the configured checks), columns
in the config's order.
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
from mlassets.core.data.schema_polars import NOT_NULLABLE
from mlassets.core.data.store import VersionedStore

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

    Batch = pl.DataFrame | pd.DataFrame
    Again = Callable[[], Iterable[tuple[Batch, Mapping[bytes, bytes] | None]]]

SAMPLES = 3


@dataclass(frozen=True)
class TableRules:
    """What a table is checked against: its declared columns and key. ``table``: named in messages (not the main
    table)."""

    columns: dict[str, ColumnSpec]
    key: list[str]
    table: str = ""


@dataclass
class _Failed:
    rank: float
    count: int = 0
    samples: list[tuple[int, object]] = field(default_factory=list)  # (row, offending value), first in row order


def _plain(value: object) -> object:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _polars(batch: Batch) -> pl.DataFrame:
    import polars as pl

    from mlassets.core.data.coerce import to_polars

    return batch if isinstance(batch, pl.DataFrame) else to_polars(batch)


class TableScan:
    """Feed a table's batches in order (``add``), then ask for the ``outcome``."""

    def __init__(self, rules: TableRules, rows: int, budget_mb: int) -> None:
        self.rules, self.budget_mb = rules, budget_mb
        self.columns, self.key, self.table = rules.columns, list(rules.key), rules.table
        self.keys = KeyIndex(rows, budget_mb)
        self.rows = 0
        self.missing: list[str] = []
        self.failed: dict[tuple[str, str], _Failed] = {}
        self.eager = ""
        self.keyed = all(k in self.columns for k in self.key)  # every batch's key hashed (else no key check)
        self.fast = 0  # batches that passed on the one query alone

    def add(self, batch: Batch, metadata: Mapping[bytes, bytes] | None = None) -> None:
        """The next batch (a pandas or a Polars frame; ``metadata``, the Parquet schema's, is not needed)."""
        import polars as pl

        from mlassets.core.data.coerce import coerce

        first, self.rows = self.rows, self.rows + len(batch)
        try:
            frame = _polars(batch)
        except (TypeError, ValueError, pl.exceptions.PolarsError, ImportError) as exc:
            self.eager = self.eager or f"the table cannot be read as columns: {str(exc).splitlines()[0]}"
            return
        for name in self.columns:
            if name not in frame.columns and name not in self.missing:
                self.missing.append(name)
        cast, bad = coerce(frame, self.columns)
        present = {n: s for n, s in self.columns.items() if n in cast.columns}
        if not bad and (not present or self._passes(cast, present)):
            self.fast += 1
        else:
            self._count(frame, cast, bad, present, first)
        self._hash(cast)

    def _passes(self, cast: pl.DataFrame, present: dict[str, ColumnSpec]) -> bool:
        """Whether pandera's schema of the declared rules passes the batch (``pandera_schema`` keeps one built per
        set of columns)."""
        from pandera.errors import SchemaError, SchemaErrors

        from mlassets.core.data.schema_polars import pandera_schema

        try:
            pandera_schema(present).validate(cast, lazy=True)
        except (SchemaError, SchemaErrors):
            return False
        return True

    def _count(self, frame: pl.DataFrame, cast: pl.DataFrame, bad: dict[str, pl.Series],
               present: dict[str, ColumnSpec], first: int) -> None:
        """Each check's failing rows of a batch that fails: counted, the first ``SAMPLES`` kept with their rows."""
        import polars as pl

        from mlassets.core.data.schema_polars import TYPE_NAMES, checks, missing_value, shown

        for name, spec in present.items():
            coerce_failed = bad.get(name)
            found = []
            if coerce_failed is not None:
                found.append((f"coerce_dtype({TYPE_NAMES[spec.dtype]!r})", 0, coerce_failed, frame[name]))
            valid = pl.lit(True) if coerce_failed is None else pl.lit(~coerce_failed)
            if not spec.nullable:
                found.append((NOT_NULLABLE, 2, cast.select(pl.col(name).is_null() & valid).to_series(), None))
            for i, (check, fails) in enumerate(checks(name, spec)):
                found.append((check, 10 + i, cast.select(fails).to_series(), cast[name]))
            for check, rank, mask, values in found:
                count = int(mask.sum())
                if not count:
                    continue
                failed = self.failed.setdefault((name, check), _Failed(rank))
                failed.count += count
                room = SAMPLES - len(failed.samples)
                if room > 0:
                    rows = mask.arg_true()[:room].to_list()
                    failed.samples.extend((first + r, missing_value(spec) if values is None else shown(values[r]))
                                          for r in rows)

    def _hash(self, cast: pl.DataFrame) -> None:
        self.keyed = self.keyed and all(k in cast.columns for k in self.key)
        if self.keyed:
            self.keys.add(key_hashes(cast, self.key))

    def _duplicates(self, again: Again) -> tuple[int, dict[str, object]] | None:
        """``(rows whose key an earlier row holds, the first such row's key)``, from the candidates read again."""
        import numpy as np
        import polars as pl

        from mlassets.core.data.coerce import coerce
        from mlassets.core.data.schema_polars import shown

        candidates = self.keys.candidates()
        self.keys.close()
        if not len(candidates):
            return None
        parts, first = [], 0
        key_columns = {k: self.columns[k] for k in self.key}
        for batch, _ in again():
            lo, hi = np.searchsorted(candidates, [first, first + len(batch)])
            if hi > lo:
                rows = candidates[lo:hi] - first
                part = batch[rows] if isinstance(batch, pl.DataFrame) else batch.iloc[rows]
                parts.append(coerce(_polars(part).select(self.key), key_columns)[0])
            first += len(batch)
        keys = pl.concat(parts)
        repeated = keys.filter(~pl.struct(self.key).is_first_distinct())
        if not len(repeated):
            return None
        return len(repeated), {k: _plain(shown(repeated[k][0])) for k in self.key}

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
            n, example = duplicates
            parts.append(f"key {self.key} is not unique: {n} duplicate rows, e.g. {example}")
            failures += n * len(self.key)
        order = {name: i for i, name in enumerate(self.columns)}
        for column in sorted({c for c, _ in self.failed}, key=lambda c: order.get(c, len(order))):
            checks = {check: f for (c, check), f in self.failed.items() if c == column}
            check, failed = min(checks.items(), key=lambda kv: kv[1].rank)
            sample, rows = [value for _, value in failed.samples], [row for row, _ in failed.samples]
            where_rows = f"row{'s' if len(rows) > 1 else ''} {', '.join(map(str, rows))}"
            parts.append(f"column {column!r} failed {check}: {failed.count} rows, e.g. {sample} at {where_rows}")
            failures += sum(f.count for f in checks.values())
        if parts:
            return CheckOutcome("schema", False, where + "; ".join(parts), failures)
        return CheckOutcome("schema", True, f"{where}{self.rows} rows match the schema of {len(self.columns)} columns")


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
