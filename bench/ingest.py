"""Ingest at the speed of the tools it uses: ``mlassets ingest`` of every partition against a bare Polars scan.

``ingest_overhead``: ``mlassets example flights-scale`` data of ``$MLASSETS_BENCH_INGEST_ROWS`` rows (default
50,000,000, the size the goal was set at; below it the fixed cost of a Dagster run per partition, about 0.45 s on the
2-core machine, weighs more) in 12 monthly Parquet files (smoke: 3), ingested by ONE ``mlassets ingest`` command with a
``--partition`` per month, as a user runs it (the command's process: the files read and coerced, each partition's
summary, the store commit, validation with the key check, a Dagster run per partition), divided by a bare Polars lazy
scan of each file computing the same statistics (the schema check's counts, the key's duplicates, the target's count,
mean, standard deviation and quantiles). The bare scan runs before the command and after it; the faster is kept, so the
page cache favours neither. A command that fails, or lands fewer data versions than partitions, crashes the benchmark
instead of printing a figure.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.checks import expect, expect_equal
from bench.registry import Result, benchmark, smoke
from bench.scale import bare_exprs, partitions, run_stage
from bench.scale_commands import measured

ROWS_ENV = "MLASSETS_BENCH_INGEST_ROWS"
DEFAULT_ROWS = 50_000_000


def rows() -> int:
    """``$MLASSETS_BENCH_INGEST_ROWS``, else ``DEFAULT_ROWS``; 12,000 in smoke mode."""
    if smoke():
        return 12_000
    text = os.environ.get(ROWS_ENV, "").replace("_", "")
    if text and not text.isdigit():
        raise ValueError(f"${ROWS_ENV}: {text!r} is not a number of rows")
    return int(text) if text else DEFAULT_ROWS


def bare_scan(files: list[Path], cfg: Any) -> float:
    """Seconds of one Polars streaming query per file: the schema check's statistics and the target's summary;
    the generated data must be clean (every count 0)."""
    import polars as pl

    target = pl.col(cfg.dataset.target)
    summary = [target.count().alias("t:count"), target.mean().alias("t:mean"), target.std().alias("t:std"),
               *(target.quantile(q / 1000).alias(f"t:q{q}") for q in range(0, 1001, 100))]
    start = time.perf_counter()
    for file in files:
        row = pl.scan_parquet(file).select([*bare_exprs(cfg), *summary]).collect(engine="streaming").row(0, named=True)
        bad = {k: v for k, v in row.items() if not k.startswith("t:") and v}
        expect(not bad, f"{file.name}: the generated data is not clean: {bad}")
        expect(row["t:count"] > 0, f"{file.name}: no target values")
    return time.perf_counter() - start


@benchmark("ingest_overhead", goal="mlassets ingest of every partition (one command) / a bare Polars scan of the "
           "same statistics", better="lower", target=3.0)
def ingest_overhead() -> Result:
    from mlassets.core.config import load_config

    count = rows()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        work = Path(tmp)
        run_stage("generate", work, str(count), str(partitions()))
        config, home = work / "data" / "flights_scale.yaml", work / "home"
        home.mkdir()
        cfg = load_config(config)
        keys = cfg.dataset.partitions.keys
        files = [Path(cfg.dataset.path.replace("{partition}", k)) for k in keys]
        bare = bare_scan(files, cfg)
        args = ["ingest", "--config", str(config), *(a for k in keys for a in ("--partition", k))]
        command = measured(args, home, work / "ingest.log")
        bare = min(bare, bare_scan(files, cfg))
        landed = [line for line in (work / "ingest.log").read_text().splitlines() if ": data version " in line]
        expect_equal(len(landed), len(keys), "data versions the ingest landed")
    detail = (f"{count:,} rows in {len(keys)} Parquet files: mlassets ingest {command['seconds']:.1f} s "
              f"({command['peak_rss'] / (1 << 30):.2f} GiB tree peak), bare Polars scans {bare:.1f} s")
    return Result(command["seconds"] / bare, "x", detail)
