"""The files source streamed: a partition's tables written to local Parquet in batches of the memory budget.

What ``FilesSource.load`` gives in memory, the same rows and types, without ever holding a table: each batch is
read, cleaned, coerced and (for the main table with ``dataset.partition_column``) filtered, then appended to its
file. A delivery that does not parse fails after the file's last batch, naming its first bad row per column.

A table of one Parquet file that is already what coercion makes of it (the same columns in the declared order and
types, every value unchanged by coercion, no pandas metadata, row groups within a batch) is stored as the file's
own bytes, copied once before it is read: it is checked batch by batch against its coerced self, not re-encoded.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from mlassets.core.config import ColumnSpec
from mlassets.core.data.sources.files import FileRejected, FilesSource, in_partition
from mlassets.core.data.sources.files_parse import PARQUET, partition_files
from mlassets.core.data.sources.files_read import coerced_batches, iter_table

if TYPE_CHECKING:
    import pyarrow as pa

CELL_BYTES = 64  # a cell of a pandas frame at most (text as Python objects): what a batch's size is reckoned by


def arrow_type(dtype: str) -> pa.DataType:
    """The Arrow type a declared column is stored in when a batch gives no value to tell it by."""
    import pyarrow as pa

    types = {"int": pa.float64(), "float": pa.float64(), "str": pa.string(), "datetime": pa.timestamp("ns", "UTC")}
    return types[dtype]


def _as_is(copy: Path, columns: dict[str, ColumnSpec], budget_mb: int, target: str,
           partition: tuple[str, str, str]) -> bool:
    """Whether the Parquet file ``copy`` is already the table coercion would write, checked batch by batch (any
    difference, problem or row without a ``target``: False, and the file is written the usual way, which words
    the error). ``partition``: (column, key, pattern) when a partition column keeps rows: it must keep every one."""
    from mlassets.core.data.batches import open_parquet, rows_for

    try:
        reader = open_parquet(copy, str(copy))
    except ValueError:
        return False
    meta = reader.metadata
    size = rows_for(reader, budget_mb)
    if (not meta.num_rows or b"pandas" in (reader.schema_arrow.metadata or {})
            or any(meta.row_group(i).num_rows > size for i in range(meta.num_row_groups))):
        return False
    column, key, pattern = partition
    try:
        for raw, out, problems in coerced_batches(copy, columns, size):
            if problems or not out.equals(raw) or (target and out.column(target).null_count):
                return False
            if column and not in_partition(out.column(column).to_pandas(), key, pattern).all():
                return False
    except FileRejected:
        return False
    return True


def _copied_as_is(source: FilesSource, name: str, template: str, key: str, directory: Path,
                  columns: dict[str, ColumnSpec], target: str) -> Path | None:
    """The table's one Parquet file copied to ``directory/<name>.parquet`` if it is already what coercion writes
    (``_as_is``), else None (and no copy left)."""
    ds = source.ds
    files = partition_files(template, key)
    parquet = ds.format == "parquet" or (ds.format == "auto" and files[0].name.lower().endswith(PARQUET))
    if len(files) != 1 or not parquet:
        return None
    kept = (ds.partition_column, key, ds.partitions.pattern) if name == source.main_table else ("", "", "")
    copy = directory / f"{name}.parquet"
    shutil.copyfile(files[0], copy)  # read once it is ours: what is checked is what is stored
    if _as_is(copy, columns, ds.memory_budget_mb, target, kept):
        return copy
    copy.unlink()
    return None


def write_tables(source: FilesSource, key: str, directory: Path, override: str | None = None) -> dict[str, Path]:
    """``source.load(key, override)``, each table streamed into ``directory/<table>.parquet``; notes in
    ``source.notes``. (A sample is drawn from a whole partition: ``raw.stage_tables`` loads those instead.)"""
    import pyarrow as pa

    from mlassets.core.data.batches import TableWriter
    from mlassets.core.data.budget import batch_rows

    ds = source.ds
    source.notes = []
    columns = {source.main_table: ds.columns, **{n: s.columns for n, s in ds.tables.items()}}
    out = {}
    for name, template in source.templates(override).items():
        target = ds.target if name == source.main_table and not ds.drop_missing_target else ""
        as_is = _copied_as_is(source, name, template, key, directory, columns[name], target)
        if as_is is not None:
            out[name] = as_is
            continue
        rows = batch_rows(ds.memory_budget_mb, CELL_BYTES * max(1, len(columns[name])))
        hints = {c: arrow_type(spec.dtype) for c, spec in columns[name].items()}
        writer = TableWriter(directory / f"{name}.parquet", hints=hints)
        for batch in iter_table(template, key, ds.format, columns[name], source.notes, ds.missing_values, rows,
                                target, ds.memory_budget_mb):
            if name == source.main_table and ds.partition_column:
                keep = in_partition(batch.column(ds.partition_column).to_pandas(), key, ds.partitions.pattern)
                batch = batch.filter(pa.array(keep.to_numpy(dtype=bool)))
            writer.write(batch)
            del batch  # before the next batch is read
        if name == source.main_table and ds.partition_column and not writer.rows:
            raise FileRejected([f"partition {key!r}: no row of the delivered file(s) has {ds.partition_column} "
                                f"in {key}"])
        writer.close()
        out[name] = writer.path
    return out
