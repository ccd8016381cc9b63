"""The derived repository: per-partition frames cached by content, so a new version computes only what changed."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from mlassets.core.config import PipelineConfig
from mlassets.core.data.ingest import ingest_partition
from mlassets.core.data.raw import WATCHED_BRANCH, derived_repo, partition_tables, read_version
from mlassets.core.data.sources import nycflights13
from mlassets.core.data.store.local import LocalStore
from mlassets.core.features import split as features
from mlassets.core.features.split import SPLITS, prepare_features
from mlassets.core.features.store import (
    CACHE,
    export_splits,
    manifest_path,
    read_manifest,
    read_split,
    write_features,
)
from tests.conftest import small_flights

MONTHS = ("2013-01", "2013-02", "2013-03")


@pytest.fixture(scope="module")
def cfg() -> PipelineConfig:
    return small_flights()


@pytest.fixture(scope="module")
def tables(cfg: PipelineConfig) -> dict[str, dict[str, pd.DataFrame]]:
    return {m: partition_tables(cfg, m) for m in MONTHS}


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows of every frame the source builds (one entry per call)."""
    calls: list[int] = []
    real = nycflights13.build_frame

    def counting(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
        calls.append(len(tables["flights"]))
        return real(tables)

    monkeypatch.setattr(nycflights13, "build_frame", counting)
    return calls


def _assert_splits_equal_a_full_rebuild(store: LocalStore, cfg: PipelineConfig, version: str) -> None:
    expected = prepare_features(read_version(store, cfg, version), cfg)
    for split in SPLITS:
        pd.testing.assert_frame_equal(read_split(store, cfg, version, split), expected[split], check_exact=True)


def test_write_features_round_trip(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    for month in MONTHS[:2]:
        ingest_partition(store, cfg, month, tables[month])
    version = store.resolve("flights", WATCHED_BRANCH)
    raw_log = [c.id for c in store.log("flights", WATCHED_BRANCH)]

    fs = write_features(store, cfg, version, metadata={"run_id": "r1"})

    assert store.resolve("flights", WATCHED_BRANCH) == version  # the watched repository is untouched
    assert [c.id for c in store.log("flights", WATCHED_BRANCH)] == raw_log
    assert derived_repo(cfg) == "flights-derived"
    assert store.list_repos() == ["flights", "flights-derived"]
    assert store.resolve("flights-derived", "main") == fs.commit
    meta = store.get_commit("flights-derived", fs.commit).metadata
    assert meta["data_version"] == version and meta["run_id"] == "r1"
    assert meta["partitions_computed"] == "2013-01,2013-02"
    objects = store.list_objects("flights-derived", fs.commit)
    assert manifest_path(version) in objects
    assert len([p for p in objects if p.startswith(CACHE)]) == 4  # a frame and a day histogram per month
    assert fs.computed == list(MONTHS[:2]) and fs.reused == []
    assert fs.manifest_uri == f"local://flights-derived/{fs.commit}/{manifest_path(version)}"
    expected = prepare_features(read_version(store, cfg, version), cfg)
    assert fs.rows == {s: len(expected[s]) for s in SPLITS}
    manifest = read_manifest(store, cfg, version)
    assert manifest["split"]["bounds"] == {"train": "2012-02-15", "validation": "2013-02-15", "holdout": "2013-02-22"}
    assert [p["partition"] for p in manifest["partitions"]] == list(MONTHS[:2])
    assert manifest["partitions"][0]["splits"] == {"train": manifest["partitions"][0]["rows"], "validation": 0,
                                                   "holdout": 0}
    _assert_splits_equal_a_full_rebuild(store, cfg, version)


def test_new_month_recomputes_only_that_month(store: LocalStore, cfg: PipelineConfig, tables, builds) -> None:
    for month in MONTHS[:2]:
        ingest_partition(store, cfg, month, tables[month])
    first = write_features(store, cfg, store.resolve("flights", WATCHED_BRANCH))
    assert builds == [len(tables[m]["flights"]) for m in MONTHS[:2]]
    before = {s: read_split(store, cfg, first.data_version, s) for s in SPLITS}
    builds.clear()

    version = ingest_partition(store, cfg, MONTHS[2], tables[MONTHS[2]]).data_version
    second = write_features(store, cfg, version)

    assert builds == [len(tables[MONTHS[2]]["flights"])]  # one build, of March's rows only
    assert second.computed == [MONTHS[2]] and second.reused == list(MONTHS[:2])
    _assert_splits_equal_a_full_rebuild(store, cfg, version)
    assert read_split(store, cfg, version, "holdout")["month"].eq(3).all()
    for split in SPLITS:  # the earlier version's features read back unchanged
        pd.testing.assert_frame_equal(read_split(store, cfg, first.data_version, split), before[split])


def test_changed_month_recomputes_only_that_month(store: LocalStore, cfg: PipelineConfig, tables, builds) -> None:
    for month in MONTHS:
        ingest_partition(store, cfg, month, tables[month])
    write_features(store, cfg, store.resolve("flights", WATCHED_BRANCH))
    builds.clear()
    february = tables["2013-02"]["flights"].copy()
    february.loc[5, "arr_delay"] = february.loc[5, "arr_delay"] + 1  # a late correction of one row

    version = ingest_partition(store, cfg, "2013-02", {**tables["2013-02"], "flights": february}).data_version
    result = write_features(store, cfg, version)

    assert builds == [len(february)]
    assert result.computed == ["2013-02"] and result.reused == ["2013-01", "2013-03"]
    _assert_splits_equal_a_full_rebuild(store, cfg, version)


def test_from_scratch_and_a_new_code_version_build_every_month(
    store: LocalStore, cfg: PipelineConfig, tables, builds, monkeypatch
) -> None:
    for month in MONTHS[:2]:
        ingest_partition(store, cfg, month, tables[month])
    version = store.resolve("flights", WATCHED_BRANCH)
    first = write_features(store, cfg, version)
    again = write_features(store, cfg, version)
    assert again.computed == [] and len(builds) == 2
    assert write_features(store, cfg, version, reuse=False).computed == list(MONTHS[:2])
    monkeypatch.setattr(features, "FEATURE_CODE_VERSION", "next")
    monkeypatch.setattr("mlassets.core.features.store.FEATURE_CODE_VERSION", "next")
    assert write_features(store, cfg, version).computed == list(MONTHS[:2])
    assert json.loads(store.read("flights-derived", "main", manifest_path(version)))["feature_code_version"] == "next"
    assert len(builds) == 6 and first.rows == again.rows


def test_export_splits_writes_what_read_split_reads(store: LocalStore, cfg: PipelineConfig, tables, tmp_path) -> None:
    for month in MONTHS[:2]:
        ingest_partition(store, cfg, month, tables[month])
    version = store.resolve("flights", WATCHED_BRANCH)
    write_features(store, cfg, version)
    files = export_splits(store, cfg, version, tmp_path / "out", ("train", "validation"))
    assert sorted(files) == ["train", "validation"]
    for split, path in files.items():
        pd.testing.assert_frame_equal(pd.read_parquet(path), read_split(store, cfg, version, split))
    with pytest.raises(ValueError, match="'test'"):
        read_split(store, cfg, version, "test")


def test_too_few_days_names_the_empty_split(store: LocalStore, cfg: PipelineConfig, tables) -> None:
    flights = tables["2013-01"]["flights"]
    few = {**tables["2013-01"], "flights": flights[flights["day"] <= 10].reset_index(drop=True)}
    assert few["flights"]["day"].nunique() == 10
    ingest_partition(store, cfg, "2013-01", few, validate=False)
    with pytest.raises(ValueError, match="the train split is empty"):
        write_features(store, cfg, store.resolve("flights", WATCHED_BRANCH))
