"""The drift reference on a real local store: built once per champion data version and reused, read in batches of
the memory budget, and giving the reports of the whole frames in memory (every row fits the sample here)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from mlassets.core.config import MonitoringConfig, PipelineConfig
from mlassets.core.data import budget
from mlassets.core.data.ingest import ingest_partition
from mlassets.core.data.raw import derived_repo, partition_tables
from mlassets.core.data.store.local import LocalStore
from mlassets.core.features.split import partition_frame
from mlassets.core.features.store import BRANCH, read_split, write_features
from mlassets.core.monitor import reference_store
from mlassets.core.monitor.drift import drift_report
from mlassets.core.monitor.reference import Champion, new_rows, reference_rows
from tests.conftest import small_flights

MONTHS = ("2013-01", "2013-02")


@pytest.fixture(scope="module")
def cfg() -> PipelineConfig:
    cfg = small_flights()
    return dataclasses.replace(cfg, monitoring=MonitoringConfig(drift_min_rows=300))


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory, cfg: PipelineConfig) -> tuple[LocalStore, dict[str, str]]:
    store = LocalStore(tmp_path_factory.mktemp("drift-reference") / "store")
    commits = {}
    for month in MONTHS:
        commits[month] = ingest_partition(store, cfg, month, partition_tables(cfg, month)).data_version
    write_features(store, cfg, commits[MONTHS[0]])
    return store, commits


def _report(reference, new, cfg, commits):
    return drift_report(reference, new, cfg, data_version=commits[MONTHS[1]], new_partitions=[MONTHS[1]],
                        champion_version="1", reference_data_version=commits[MONTHS[0]])


def test_the_stored_reference_gives_the_report_of_the_whole_frames(cfg, stored) -> None:
    """Today's report (the train split and the new month read whole into pandas) is the report of the sampled,
    stored sides whenever they fit the sample: the same rows, statistics and verdicts."""
    store, commits = stored
    champion = Champion("1", commits[MONTHS[0]])
    whole_new = partition_frame(partition_tables(cfg, MONTHS[1]), cfg)
    expected = _report(read_split(store, cfg, commits[MONTHS[0]], "train"), whole_new, cfg, commits)
    reference, new = reference_rows(store, cfg, champion), new_rows(store, cfg, commits[MONTHS[1]], [MONTHS[1]])
    assert reference.total == len(reference.frame) and new.total == len(whole_new)
    got = _report(reference, new, cfg, commits)
    assert got == expected
    assert got.rows and {r.scope for r in got.rows} != {"all"}  # slice values were compared too


def test_the_reference_is_built_once_and_reused(cfg, stored, monkeypatch) -> None:
    store, commits = stored
    version = commits[MONTHS[0]]
    repo = derived_repo(cfg)
    first = reference_store.reference(store, cfg, version, limit=2000)
    commits_after_first = len(store.log(repo, BRANCH))
    key = reference_store.reference_key(store, cfg, version, 2000)
    assert f"{reference_store.PREFIX}{key}.parquet" in store.list_objects(repo, BRANCH, reference_store.PREFIX)

    def read_again(*args, **kwargs):
        raise AssertionError("the train split was read again")

    monkeypatch.setattr(reference_store, "split_tables", read_again)
    again = reference_store.reference(store, cfg, version, limit=2000)
    assert len(store.log(repo, BRANCH)) == commits_after_first  # nothing written the second time
    pd.testing.assert_frame_equal(again.frame, first.frame)
    assert (again.total, again.slices) == (first.total, first.slices)
    assert len(first.frame) == 2000 < first.total  # a sample of the split, of the size asked for
    with pytest.raises(AssertionError, match="read again"):  # another sample size is another reference
        reference_store.reference(store, cfg, version, limit=3000)


def test_reading_in_small_batches_gives_the_same_sample_and_counts(cfg, stored, monkeypatch) -> None:
    store, commits = stored
    version, new = commits[MONTHS[0]], commits[MONTHS[1]]
    one = reference_store.sample_split(store, cfg, version, limit=1500)
    one_new = new_rows(store, cfg, new, [MONTHS[1]], limit=1500)
    monkeypatch.setattr(budget, "MIN_ROWS", 16)
    monkeypatch.setattr(budget, "MAX_ROWS", 500)  # a batch holds at most 500 rows
    many = reference_store.sample_split(store, cfg, version, limit=1500)
    assert one.batches < many.batches and many.batches >= many.total // 500
    a, b = one.rows(), many.rows()
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert (a.total, a.slices) == (b.total, b.slices) and len(a.frame) == 1500
    many_new = new_rows(store, cfg, new, [MONTHS[1]], limit=1500)
    pd.testing.assert_frame_equal(many_new.frame, one_new.frame)
    assert (many_new.total, many_new.slices) == (one_new.total, one_new.slices)


def test_a_missing_feature_set_names_the_champions_version(cfg, stored) -> None:
    store, commits = stored
    with pytest.raises(ValueError, match=f"features of data version {commits[MONTHS[1]]}"):
        reference_rows(store, cfg, Champion("2", commits[MONTHS[1]]))
