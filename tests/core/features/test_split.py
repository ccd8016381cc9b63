"""Feature preparation: the time split in local days, real months' splits, per-partition day histograms."""

from __future__ import annotations

import dataclasses
import datetime as dt
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import partition_tables
from mlassets.core.features.split import (
    SPLITS,
    SplitBounds,
    day_histogram,
    feature_columns,
    partition_frame,
    prepare_features,
    split_by_time,
    split_counts,
)
from tests.conftest import small_flights

MONTHS = ("2013-01", "2013-02")
LEAKY = ("dep_delay", "dep_time", "arr_time", "air_time")


@pytest.fixture(scope="module")
def cfg() -> PipelineConfig:
    cfg = small_flights()
    assert cfg.features.timezone == "America/New_York"
    assert (cfg.features.holdout_days, cfg.features.validation_days) == (7, 7)
    return cfg


def _window(cfg: PipelineConfig, months: int) -> PipelineConfig:
    return dataclasses.replace(cfg, features=dataclasses.replace(cfg.features, train_window_months=months))


def _frame(times: list[str] | pd.DatetimeIndex) -> pd.DataFrame:
    return pd.DataFrame({"time_hour": pd.to_datetime(times, utc=True)})


# ------------------------------------------------------------------ split_by_time on synthetic hours

# Hourly rows from local midnight of 2013-02-01 (EST, UTC-5) to 23:00 local of 2013-03-28 (EDT, UTC-4): the
# newest local day is 03-28, so holdout = 03-22..03-28, validation = 03-15..03-21, and a one-month train
# window starts at 03-15 - 1 month = 02-15.
HOURS = pd.date_range("2013-02-01T05:00Z", "2013-03-29T03:00Z", freq="h")
EXPECTED_DAYS = {
    "holdout": (dt.date(2013, 3, 22), dt.date(2013, 3, 28)),
    "validation": (dt.date(2013, 3, 15), dt.date(2013, 3, 21)),
    "train": (dt.date(2013, 2, 15), dt.date(2013, 3, 14)),
    "": (dt.date(2013, 2, 1), dt.date(2013, 2, 14)),
}


def _local_dates(times: pd.Series, zone: str) -> pd.Series:
    tz = ZoneInfo(zone)
    return times.map(lambda t: t.to_pydatetime().astimezone(tz).date())


def test_split_by_time_in_local_days(cfg: PipelineConfig) -> None:
    frame = _frame(HOURS)
    split = split_by_time(frame, _window(cfg, 1))
    assert split.index.equals(frame.index)
    local = _local_dates(frame["time_hour"], "America/New_York")
    assert local.min() == dt.date(2013, 2, 1) and local.max() == dt.date(2013, 3, 28)
    for name, (first, last) in EXPECTED_DAYS.items():
        days = local[split == name]
        assert (days.min(), days.max()) == (first, last), name
        assert days.nunique() == (last - first).days + 1, name
        assert (days.value_counts() >= 23).all(), name  # whole local days (23 h on the DST day)
    assert local[split == "holdout"].nunique() == cfg.features.holdout_days
    assert local[split == "validation"].nunique() == cfg.features.validation_days
    assert set(split) == {"", "train", "validation", "holdout"}


def test_split_by_time_default_window_keeps_every_older_row(cfg: PipelineConfig) -> None:
    split = split_by_time(_frame(HOURS), cfg)  # 12 months: nothing is outside the window
    assert (split != "").all()
    local = _local_dates(_frame(HOURS)["time_hour"], "America/New_York")
    assert local[split == "train"].min() == dt.date(2013, 2, 1)


def test_split_by_time_ignores_row_order(cfg: PipelineConfig) -> None:
    frame = _frame(HOURS).sample(frac=1.0, random_state=0)
    split = split_by_time(frame, _window(cfg, 1))
    expected = split_by_time(frame.sort_index(), _window(cfg, 1))
    pd.testing.assert_series_equal(split.sort_index(), expected)


@pytest.mark.parametrize(
    ("utc", "expected"),
    [
        ("2013-03-22T03:59Z", "validation"),  # 23:59 EDT on 03-21, though 03-22 in UTC
        ("2013-03-22T04:00Z", "holdout"),  # local midnight of 03-22
        ("2013-03-15T03:59Z", "train"),  # 23:59 EDT on 03-14
        ("2013-03-15T04:00Z", "validation"),
    ],
)
def test_split_local_midnight_boundary(cfg: PipelineConfig, utc: str, expected: str) -> None:
    # The newest row, 23:30 EDT on 03-28, is 03-29 in UTC: the last local day is 03-28.
    frame = _frame(["2013-03-29T03:30Z", "2013-03-01T12:00Z", utc])
    assert split_by_time(frame, cfg).tolist() == ["holdout", "train", expected]


def test_split_counts_days_in_the_configured_zone(cfg: PipelineConfig) -> None:
    utc_cfg = dataclasses.replace(cfg, features=dataclasses.replace(cfg.features, timezone="UTC"))
    frame = _frame(["2013-03-29T03:30Z", "2013-03-01T12:00Z", "2013-03-23T03:59Z"])
    # In UTC the newest day is 03-29, so holdout starts 03-23 and 03-23T03:59Z is holdout;
    # in New York that row is 23:59 on 03-22 and the newest day is 03-28: holdout too, from 03-22.
    assert split_by_time(frame, utc_cfg).tolist() == ["holdout", "train", "holdout"]
    assert split_by_time(frame, cfg).tolist() == ["holdout", "train", "holdout"]
    frame = _frame(["2013-03-29T03:30Z", "2013-03-01T12:00Z", "2013-03-22T03:59Z"])
    assert split_by_time(frame, utc_cfg).tolist() == ["holdout", "train", "validation"]
    assert split_by_time(frame, cfg).tolist() == ["holdout", "train", "validation"]
    frame = _frame(["2013-03-29T04:30Z", "2013-03-01T12:00Z", "2013-03-23T03:59Z"])  # 00:30 EDT on 03-29
    assert split_by_time(frame, utc_cfg).tolist() == ["holdout", "train", "holdout"]
    assert split_by_time(frame, cfg).tolist() == ["holdout", "train", "validation"]


