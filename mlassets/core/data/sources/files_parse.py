"""The files source's parts: a partition's files found, headers cleaned, and a delivery's problems (values that do
not parse: ``files_arrow``) worded with file, column, row and value."""

from __future__ import annotations

import glob
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlassets.core.config import ColumnSpec
from mlassets.core.data.dates import describe_format
from mlassets.core.data.sources.base import quoted

if TYPE_CHECKING:
    import pandas as pd

PARQUET = (".parquet", ".pq")
CSV = (".csv", ".csv.gz", ".tsv", ".txt")
CSV_ROWS = 1 << 18  # rows of a CSV read at once when no batch size is given
Problems = dict[str, tuple[Any, object, int]]  # column -> (first bad row, its value, bad rows)


class FileRejected(ValueError):
    """A delivered file cannot be read into the config's schema; one line per problem, nothing was stored."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


def partition_files(template: str, key: str) -> list[Path]:
    """The files of one partition: the template with ``{partition}`` filled in, a folder, or a glob."""
    where = template.replace("{partition}", key)
    path = Path(where)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(PARQUET + CSV))
    elif glob.has_magic(where):
        files = sorted(Path(p) for p in glob.glob(where) if Path(p).is_file())
    else:
        files = [path] if path.is_file() else []
    if not files:
        raise FileRejected([f"partition {key!r}: no file at {where}"])
    return files


def clean_names(names: list[object], path: Path) -> list[str]:
    """Column names without a byte-order mark or surrounding spaces; two that collide fail, naming both."""
    clean = [str(c).replace("\ufeff", "").strip() for c in names]
    twice = sorted({n for n in clean if clean.count(n) > 1})
    if twice:
        raise FileRejected([f"{path}: column {twice[0]!r} appears twice (after trimming spaces from the headers)"])
    return clean


def clean_headers(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``clean_names`` of a frame's columns."""
    return frame.set_axis(clean_names(list(frame.columns), path), axis=1)


def merge_problems(seen: Problems, more: Problems) -> Problems:
    """Problems of a file's batches so far and of its next batch: the first row of each column stays first."""
    out = dict(seen)
    for name, (row, value, n) in more.items():
        out[name] = (out[name][0], out[name][1], out[name][2] + n) if name in out else (row, value, n)
    return out


def problem_lines(problems: Problems, columns: Mapping[str, ColumnSpec], path: Path, first_row: int) -> list[str]:
    lines = []
    for name in [c for c in columns if c in problems]:
        row, value, n = problems[name]
        spec = columns[name]
        more = f" (and {n - 1} more rows)" if n > 1 else ""
        if spec.from_columns:
            lines.append(f"{path}: column {name!r} (built from {', '.join(spec.from_columns.values())}), row "
                         f"{row + first_row}: {value} is not a date{more}")
            continue
        what = {"int": "an integer", "float": "a number",
                "datetime": f"a date or time {describe_format(spec.format)}"}[spec.dtype]
        lines.append(f"{path}: column {name!r}, row {row + first_row}: {quoted(value)} is not {what}{more}")
    return lines


def missing_target_line(target: str, path: Path, row: int, n: int) -> str:
    """A row without a target fails the delivery, naming the file and the row (``drop_missing_target`` drops
    such rows instead)."""
    more = f" (and {n - 1} more rows)" if n > 1 else ""
    return (f"{path}: column {target!r}, row {row}: the target is missing{more}; set dataset.drop_missing_target: "
            "true to drop rows without a target (they are counted)")
