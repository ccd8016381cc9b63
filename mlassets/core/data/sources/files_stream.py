"""The files source streamed: a partition's tables written to local Parquet in batches of the memory budget.

What ``FilesSource.load`` gives in memory, the same rows and types, without ever holding a table: each batch is
read, cleaned, coerced and (for the main table with ``dataset.partition_column``) filtered, then appended to its
file. A delivery that does not parse fails after the file's last batch, naming its first bad row per column.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mlassets.core.data.sources.files import FileRejected, FilesSource, in_partition
from mlassets.core.data.sources.files_read import iter_table

if TYPE_CHECKING:
    import pyarrow as pa

CELL_BYTES = 64  # a cell of a pandas frame at most (text as Python objects): what a batch's size is reckoned by


def arrow_type(dtype: str) -> pa.DataType:
    """The Arrow type a declared column is stored in when a batch gives no value to tell it by."""
    import pyarrow as pa

    types = {"int": pa.float64(), "float": pa.float64(), "str": pa.string(), "datetime": pa.timestamp("ns", "UTC")}
    return types[dtype]


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
        rows = batch_rows(ds.memory_budget_mb, CELL_BYTES * max(1, len(columns[name])))
        hints = {c: arrow_type(spec.dtype) for c, spec in columns[name].items()}
        writer = TableWriter(directory / f"{name}.parquet", hints=hints)
        target = ds.target if name == source.main_table and not ds.drop_missing_target else ""
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
