"""Versioned store (local backend): storage growth, re-commit cost and reads at old commits.

The data is 12 monthly partitions of flights-like rows written as Parquet (~1.5 MB each, deterministic
numpy data, so compression and dedup behave as on real files), ingested through ``transaction``, the way
``ingest_partition`` writes.
"""

from __future__ import annotations

import io
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.checks import expect, expect_equal
from bench.registry import Result, benchmark, toy
from mlassets.core.data.store.local import LocalStore

MONTHS = [f"2013-{m:02d}" for m in range(1, 13)]
ROWS = 150_000
REPEATS = 7
ROUNDS = 15


def partition(month: str, seed: int = 0) -> bytes:
    """One month of flights-like rows as Parquet bytes (deterministic in ``month`` and ``seed``)."""
    rng, rows = np.random.default_rng([int(month[-2:]), seed]), toy(ROWS, 2_000)
    table = pa.table({
        "day": rng.integers(1, 29, rows, dtype=np.int8),
        "sched_dep_time": rng.integers(500, 2359, rows, dtype=np.int16),
        "carrier": rng.choice(np.array(["UA", "AA", "B6", "DL", "EV", "MQ", "US", "WN"]), rows),
        "flight": rng.integers(1, 8500, rows, dtype=np.int32),
        "distance": rng.gamma(2.0, 500.0, rows).round(0),
        "arr_delay": rng.normal(7.0, 40.0, rows).round(0),
        "temp": rng.normal(55.0, 17.0, rows).round(1),
    })
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy")
    return buf.getvalue()


def store_bytes(root: Path) -> int:
    """Everything the store keeps on disk: objects, sqlite database and its WAL."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def ingest(store: LocalStore, parts: dict[str, bytes], message: str) -> str:
    with store.transaction("flights", "main", message) as tx:
        for month, data in parts.items():
            tx.put(f"raw/flights/{month}.parquet", data)
    expect(tx.commit is not None, f"commit {message!r} made no commit")
    return tx.commit.id


def expect_stored(store: LocalStore, ref: str, parts: dict[str, bytes], what: str) -> None:
    """Every partition of ``parts`` reads back, byte for byte, at ``ref``."""
    for month, data in parts.items():
        expect(store.read("flights", ref, f"raw/flights/{month}.parquet") == data, f"{what}: {month} differs at {ref}")


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def fresh_store(tmp: str, name: str) -> tuple[LocalStore, Path]:
    root = Path(tmp) / name
    store = LocalStore(root)
    store.create_repo("flights")
    return store, root


@benchmark("store_one_partition_growth", goal="new bytes stored when 1 of 12 partitions changes / its bytes",
           better="lower", target=1.05)
def store_one_partition_growth() -> Result:
    parts = {m: partition(m) for m in MONTHS}
    changed = partition(MONTHS[6], seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        store, root = fresh_store(tmp, "store")
        ingest(store, parts, "12 months")
        before = store_bytes(root)
        ingest(store, {**parts, MONTHS[6]: changed}, "2013-07 corrected")
        grown = store_bytes(root) - before
        expect_stored(store, "main", {**parts, MONTHS[6]: changed}, "the corrected version")
    total = sum(map(len, parts.values()))
    return Result(grown / len(changed), "x", f"{grown:,} B new for a {len(changed):,} B partition "
                                             f"(all 12 re-put; {total / 1e6:.1f} MB in total)")


@benchmark("store_recommit_unchanged", goal="time to commit unchanged data again / time of the first commit",
           better="lower", target=0.10)
def store_recommit_unchanged() -> Result:
    parts = {m: partition(m) for m in MONTHS}
    firsts, agains = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(toy(REPEATS, 2)):
            store, _ = fresh_store(tmp, f"store-{i}")
            firsts.append(timed(lambda s=store: ingest(s, parts, "first")))
            head = store.resolve("flights", "main")
            agains.append(timed(lambda s=store: ingest(s, parts, "again")))
            expect_equal(store.resolve("flights", "main"), head, "head after committing unchanged data")
        expect_stored(store, "main", parts, "the re-committed version")
    first, again = statistics.median(firsts), statistics.median(agains)
    size = sum(map(len, parts.values())) / 1e6
    return Result(again / first, "x", f"first {first * 1e3:.0f} ms, again {again * 1e3:.1f} ms "
                                      f"({size:.1f} MB, median of {len(firsts)})")


@benchmark("store_read_old_commit", goal="read of 12 partitions at the oldest of 12 commits / at head",
           better="lower", target=1.2)
def store_read_old_commit() -> Result:
    parts = {m: partition(m) for m in MONTHS}
    with tempfile.TemporaryDirectory() as tmp:
        store, _ = fresh_store(tmp, "store")
        oldest = ingest(store, parts, "12 months")
        for seed, month in enumerate(MONTHS[1:], start=1):  # 11 later commits, each correcting one month
            ingest(store, {month: partition(month, seed)}, f"{month} corrected")
        paths = store.list_objects("flights", oldest)
        expect_equal(len(paths), len(MONTHS), "partitions at the oldest commit")
        expect_stored(store, oldest, parts, "the oldest commit")

        def read_all(ref: str) -> None:
            for path in paths:
                store.read("flights", ref, path)

        read_all("main")  # warm the page cache for both
        at_head, at_old = [], []
        for _ in range(toy(ROUNDS, 2)):  # interleaved, so drift hits both sides alike
            at_head.append(timed(lambda: read_all("main")))
            at_old.append(timed(lambda: read_all(oldest)))
        head_s, old_s = statistics.median(at_head), statistics.median(at_old)
    return Result(old_s / head_s, "x", f"old {old_s * 1e3:.1f} ms, head {head_s * 1e3:.1f} ms "
                                       f"(12 commits deep, median of {len(at_head)})")
