"""The files source on real files written here (CSV and Parquet), with the bad variants a user's files have.

Every bad variant fails with the file, column, row and value named, and nothing reaches the watched branch.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from mlassets.core.config import PipelineConfig, load_config, parse_config
from mlassets.core.data.ingest import DataRejected, ingest_partition
from mlassets.core.data.raw import WATCHED_BRANCH, partition_tables, raw_repo
from mlassets.core.data.sources.files import FileRejected, FilesSource
from mlassets.core.data.store.local import LocalStore
from mlassets.examples.sales import month_of_sales, write_example

JAN, FEB = "2024-01", "2024-02"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    return write_example(tmp_path / "sales", months=2)


@pytest.fixture
def cfg(example: Path) -> PipelineConfig:
    return load_config(example)


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


def _csv(example: Path, month: str) -> Path:
    return example.parent / "data" / f"sales_{month}.csv"


def test_relative_paths_are_read_from_the_config_folder(cfg: PipelineConfig, example: Path) -> None:
    assert cfg.dataset.path == str(example.parent / "data" / "sales_{partition}.csv")
    frame = partition_tables(cfg, JAN)["sales"]
    assert len(frame) == len(month_of_sales(JAN))
    assert str(frame["date"].dtype) == "datetime64[ns, UTC]" and frame["units"].dtype == "float64"


def test_headers_with_a_byte_order_mark_and_spaces_are_cleaned(cfg: PipelineConfig, example: Path) -> None:
    path = _csv(example, JAN)
    text = path.read_text().splitlines()
    text[0] = "\ufeff" + ", ".join(f" {c} " for c in text[0].split(","))
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    assert list(partition_tables(cfg, JAN)["sales"].columns) == list(cfg.dataset.columns)


def _edit(path: Path, row: int, column: str, value: str) -> None:
    frame = pd.read_csv(path, dtype=str)
    frame.loc[row, column] = value
    frame.to_csv(path, index=False)


def test_a_value_that_does_not_parse_names_file_column_row_and_value(cfg: PipelineConfig, example: Path,
                                                                     store: LocalStore) -> None:
    path = _csv(example, JAN)
    _edit(path, 5, "temperature", "12 min")
    _edit(path, 9, "temperature", "warm")
    with pytest.raises(FileRejected) as err:
        partition_tables(cfg, JAN)
    assert str(err.value) == f"{path}: column 'temperature', row 7: '12 min' is not a number (and 1 more rows)"
    _edit(path, 5, "temperature", "12.5")
    _edit(path, 9, "temperature", "13")
    _edit(path, 3, "date", "the fifth")
    with pytest.raises(FileRejected, match=r"column 'date', row 5: 'the fifth' is not a date or time"):
        partition_tables(cfg, JAN)


@pytest.mark.parametrize("content", ["", "date,shop,city,promo,temperature,units\n"], ids=["empty", "header-only"])
def test_an_empty_file_is_named(cfg: PipelineConfig, example: Path, content: str) -> None:
    path = _csv(example, JAN)
    path.write_text(content)
    with pytest.raises(FileRejected, match=str(path)):
        partition_tables(cfg, JAN)


def _parquet(cfg: PipelineConfig, example: Path) -> tuple[PipelineConfig, Path]:
    path = example.parent / "data" / f"sales_{JAN}.parquet"
    frame = month_of_sales(JAN)
    frame["date"] = pd.to_datetime(frame["date"], utc=True)
    frame.to_parquet(path, index=False)
    template = cfg.dataset.path.replace(".csv", ".parquet")
    return dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, path=template)), path


def test_a_truncated_parquet_file_is_named(cfg: PipelineConfig, example: Path) -> None:
    parquet_cfg, path = _parquet(cfg, example)
    assert len(partition_tables(parquet_cfg, JAN)["sales"]) == len(month_of_sales(JAN))
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(FileRejected, match=f"{path}: not readable as Parquet"):
        partition_tables(parquet_cfg, JAN)


def test_an_extra_nested_column_is_not_stored_and_said_so(cfg: PipelineConfig, example: Path) -> None:
    parquet_cfg, path = _parquet(cfg, example)
    table = pq.read_table(path)
    nested = pa.array([{"source": "pos", "lane": i % 3} for i in range(table.num_rows)])
    pq.write_table(table.append_column("meta", nested), path)
    source = FilesSource(parquet_cfg.dataset)
    frame = source.load(JAN)["sales"]
    assert "meta" not in frame.columns and list(frame.columns) == list(cfg.dataset.columns)
    assert source.notes == [f"{path}: column(s) 'meta' not declared in the config; not stored"]


def test_a_folder_or_a_glob_per_partition_is_concatenated(cfg: PipelineConfig, example: Path, tmp_path: Path) -> None:
    folder = tmp_path / "landing" / JAN
    folder.mkdir(parents=True)
    frame = month_of_sales(JAN)
    frame.iloc[:100].to_csv(folder / "part-1.csv", index=False)
    frame.iloc[100:].to_csv(folder / "part-2.csv", index=False)
    for template in (str(tmp_path / "landing" / "{partition}"), str(tmp_path / "landing" / "{partition}" / "*.csv")):
        both = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, path=template))
        assert len(partition_tables(both, JAN)["sales"]) == len(frame)
    with pytest.raises(FileRejected, match=f"partition '{FEB}': no file at"):
        partition_tables(both, FEB)


def test_one_file_of_many_partitions_is_split_by_the_partition_column(cfg: PipelineConfig, example: Path,
                                                                      tmp_path: Path) -> None:
    whole = pd.concat([month_of_sales(JAN), month_of_sales(FEB)], ignore_index=True)
    whole.to_csv(tmp_path / "all.csv", index=False)
    data = yaml.safe_load(example.read_text())
    data["dataset"].update(path=str(tmp_path / "all.csv"), partition_column="date")  # no {partition} needed
    source = FilesSource(parse_config(data).dataset)
    assert len(source.load(FEB)["sales"]) == len(month_of_sales(FEB))
    with pytest.raises(FileRejected, match="no row of the delivered file"):
        source.load("2024-07")


def _rejected(store: LocalStore, cfg: PipelineConfig, example: Path, edit) -> str:  # noqa: ANN001
    ingest_partition(store, cfg, JAN)
    head = store.resolve(raw_repo(cfg), WATCHED_BRANCH)
    frame = pd.read_csv(_csv(example, FEB), dtype=str)
    edit(frame)
    frame.to_csv(_csv(example, FEB), index=False)
    with pytest.raises(DataRejected) as err:
        ingest_partition(store, cfg, FEB)
    assert store.resolve(raw_repo(cfg), WATCHED_BRANCH) == head  # nothing reached the watched branch
    return str(err.value)


def test_duplicate_keys_are_rejected_naming_the_key(cfg, example, store) -> None:
    def duplicate(frame: pd.DataFrame) -> None:
        frame.loc[1] = frame.loc[0]

    message = _rejected(store, cfg, example, duplicate)
    assert "key ['date', 'shop'] is not unique" in message


def test_a_missing_target_is_rejected_naming_file_row_and_the_key_that_drops_it(cfg, example, store) -> None:
    ingest_partition(store, cfg, JAN)
    head = store.resolve(raw_repo(cfg), WATCHED_BRANCH)
    frame = pd.read_csv(_csv(example, FEB), dtype=str)
    frame.loc[4, "units"] = ""
    frame.to_csv(_csv(example, FEB), index=False)
    with pytest.raises(FileRejected) as err:
        ingest_partition(store, cfg, FEB)
    assert str(err.value) == (f"{_csv(example, FEB)}: column 'units', row 6: the target is missing; set "
                              "dataset.drop_missing_target: true to drop rows without a target (they are counted)")
    assert store.resolve(raw_repo(cfg), WATCHED_BRANCH) == head  # nothing reached the watched branch


def test_a_missing_target_from_any_source_says_which_key_drops_it(cfg) -> None:
    from mlassets.core.data.schema import validate_schema

    frame = partition_tables(cfg, JAN)["sales"]
    frame.loc[7, "units"] = float("nan")
    outcome = validate_schema(frame, cfg.dataset)  # what a plug-in source's rows meet at ingestion
    assert not outcome.passed and "column 'units' failed not_nullable" in outcome.message
    assert outcome.message.endswith("column 'units' failed not_nullable: 1 rows, e.g. [nan] at row 7; column 'units' "
                                    "is the target: set dataset.drop_missing_target: true to drop rows without one "
                                    "(they are counted)")


def test_a_slice_value_in_another_case_is_rejected_naming_it(cfg, example, store) -> None:
    message = _rejected(store, cfg, example, lambda f: f.__setitem__("city", f["city"].replace("paris", "Paris")))
    assert "column 'city' failed isin" in message and "'Paris'" in message


def test_drop_missing_target_lets_them_in_and_the_features_drop_them(example: Path, store: LocalStore) -> None:
    from mlassets.core.features.store import read_split, write_features

    data = yaml.safe_load(example.read_text())
    data["dataset"]["drop_missing_target"] = True
    (example.parent / "drop.yaml").write_text(yaml.safe_dump(data))
    cfg = load_config(example.parent / "drop.yaml")
    frame = pd.read_csv(_csv(example, JAN), dtype=str)
    frame.loc[[3, 8, 13], "units"] = ""
    frame.to_csv(_csv(example, JAN), index=False)
    version = ingest_partition(store, cfg, JAN).data_version
    features = write_features(store, cfg, version)
    assert features.dropped_missing_target == 3
    assert sum(features.rows.values()) == len(frame) - 3
    assert not read_split(store, cfg, version, "train")["units"].isna().any()


def test_missing_value_markers_are_read_as_missing_and_configurable(example: Path) -> None:
    frame = pd.read_csv(_csv(example, JAN), dtype=str)
    frame.loc[2, "temperature"], frame.loc[5, "temperature"] = "NA", "n/a"  # as R and spreadsheets write them
    frame.to_csv(_csv(example, JAN), index=False)
    data = yaml.safe_load(example.read_text())
    data["dataset"]["columns"]["temperature"]["nullable"] = True
    (example.parent / "na.yaml").write_text(yaml.safe_dump(data))
    read = partition_tables(load_config(example.parent / "na.yaml"), JAN)["sales"]
    assert read["temperature"].isna().sum() == 2 and read["temperature"].notna().sum() == len(frame) - 2

    data["dataset"]["missing_values"] = [""]  # "NA" is a value here: a number column then names it
    (example.parent / "strict.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(FileRejected, match=r"column 'temperature', row 4: 'NA' is not a number \(and 1 more rows\)"):
        partition_tables(load_config(example.parent / "strict.yaml"), JAN)


def test_a_refusal_quotes_the_offending_value_cut_never_a_line_of_the_file(tmp_path: Path) -> None:
    """Issue 33 case 2: a delivery that is not the data (a copied /etc/passwd line) is named by its file, column
    and row; the value is cut at 40 characters."""
    from mlassets.core.data.sources.base import quoted

    line = "0:root:/root:/bin/bash:" + "x" * 80
    assert quoted(line) == f"{line[:40]!r}… ({len(line)} characters)" and quoted("12 min") == "'12 min'"
    assert quoted(7) == "7"
