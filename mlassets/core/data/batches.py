"""Parquet in batches: a store object scanned where it lies, a table written row group by row group.

Every out-of-core stage reads and writes through here, so a batch is always sized by the memory budget
(``budget.batch_rows``) and a file written from batches reads back as the frame the batches make together.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mlassets.core.data.budget import TYPED_COPIES, WORKING_COPIES, batch_rows
from mlassets.core.data.store import VersionedStore

SAMPLE_ROWS = 1024  # rows decoded to reckon a file's row width

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq


@contextlib.contextmanager
def object_file(store: VersionedStore, repo: str, ref: str, path: str) -> Iterator[Path]:
    """A local file holding the object: the stored file itself where the store keeps one (``local``), else a
    temporary copy (``lakefs``: the object is read whole once, then scanned from disk)."""
    local = getattr(store, "object_file", None)
    if local is not None:
        yield local(repo, ref, path)
        return
    with tempfile.TemporaryDirectory(prefix="mlassets-object-") as tmp:
        file = Path(tmp) / "object.parquet"
        file.write_bytes(store.read(repo, ref, path))
        yield file


def open_parquet(file: str | Path, name: str) -> pq.ParquetFile:
    """A Parquet file's reader; unreadable Parquet (truncated, not Parquet) is a ValueError naming ``name``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # no pre-buffering: a reader would keep what it read of every file open at once until it is closed
        return pq.ParquetFile(file, pre_buffer=False)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{name} is not readable Parquet: {exc}") from None


def bytes_per_row(reader: pq.ParquetFile, columns: list[str] | None = None) -> float:
    """Bytes of an average row of ``columns`` once decoded (Arrow), from the file's first rows."""
    if not reader.metadata.num_rows:
        return 0.0
    sample = next(reader.iter_batches(batch_size=SAMPLE_ROWS, columns=columns))
    return sample.nbytes / max(1, sample.num_rows)


def rows_for(reader: pq.ParquetFile, budget_mb: int, columns: list[str] | None = None,
             copies: int = WORKING_COPIES) -> int:
    """Rows per batch of ``reader`` (the selected ``columns``) within the budget."""
    return batch_rows(budget_mb, bytes_per_row(reader, columns), copies)


def iter_tables(reader: pq.ParquetFile, budget_mb: int, columns: list[str] | None = None,
                name: str = "") -> Iterator[pa.Table]:
    """The file's rows in order, one budget-sized table at a time (only ``columns``, when given)."""
    import pyarrow as pa

    if columns is not None:
        have = set(reader.schema_arrow.names)
        columns = [c for c in columns if c in have]
    try:
        for batch in reader.iter_batches(batch_size=rows_for(reader, budget_mb, columns), columns=columns):
            table = pa.Table.from_batches([batch])
            del batch
            yield table
            del table  # before the next batch is read: one batch at a time
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{name or reader} is not readable Parquet: {exc}") from None


def polars_batches(file: Path, reader: pq.ParquetFile, budget_mb: int,
                   columns: list[str] | None = None) -> Iterator[pl.DataFrame]:
    """The file's rows in order (``columns`` of them), read by Polars' own parallel reader one slice at a time (a
    slice reads only the row groups it needs; ``collect_batches`` reads ahead by more as files grow), in batches
    sized for Polars (``TYPED_COPIES``: validation keeps a batch in Polars, read, coerced, judged and hashed)."""
    import polars as pl

    if columns is not None:
        have = set(reader.schema_arrow.names)
        columns = [c for c in columns if c in have] or reader.schema_arrow.names[:1]  # a frame has rows by a column
    rows, step = reader.metadata.num_rows, rows_for(reader, budget_mb, columns, TYPED_COPIES)
    frame = pl.scan_parquet(file)
    if columns is not None:
        frame = frame.select(columns)
    try:
        for start in range(0, rows, step):
            yield frame.slice(start, step).collect()
    except pl.exceptions.PolarsError as exc:
        raise ValueError(f"{file} is not readable Parquet: {exc}") from None


def iter_frames(reader: pq.ParquetFile, budget_mb: int, columns: list[str] | None = None,
                name: str = "") -> Iterator[pd.DataFrame]:
    """``iter_tables`` as pandas frames (dtypes as ``pd.read_parquet`` gives them), each indexed from 0."""
    for table in iter_tables(reader, budget_mb, columns, name):
        frame = table.to_pandas()
        del table
        yield frame
        del frame


class TableWriter:
    """Batches (pandas frames or Arrow tables) into one Parquet file with one schema.

    The schema is the first batch's; a column it holds no value of (typed null) takes its type from ``hints`` (a
    column's type in the table it came from), else string. ``row_group_rows``: every row group holds exactly that
    many rows but the last; without it, each batch is a row group.
    """

    def __init__(self, path: str | Path, hints: Mapping[str, pa.DataType] | None = None,
                 row_group_rows: int | None = None) -> None:
        self.path, self.hints, self.row_group_rows = Path(path), dict(hints or {}), row_group_rows
        self.rows = 0
        self.schema: pa.Schema | None = None
        self._writer: pq.ParquetWriter | None = None
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def _table(self, batch: pd.DataFrame | pa.Table) -> pa.Table:
        import pyarrow as pa

        table = batch if isinstance(batch, pa.Table) else pa.Table.from_pandas(batch, preserve_index=False)
        if self.schema is None:
            fields = [f.with_type(self.hints.get(f.name, pa.string())) if pa.types.is_null(f.type) else f
                      for f in table.schema]
            self.schema = pa.schema(fields, metadata=table.schema.metadata)
        if table.schema.names != self.schema.names:
            raise ValueError(f"{self.path.name}: a batch has columns {table.schema.names}, the file "
                             f"{self.schema.names}")
        return table if table.schema.equals(self.schema, check_metadata=True) else table.cast(self.schema)

    def write(self, batch: pd.DataFrame | pa.Table) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = self._table(batch)
        if not table.num_rows:  # it set the schema, if it was the first
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, self.schema)
        self.rows += table.num_rows
        if self.row_group_rows is None:
            self._writer.write_table(table)
            return
        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows >= self.row_group_rows:
            whole = pa.concat_tables(self._pending)
            full = (whole.num_rows // self.row_group_rows) * self.row_group_rows
            self._writer.write_table(whole.slice(0, full), row_group_size=self.row_group_rows)
            rest = whole.slice(full)
            self._pending, self._pending_rows = ([rest] if rest.num_rows else []), rest.num_rows

    def close(self, empty: pa.Schema | None = None) -> int:
        """Finish the file (with no rows written: an empty file of the first batch's schema, else of ``empty``);
        return the rows written."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._writer is None:
            self.schema = self.schema or empty
            if self.schema is None:
                raise ValueError(f"{self.path.name}: no batch was written and no schema given")
            self._writer = pq.ParquetWriter(self.path, self.schema)
        if self._pending:
            self._writer.write_table(pa.concat_tables(self._pending), row_group_size=self.row_group_rows)
            self._pending, self._pending_rows = [], 0
        self._writer.close()
        return self.rows
