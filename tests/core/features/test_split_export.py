"""Features built and splits exported in batches: the same rows, in the same order, with the same values as the
whole version in memory, whatever the batch size; exported splits are Parquet in row groups of a bounded size."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlassets.core.config import PipelineConfig
from mlassets.core.data import budget
from mlassets.core.data.ingest import ingest_partition
from mlassets.core.data.raw import partition_tables, read_version
from mlassets.core.data.store.local import LocalStore
from mlassets.core.features import store as feature_store
from mlassets.core.features.split import SPLITS, prepare_features
from mlassets.core.features.store import export_splits, read_split, write_features
from tests.conftest import small_flights

MONTHS = ("2013-01", "2013-02")
ROW_GROUP = 1000


@pytest.fixture(scope="module")
def cfg() -> PipelineConfig:
    return small_flights()


@pytest.fixture(scope="module")
def version(tmp_path_factory: pytest.TempPathFactory, cfg: PipelineConfig) -> tuple[LocalStore, str]:
    store = LocalStore(tmp_path_factory.mktemp("export") / "store")
    for month in MONTHS:
        head = ingest_partition(store, cfg, month, partition_tables(cfg, month)).data_version
    return store, head


def test_small_batches_build_and_export_the_whole_versions_rows(tmp_path: Path, monkeypatch, cfg, version) -> None:
    store, head = version
    expected = prepare_features(read_version(store, cfg, head), cfg)  # the whole version in memory, at once
    monkeypatch.setattr(budget, "MAX_ROWS", 1500)  # every partition is several batches
    monkeypatch.setattr(feature_store, "SPLIT_ROW_GROUP_ROWS", ROW_GROUP)
    built = write_features(store, cfg, head, reuse=False)
    assert built.computed == list(MONTHS)
    files = export_splits(store, cfg, head, tmp_path, SPLITS)
    for split in SPLITS:
        pd.testing.assert_frame_equal(pd.read_parquet(files[split]), expected[split], check_exact=True)
        pd.testing.assert_frame_equal(read_split(store, cfg, head, split), expected[split], check_exact=True)
        meta = pq.ParquetFile(files[split]).metadata
        groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        assert groups[:-1] == [ROW_GROUP] * (len(groups) - 1) and 0 < groups[-1] <= ROW_GROUP, groups
        assert sum(groups) == len(expected[split]) == built.rows[split]


def test_the_export_is_the_same_file_whatever_the_batches(tmp_path: Path, monkeypatch, cfg, version) -> None:
    store, head = version
    write_features(store, cfg, head, reuse=False)
    whole = export_splits(store, cfg, head, tmp_path / "whole", ("train",))["train"]
    monkeypatch.setattr(budget, "MAX_ROWS", 700)
    write_features(store, cfg, head, reuse=False)
    batched = export_splits(store, cfg, head, tmp_path / "batched", ("train",))["train"]
    assert pq.read_table(whole).equals(pq.read_table(batched))
    a, b = pq.ParquetFile(whole).metadata, pq.ParquetFile(batched).metadata
    assert [a.row_group(i).num_rows for i in range(a.num_row_groups)] == [
        b.row_group(i).num_rows for i in range(b.num_row_groups)]  # row groups follow the rows, not the batches


def test_a_read_budget_makes_smaller_batches_of_the_same_rows(monkeypatch, cfg, version) -> None:
    """``split_tables(..., budget_mb=)``, as the streamed evaluation reads: batches of that budget, never larger than
    the dataset's, the rows and their order unchanged."""
    store, head = version
    write_features(store, cfg, head)
    monkeypatch.setattr(budget, "MIN_ROWS", 16)  # a 1 MiB budget's batches are small, not the 4,096-row floor
    tight = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, memory_budget_mb=1))

    def read(config: PipelineConfig, budget_mb: int | None) -> list[pa.Table]:
        return list(feature_store.split_tables(store, config, head, "holdout", budget_mb=budget_mb))

    whole, small = read(cfg, None), read(tight, None)
    assert max(t.num_rows for t in small) < max(t.num_rows for t in whole)
    assert pa.concat_tables(small).equals(pa.concat_tables(whole))
    for asked in (read(cfg, 1), read(tight, 64)):  # the budget asked for; never more than the dataset's
        assert [t.num_rows for t in asked] == [t.num_rows for t in small]
