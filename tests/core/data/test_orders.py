"""The synthetic orders source: deterministic weeks, drift and a broken week, and the platform on a dataset that
is not flights (validation, corruption, features, both targets)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from mlassets.core.config import PipelineConfig, load_config, shipped_configs
from mlassets.core.data.corruption import LabelCorruption, corrupt_training_labels
from mlassets.core.data.days import local_days
from mlassets.core.data.ingest import DataRejected, ingest_partition
from mlassets.core.data.parquet import to_parquet_bytes
from mlassets.core.data.partition_checks import validate_target_mean, validate_target_quantiles
from mlassets.core.data.raw import partition_tables
from mlassets.core.data.schema import validate_schema
from mlassets.core.data.snapshot import snapshot_version
from mlassets.core.data.sources import get_source, orders
from mlassets.core.data.store.local import LocalStore
from mlassets.core.features.split import SPLITS, feature_columns
from mlassets.core.features.store import read_split, write_features

WEEKS = ("2024-W01", "2024-W02", "2024-W03")


@pytest.fixture(scope="module")
def cfg() -> PipelineConfig:
    return load_config(shipped_configs()["orders"])


@pytest.fixture(scope="module")
def late_cfg() -> PipelineConfig:
    return load_config(shipped_configs()["orders_late"])


@pytest.fixture(scope="module")
def weeks() -> dict[str, pd.DataFrame]:
    return {w: orders.generate_week(w) for w in WEEKS}


def test_configs_share_the_source_and_differ_in_target(cfg: PipelineConfig, late_cfg: PipelineConfig) -> None:
    assert get_source(cfg.dataset).module is orders
    assert (cfg.dataset.name, cfg.dataset.target, cfg.dataset.task) == ("orders", "eta_minutes", "regression")
    assert (late_cfg.dataset.name, late_cfg.dataset.target, late_cfg.dataset.task) == ("orders_late", "late", "binary")
    assert cfg.dataset.partitions.keys[:2] == ["2024-W01", "2024-W02"] and len(cfg.dataset.partitions.keys) == 26
    assert cfg.dataset.slices == ["city"]
    for c in (cfg, late_cfg):  # neither target leaks into the other's features
        assert not {"eta_minutes", "late"} & set(c.features.categorical + c.features.numeric)


def test_week_start_and_bad_keys() -> None:
    assert orders.week_start("2024-W01") == pd.Timestamp("2024-01-01", tz="UTC")
    assert orders.week_start("2024-W26") == pd.Timestamp("2024-06-24", tz="UTC")
    for bad in ("2024-01", "2024-W54", "W01"):
        with pytest.raises(ValueError, match=repr(bad)):
            orders.generate_week(bad)


def test_a_week_is_deterministic(weeks: dict[str, pd.DataFrame]) -> None:
    again = orders.generate_week("2024-W01")
    pd.testing.assert_frame_equal(again, weeks["2024-W01"])
    assert to_parquet_bytes(again) == to_parquet_bytes(weeks["2024-W01"])
    assert not weeks["2024-W01"]["eta_minutes"].equals(weeks["2024-W02"]["eta_minutes"].head(len(again)))
    for key, frame in weeks.items():
        start = orders.week_start(key)
        assert frame["created_at"].between(start, start + pd.Timedelta(days=7), inclusive="left").all()
        assert frame["order_id"].is_unique and frame["order_id"].str.startswith(key).all()
        assert 2850 <= len(frame) <= 3150


def test_sample_is_a_deterministic_subset(weeks: dict[str, pd.DataFrame]) -> None:
    sample = orders.generate_week("2024-W01", sample_fraction=0.3)
    pd.testing.assert_frame_equal(sample, orders.generate_week("2024-W01", sample_fraction=0.3))
    assert set(sample["order_id"]) < set(weeks["2024-W01"]["order_id"])
    assert 0.25 < len(sample) / len(weeks["2024-W01"]) < 0.35


def test_targets_are_consistent(weeks: dict[str, pd.DataFrame]) -> None:
    frame = pd.concat(weeks.values(), ignore_index=True)
    assert (frame["late"] == (frame["eta_minutes"] > frame["promised_minutes"]).astype(int)).all()
    assert 0.1 < frame["late"].mean() < 0.3
    busy = frame["courier_load"] > frame["courier_load"].median()
    assert frame.loc[busy, "late"].mean() > frame.loc[~busy, "late"].mean()  # late is learnable
    assert frame.groupby("city")["eta_minutes"].mean().nunique() == len(orders.CITIES)


def test_every_week_of_both_configs_is_valid(cfg: PipelineConfig, late_cfg: PipelineConfig) -> None:
    frames = [orders.generate_week(w) for w in cfg.dataset.partitions.keys]
    for c in (cfg, late_cfg):
        for key, frame in zip(cfg.dataset.partitions.keys, frames, strict=True):
            assert validate_schema(frame, c.dataset).passed, key
        target = c.dataset.target
        for i in range(1, len(frames)):  # natural week-to-week variation stays inside the bands
            reference = pd.concat([f[target] for f in frames[:i]])
            week = [cfg.dataset.partitions.keys[i]]
            assert validate_target_mean(frames[i][target], reference, week, c.dataset).passed
            assert validate_target_quantiles(frames[i][target], reference, week, c.dataset).passed


def test_broken_week_fails_validation_naming_column_and_value(cfg, late_cfg, monkeypatch) -> None:
    broken = orders.generate_week("2024-W02", broken=True)
    for c in (cfg, late_cfg):
        outcome = validate_schema(broken, c.dataset)
        assert not outcome.passed
        assert "'eta_minutes'" in outcome.message and "less_than_or_equal_to(300.0)" in outcome.message
    worst = broken.loc[broken["city"] == orders.BROKEN_CITY, "eta_minutes"].max()
    assert worst > 300
    monkeypatch.setattr(orders, "BROKEN", frozenset({"2024-W02"}))
    pd.testing.assert_frame_equal(partition_tables(cfg, "2024-W02")["orders"], broken)
    pd.testing.assert_frame_equal(partition_tables(cfg, "2024-W03")["orders"], orders.generate_week("2024-W03"))


def test_drift_is_blocked_by_the_distribution_checks(cfg: PipelineConfig, weeks, monkeypatch) -> None:
    reference = pd.concat([weeks["2024-W01"]["eta_minutes"], weeks["2024-W02"]["eta_minutes"]])
    drifted = orders.with_drift(weeks["2024-W03"], 1.0)
    assert (drifted["order_id"] == weeks["2024-W03"]["order_id"]).all()
    assert drifted["distance_km"].mean() > 1.3 * weeks["2024-W03"]["distance_km"].mean()
    mean = validate_target_mean(drifted["eta_minutes"], reference, ["2024-W03"], cfg.dataset)
    assert not mean.passed and "'eta_minutes'" in mean.message and "2024-W03" in mean.message, mean.message
    assert not validate_target_quantiles(drifted["eta_minutes"], reference, ["2024-W03"], cfg.dataset).passed
    mild = orders.with_drift(weeks["2024-W03"], 0.05)
    assert validate_target_mean(mild["eta_minutes"], reference, ["2024-W03"], cfg.dataset).passed
    monkeypatch.setattr(orders, "DRIFT", {"2024-W03": 1.0})
    drifted = partition_tables(cfg, "2024-W03")["orders"]["eta_minutes"].mean()
    assert drifted > weeks["2024-W03"]["eta_minutes"].mean() + 5


def test_label_corruption_works_on_orders(cfg: PipelineConfig, weeks) -> None:
    frame = weeks["2024-W01"]
    out = corrupt_training_labels(frame, cfg, LabelCorruption("city", "paris", 30.0))
    day = local_days(frame["created_at"], "UTC")
    hit = (frame["city"] == "paris") & (day <= day.max() - pd.Timedelta(days=14))
    assert hit.sum() == 0  # a single week has no rows older than validation + holdout ...
    three = pd.concat(weeks.values(), ignore_index=True)
    out = corrupt_training_labels(three, cfg, LabelCorruption("city", "paris", 30.0))
    day = local_days(three["created_at"], "UTC")
    hit = (three["city"] == "paris") & (day < pd.Timestamp("2024-01-08"))  # ... three weeks do: the first
    assert hit.sum() > 300
    pd.testing.assert_series_equal(out.loc[hit, "eta_minutes"], (three.loc[hit, "eta_minutes"] + 30).clip(upper=300))
    pd.testing.assert_frame_equal(out.loc[~hit], three.loc[~hit])


def test_store_snapshot_and_features_of_three_weeks(tmp_path: Path, cfg, late_cfg) -> None:
    store = LocalStore(tmp_path / "store")
    for c in (cfg, late_cfg):
        for week in WEEKS:
            version = ingest_partition(store, c, week).data_version
        report = snapshot_version(store, c, version)
        assert report.passed and report.partitions == list(WEEKS) and report.new_partitions == [WEEKS[-1]]
        assert report.rows_per_partition == {w: len(orders.generate_week(w)) for w in WEEKS}
        fs = write_features(store, c, version)
        assert fs.computed == list(WEEKS)
        holdout = read_split(store, c, version, "holdout")
        assert set(local_days(holdout["created_at"], "UTC").dt.isocalendar().week) == {3}
        assert list(holdout.columns) == feature_columns(c) and set(SPLITS) == set(fs.rows)
        per = report.rows_per_partition
        assert fs.rows == {"train": per[WEEKS[0]], "validation": per[WEEKS[1]], "holdout": per[WEEKS[2]]}
    assert sorted(store.list_repos()) == ["orders", "orders-derived", "orders-late", "orders-late-derived"]


def test_broken_week_is_refused_at_ingest(tmp_path: Path, cfg, monkeypatch) -> None:
    store = LocalStore(tmp_path / "store")
    head = ingest_partition(store, cfg, "2024-W01").data_version
    monkeypatch.setattr(orders, "BROKEN", frozenset({"2024-W02"}))
    with pytest.raises(DataRejected, match="column 'eta_minutes'"):
        ingest_partition(store, cfg, "2024-W02")
    assert store.resolve("orders", "main") == head
    small = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, sample_fraction=0.5))
    with pytest.raises(DataRejected, match=r"2024-W03: \d+ rows over 7 days \([\d.]+ a day\), -4\d% vs"):  # half a week
        ingest_partition(store, small, "2024-W03")
