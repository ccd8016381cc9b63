"""A partition's table read from its files in batches, each coerced to the config's schema as an Arrow table.

Parquet is read batch by batch as Arrow; a CSV is read by pandas in chunks, every cell as text. Either is coerced by
the one engine (``coerce``, in Polars) through ``files_arrow``, which gives the batch back in Arrow. Either way a
file's problems (values that do not parse, rows without a target) are counted over the whole file and raised after
its last batch, naming the first row of each.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mlassets.core.config import ColumnSpec
from mlassets.core.data.sources.files_parse import (
    CSV_ROWS,
    PARQUET,
    FileRejected,
    Problems,
    clean_headers,
    clean_names,
    merge_problems,
    missing_target_line,
    partition_files,
    problem_lines,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


def _read(path: Path, fmt: str, missing: Sequence[str] = ("",), rows: int = 0,
          budget_mb: int = 0) -> Iterator[pa.Table | pd.DataFrame]:
    """The file's rows in batches of ``rows`` (0: all at once): Parquet as Arrow tables (in batches sized by its
    decoded row width when a ``budget_mb`` is given, as ``batches.rows_for``), a CSV as pandas frames of text."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mlassets.core.data.batches import rows_for

    name = path.name.lower()
    as_parquet = fmt == "parquet" or (fmt == "auto" and name.endswith(PARQUET))
    try:
        if as_parquet:
            reader = pq.ParquetFile(path)
            size = rows_for(reader, budget_mb) if budget_mb else rows or max(1, reader.metadata.num_rows)
            for batch in reader.iter_batches(batch_size=size):
                table = pa.Table.from_batches([batch])
                del batch
                yield table
                del table  # before the next batch is read
            if not reader.metadata.num_rows:
                yield reader.schema_arrow.empty_table()
            return
        sep = "\t" if name.endswith(".tsv") else ","
        yield from pd.read_csv(path, dtype=str, keep_default_na=False, na_values=list(missing) or [""],
                               encoding="utf-8-sig", sep=sep, chunksize=rows or CSV_ROWS)
    except pd.errors.EmptyDataError:
        raise FileRejected([f"{path}: the file is empty (no header, no rows)"]) from None
    except (ValueError, pa.ArrowException, OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise FileRejected([f"{path}: not readable as {'Parquet' if as_parquet else 'CSV'} ({exc})"]) from None


def _coerced(batch: pa.Table | pd.DataFrame, columns: Mapping[str, ColumnSpec], path: Path,
             first: int) -> tuple[pa.Table, Problems, list[str]]:
    """A batch with clean headers, coerced (rows numbered from ``first``); and all its column names, cleaned (the
    undeclared ones too, for the notes)."""
    import pyarrow as pa

    from mlassets.core.data.sources.files_arrow import coerce_table

    if isinstance(batch, pa.Table):
        clean = batch.rename_columns(clean_names(batch.column_names, path))
    else:
        clean = clean_headers(batch, path)
    out, problems = coerce_table(clean, columns, first)
    return out, problems, list(clean.column_names if isinstance(clean, pa.Table) else clean.columns)


def _first_missing(table: pa.Table, target: str) -> tuple[int, int]:
    """(the first row without a value in ``target``, rows without one) of a coerced batch."""
    import pyarrow.compute as pc

    column = table.column(target)
    if not column.null_count:
        return 0, 0
    return int(pc.index(pc.is_null(column), True).as_py()), column.null_count


def _notes(names: list[str], columns: Mapping[str, ColumnSpec], path: Path, notes: list[str]) -> None:
    extra = [c for c in names if c not in columns]
    if extra:
        notes.append(f"{path}: column(s) {', '.join(map(repr, extra))} not declared in the config; not stored")
    built = [c for c, spec in columns.items() if spec.from_columns and c in names]
    if built:
        notes.append(f"{path}: column(s) {', '.join(map(repr, built))} of the file replaced by the date built from "
                     "its columns (dataset.columns.<c>.from_columns)")


def iter_table(template: str, key: str, fmt: str, columns: Mapping[str, ColumnSpec],
               notes: list[str] | None = None, missing: Sequence[str] = ("",), rows: int = 0,
               target: str = "", budget_mb: int = 0) -> Iterator[pa.Table]:
    """One table of a partition from its file(s), coerced to ``columns``, in Arrow batches of ``rows`` (0: one per
    file; a Parquet file's sized by ``budget_mb`` when given); undeclared columns are noted, dropped. A CSV cell
    that is one of ``missing`` (exactly) is a missing value; a row without ``target`` (when given) fails the
    delivery. A file's problems are raised after its last batch, counted over the whole file."""
    for path in partition_files(template, key):
        seen, problems, absent = 0, {}, (0, 0)  # absent: (first row without a target, rows without one)
        for batch in _read(path, fmt, missing, rows, budget_mb):
            size = len(batch)
            out, found, names = _coerced(batch, columns, path, seen)
            del batch
            if not seen and notes is not None:
                _notes(names, columns, path, notes)
            problems = merge_problems(problems, found)
            if target and target in out.column_names:
                row, lost = _first_missing(out, target)
                if lost:
                    absent = (absent[0] if absent[1] else seen + row, absent[1] + lost)
            seen += size
            if not problems and not absent[1] and out.num_rows:
                yield out
        if not seen:
            raise FileRejected([f"{path}: no rows (only a header)"])
        first_row = 2 if not path.name.lower().endswith(PARQUET) else 1  # the line in a CSV, the row in Parquet
        if problems:
            raise FileRejected(problem_lines(problems, columns, path, first_row))
        if absent[1]:
            raise FileRejected([missing_target_line(target, path, absent[0] + first_row, absent[1])])


def coerced_batches(path: Path, columns: Mapping[str, ColumnSpec],
                    rows: int) -> Iterator[tuple[pa.Table, pa.Table, Problems]]:
    """A Parquet file's batches of ``rows`` rows, each as read (headers cleaned) and as coerced (``iter_table``'s
    steps, without its verdicts: the caller judges)."""
    seen = 0
    for batch in _read(path, "parquet", rows=rows):
        read = batch.rename_columns(clean_names(batch.column_names, path))
        out, problems, _ = _coerced(batch, columns, path, seen)
        seen += len(batch)
        yield read, out, problems


def read_table(template: str, key: str, fmt: str, columns: Mapping[str, ColumnSpec],
               notes: list[str] | None = None, missing: Sequence[str] = ("",), target: str = "") -> pd.DataFrame:
    """One table of a partition from its file(s), coerced to ``columns``, all in memory (``iter_table``)."""
    import pandas as pd

    frames = [table.to_pandas() for table in iter_table(template, key, fmt, columns, notes, missing, target=target)]
    return pd.concat(frames, ignore_index=True)