# ------------------------------------------------------------------ prepare_features on real months


@pytest.fixture(scope="module")
def tables(cfg: PipelineConfig) -> dict[str, pd.DataFrame]:
    months = [partition_tables(cfg, m) for m in MONTHS]
    return {name: pd.concat([m[name] for m in months], ignore_index=True) for name in ("flights", "weather")}


@pytest.fixture(scope="module")
def parts(tables: dict[str, pd.DataFrame], cfg: PipelineConfig) -> dict[str, pd.DataFrame]:
    return prepare_features(tables, cfg)


def test_prepare_features_splits(parts: dict[str, pd.DataFrame], tables, cfg: PipelineConfig) -> None:
    assert list(parts) == list(SPLITS)
    for name, part in parts.items():
        assert len(part) > 0, name
        assert list(part.columns) == feature_columns(cfg), name
        assert not set(LEAKY) & set(part.columns), name
        assert part.index.equals(pd.RangeIndex(len(part))), name
        assert str(part["time_hour"].dtype) == "datetime64[ns, UTC]"
    assert sum(len(p) for p in parts.values()) == len(tables["flights"])  # 12-month window keeps every row
    train, validation, holdout = (parts[s]["time_hour"] for s in SPLITS)
    assert train.max() < validation.min() < validation.max() < holdout.min()
    keys = [set(map(tuple, parts[s][cfg.dataset.key].to_numpy().tolist())) for s in SPLITS]
    assert not (keys[0] & keys[1]) and not (keys[1] & keys[2]) and not (keys[0] & keys[2])
    assert sum(len(k) for k in keys) == len(tables["flights"])


def test_prepare_features_holdout_is_the_last_week_of_february(parts: dict[str, pd.DataFrame]) -> None:
    def days(split: str) -> set[tuple[int, int]]:
        return set(zip(parts[split]["month"], parts[split]["day"], strict=True))

    assert days("holdout") == {(2, d) for d in range(22, 29)}
    assert days("validation") == {(2, d) for d in range(15, 22)}
    assert days("train") == {(1, d) for d in range(1, 32)} | {(2, d) for d in range(1, 15)}


def test_prepare_features_joins_weather(parts: dict[str, pd.DataFrame], cfg: PipelineConfig) -> None:
    for part in parts.values():
        for column in cfg.features.numeric:
            assert part[column].notna().mean() > 0.9, column
        assert part["dep_hour"].between(0, 23).all()
        assert part["weekday"].between(0, 6).all()


def test_prepare_features_too_few_days_names_the_empty_split(tables, cfg: PipelineConfig) -> None:
    flights = tables["flights"]
    few = {"flights": flights[(flights["month"] == 1) & (flights["day"] <= 5)], "weather": tables["weather"]}
    assert few["flights"]["day"].nunique() == 5
    with pytest.raises(ValueError, match="the train split is empty"):
        prepare_features(few, cfg)


def test_prepare_features_without_training_days(tables, cfg: PipelineConfig) -> None:
    flights = tables["flights"]
    # 10 days fill holdout (7) and part of validation: train is still empty.
    ten = {"flights": flights[(flights["month"] == 1) & (flights["day"] <= 10)], "weather": tables["weather"]}
    with pytest.raises(ValueError, match="train split is empty"):
        prepare_features(ten, cfg)


# ------------------------------------------------------------------ per-partition frames and day histograms


def test_partition_frames_concatenated_equal_the_whole_version_frame(tables, cfg: PipelineConfig) -> None:
    months = [partition_tables(cfg, m) for m in MONTHS]
    one_by_one = pd.concat([partition_frame(m, cfg) for m in months], ignore_index=True)
    pd.testing.assert_frame_equal(one_by_one, partition_frame(tables, cfg))


def test_split_counts_from_histograms_match_split_by_time(tables, cfg: PipelineConfig) -> None:
    frames = [partition_frame(partition_tables(cfg, m), cfg) for m in MONTHS]
    whole = pd.concat(frames, ignore_index=True)
    split = split_by_time(whole, _window(cfg, 1))
    bounds = SplitBounds.of(pd.Timestamp(max(max(day_histogram(f, cfg)) for f in frames)), _window(cfg, 1))
    assert SplitBounds.from_dict(bounds.to_dict()) == bounds
    assert bounds.to_dict() == {"train": "2013-01-15", "validation": "2013-02-15", "holdout": "2013-02-22"}
    counts = [split_counts(day_histogram(f, cfg), bounds) for f in frames]
    for name in SPLITS:
        assert sum(c[name] for c in counts) == int((split == name).sum()), name
    assert counts[0] == {"train": int((split[: len(frames[0])] == "train").sum()), "validation": 0, "holdout": 0}
    pd.testing.assert_series_equal(split_by_time(whole, _window(cfg, 1), bounds), split)


def test_day_histogram_counts_local_days(cfg: PipelineConfig) -> None:
    frame = _frame(["2013-03-29T03:30Z", "2013-03-29T04:30Z", "2013-03-01T12:00Z"])
    ny = dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, time_column="time_hour"))
    assert day_histogram(frame, ny) == {"2013-03-01": 1, "2013-03-28": 1, "2013-03-29": 1}
