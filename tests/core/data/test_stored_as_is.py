"""A typed Parquet delivery is stored as its own bytes; any file coercion would change is re-encoded, and both read
back as the same table. A partition's summary (counted in Arrow) says what the pandas reckoning says."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from mlassets.core.config import PipelineConfig, load_config
from mlassets.core.data.raw import main_table, stage_tables
from mlassets.core.data.sources.files import FileRejected
from mlassets.core.data.sources.files_read import iter_table
from mlassets.core.data.summary import PartitionSummary, summarize_reader
from mlassets.examples.flights_scale import write_example

MONTH = "2013-01"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[PipelineConfig, Path]:
    config = write_example(tmp_path_factory.mktemp("scale"), rows=12_000, partitions=1)
    return load_config(config), config.parent / "data" / f"flights_{MONTH}.parquet"


def _staged(cfg: PipelineConfig, delivered: Path, tmp: Path) -> Path:
    out = tmp / "staged"
    out.mkdir()
    return stage_tables(cfg, MONTH, out, delivered)[main_table(cfg)]


def _coerced(cfg: PipelineConfig, file: Path) -> pa.Table:
    """The table the usual path makes of ``file`` (read and coerced batch by batch)."""
    return pa.concat_tables(iter_table(str(file), MONTH, "parquet", cfg.dataset.columns, target=cfg.dataset.target))


def test_a_typed_parquet_file_is_stored_as_its_own_bytes(example, tmp_path: Path) -> None:
    cfg, source = example
    staged = _staged(cfg, source, tmp_path)
    assert staged.read_bytes() == source.read_bytes()
    assert pq.read_table(staged).equals(_coerced(cfg, source))


def _variant(source: Path, tmp: Path, name: str, change) -> Path:
    out = tmp / f"{name}.parquet"
    table = change(pq.read_table(source))
    if isinstance(table, pd.DataFrame):
        table.to_parquet(out, index=False)  # pandas metadata
    else:
        pq.write_table(table, out, row_group_size=4096)
    return out


def _padded(table: pa.Table) -> pa.Table:
    i = table.column_names.index("carrier")
    return table.set_column(i, "carrier", pc.binary_join_element_wise(table.column("carrier"), " ", ""))


def _nan_delay(table: pa.Table) -> pa.Table:
    i = table.column_names.index("arr_delay")
    delay = table.column("arr_delay").to_numpy().copy()
    delay[3] = np.nan
    return table.set_column(i, "arr_delay", pa.array(delay))


VARIANTS = {
    "pandas_metadata": lambda t: t.to_pandas(),
    "padded_text": _padded,
    "nan_in_the_target": _nan_delay,
    "columns_reordered": lambda t: t.select(t.column_names[::-1]),
    "undeclared_column": lambda t: t.append_column("extra", pa.array(np.arange(t.num_rows))),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_file_that_coercion_changes_is_re_encoded_to_what_coercion_gives(example, tmp_path: Path,
                                                                           name: str) -> None:
    cfg, source = example
    delivered = _variant(source, tmp_path, name, VARIANTS[name])
    if name == "nan_in_the_target":  # NaN is a missing target: refused by the usual path, naming the row
        with pytest.raises(FileRejected, match="arr_delay"):
            _staged(cfg, delivered, tmp_path)
        return
    staged = _staged(cfg, delivered, tmp_path)
    assert staged.read_bytes() != delivered.read_bytes()
    stored = pq.read_table(staged)
    assert stored.equals(_coerced(cfg, delivered))
    assert stored.column_names == [c for c in cfg.dataset.columns if c in stored.column_names]
    if name == "padded_text":
        assert not any(v.endswith(" ") for v in stored.column("carrier").to_pylist())
    assert b"pandas" not in (stored.schema.metadata or {})


def _frame_summary(table: pa.Table, target: str, time: str) -> PartitionSummary:
    return PartitionSummary.of_frame(MONTH, table.to_pandas(), target, time)


@pytest.mark.parametrize("tz", [None, "UTC", "America/New_York"])
def test_the_summary_counted_in_arrow_is_the_one_pandas_counts(tmp_path: Path, tz: str | None) -> None:
    rng = np.random.default_rng(7)
    n = 20_000
    start = dt.datetime(1969, 12, 1, 5)
    times = pa.array([start + dt.timedelta(minutes=int(m)) for m in rng.integers(0, 90 * 24 * 60, n)],
                     pa.timestamp("us", tz))
    times = pc.if_else(pa.array(rng.random(n) < 0.01), pa.scalar(None, times.type), times)
    ints = pa.array(np.where(rng.random(n) < 0.05, None, rng.integers(-50, 50, n)).tolist(), pa.int64())
    floats = rng.normal(10, 3, n)
    floats[rng.random(n) < 0.02] = np.nan
    big = pa.array([2**53 + 1 + i for i in range(n)], pa.int64())  # beyond float64's integers: rounded, not refused
    table = pa.table({"when": times, "ints": ints, "big": big, "floats": pa.array(floats),
                      "text": pa.array([str(v) for v in rng.integers(0, 9, n)])})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=3000)
    for target in ("ints", "big", "floats", "text"):
        got = summarize_reader(MONTH, pq.ParquetFile(path), target, 1, "when")
        want = _frame_summary(table, target, "when")
        assert (got.rows, got.days, got.target.count) == (want.rows, want.days, want.target.count)
        assert got.days > 80
        assert math.isclose(got.target.mean, want.target.mean, rel_tol=1e-12)
        assert got.target.quantiles == want.target.quantiles
