"""The bounded sample drift compares: the same rows whatever the batches, every row when they fit, exact counts,
and a scope whose sampled rows are too few is skipped, not judged on noise."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import MonitoringConfig, load_config, shipped_configs
from mlassets.core.monitor.drift import compare, drift_report
from mlassets.core.monitor.sample import Rows, RowSample


def frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"carrier": rng.choice(["AA", "UA", "DL"], n, p=[0.6, 0.3, 0.1]),
                         "distance": rng.gamma(4.0, 250.0, n), "arr_delay": rng.normal(5.0, 30.0, n)})


def fed(rows: pd.DataFrame, sizes: list[int], limit: int) -> RowSample:
    sample, start = RowSample(["carrier"], limit), 0
    for size in sizes:
        sample.add(rows.iloc[start:start + size])
        start += size
    assert start == len(rows)
    return sample


def test_the_sample_is_the_same_rows_whatever_the_batches() -> None:
    rows = frame(10_000)
    one = fed(rows, [10_000], 1000).rows()
    rng = np.random.default_rng(5)
    cuts = np.sort(rng.choice(np.arange(1, 10_000), 40, replace=False))
    many = fed(rows, list(np.diff([0, *cuts, 10_000])), 1000)
    assert many.batches == 41
    pd.testing.assert_frame_equal(one.frame, many.rows().frame)
    assert len(one.frame) == 1000 and one.total == 10_000
    assert one.slices == {"carrier": rows["carrier"].value_counts().to_dict()}  # exact, not sampled


def test_rows_that_fit_are_all_kept_in_order() -> None:
    rows = frame(3000)
    sample = fed(rows, [1000, 1000, 1000], 5000).rows()
    pd.testing.assert_frame_equal(sample.frame, rows.reset_index(drop=True))


def test_the_sample_is_uniform() -> None:
    rows = frame(200_000, seed=1).assign(position=np.arange(200_000))
    sample = fed(rows, [50_000] * 4, 20_000).rows().frame
    assert sample["position"].is_monotonic_increasing  # in stream order
    assert abs(sample["position"].mean() / 200_000 - 0.5) < 0.01  # from every part of the stream
    shares = sample["carrier"].value_counts(normalize=True)
    assert shares["AA"] == pytest.approx(0.6, abs=0.015) and shares["DL"] == pytest.approx(0.1, abs=0.01)


def test_a_scope_with_too_few_sampled_rows_is_skipped() -> None:
    cfg = load_config(shipped_configs()["flights"])
    cfg = dataclasses.replace(
        cfg, features=dataclasses.replace(cfg.features, categorical=[], numeric=["distance"]),
        dataset=dataclasses.replace(cfg.dataset, slices=["carrier"]), monitoring=MonitoringConfig(drift_min_rows=300))
    reference = fed(frame(40_000, 2), [40_000], 2000).rows()  # DL: ~4000 rows, ~200 of them sampled
    new = Rows.whole(frame(5000, 3), ["carrier"])
    rows, skipped = compare(reference, new, cfg)
    dl = next(s for s in skipped if s.startswith("slice carrier=DL:"))
    assert f"{reference.count('carrier', 'DL')} reference rows, of which" in dl and "sampled (fewer than 300)" in dl
    assert {r.scope for r in rows} == {"all", "slice carrier=AA", "slice carrier=UA"}
    every = next(r for r in rows if r.scope == "all")
    assert (every.reference_rows, every.new_rows) == (40_000, 5000)  # the counts of all rows, not of the sample
    report = drift_report(reference, new, cfg, data_version="b" * 40, new_partitions=["p"], champion_version="1",
                          reference_data_version="a" * 40)
    assert report.reference_rows == 40_000 and not report.drifted  # the same distribution, sampled


def _peak(batches: int) -> int:
    """tracemalloc's peak while feeding ``batches`` batches of 5,000 rows into a 2,000-row sample (batches made
    before the count starts are left out: the caller's)."""
    import tracemalloc

    rows = frame(5000, 4)
    sample = RowSample(["carrier"], 2000)
    tracemalloc.start()
    try:
        for _ in range(batches):
            sample.add(rows)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_sample_does_not_grow_with_the_rows() -> None:
    few, many = _peak(10), _peak(80)
    assert many < 1.5 * few, (few, many)  # 8x the rows: the same sample and one batch at a time
