"""``mlassets example sales DIR``: daily unit sales of shops in six cities, one CSV per month, and their config.

Deterministic (the same files on any machine), made by this project for the own-data tutorial
(docs/tutorials/own-data.md): units depend on the city, the weekday, a promotion flag and the temperature; they are
never negative, so the config bounds the model's output at 0. The config is written next to the data and reads it by
a relative path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

CITIES = {"lisbon": 40.0, "madrid": 55.0, "paris": 70.0, "rome": 50.0, "berlin": 60.0, "vienna": 35.0}
SHOPS_PER_CITY = 4

CONFIG = """\
# Daily unit sales per shop (mlassets example sales): one CSV per month in data/.
dataset:
  name: sales
  source: files
  path: data/sales_{partition}.csv      # relative to this file
  target: units
  time_column: date
  key: [date, shop]
  slices: [city]
  partitions: {pattern: YYYY-MM, keys: [MONTHS]}
  min_rows: 200
  row_change_band: 0.5
  columns:
    date: {dtype: datetime}
    shop: {dtype: str}
    city: {dtype: str, allowed: [CITIES]}
    promo: {dtype: int, min: 0, max: 1}
    temperature: {dtype: float, min: -30, max: 50}
    units: {dtype: float, min: 0}
features:
  categorical: [city, shop, promo]
  numeric: [temperature]
  holdout_days: 7
  validation_days: 7
model:
  registered_name: sales_units
  hidden: [32, 16]
  output_min: 0                        # units are never negative: served predictions are not either
training:
  epochs: 6
  batch_size: 128
gate:
  main_metric: mae
  tolerance: 0.05
  slice_min_rows: 20
  slice_max_regression: 0.1
  absolute_max_metric: 25.0
  prediction_min: 0
  prediction_max: 1000
automation:
  landing: landing                     # a file <month>.csv dropped here is ingested, then the pipeline runs
  sensor_interval_s: 5
"""


def month_of_sales(month: str) -> pd.DataFrame:
    """One month of daily sales (every shop, every day), from a generator seeded by the month."""
    rng = np.random.default_rng(int(month.replace("-", "")))
    days = pd.date_range(f"{month}-01", periods=pd.Period(month).days_in_month, freq="D")
    rows = []
    for city, base in CITIES.items():
        for shop in range(SHOPS_PER_CITY):
            promo = rng.random(len(days)) < 0.2
            temperature = 15 + 10 * np.sin(2 * np.pi * (days.dayofyear / 365.0)) + rng.normal(0, 3, len(days))
            weekend = days.dayofweek >= 5
            units = base * (1 + 0.3 * weekend + 0.5 * promo) + 0.8 * temperature + rng.normal(0, 6, len(days))
            rows.append(pd.DataFrame({
                "date": days.strftime("%Y-%m-%d"), "shop": f"{city}-{shop}", "city": city, "promo": promo.astype(int),
                "temperature": temperature.round(1), "units": np.maximum(units, 0).round(0),
            }))
    return pd.concat(rows, ignore_index=True)


def write_example(directory: str | Path, months: int = 4, first: str = "2024-01") -> Path:
    """Write ``data/sales_<month>.csv`` for ``months`` months and ``sales.yaml``; return the config's path."""
    root = Path(directory)
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "landing").mkdir(exist_ok=True)
    keys = [str(p) for p in pd.period_range(first, periods=months, freq="M")]
    for month in keys:
        month_of_sales(month).to_csv(root / "data" / f"sales_{month}.csv", index=False)
    config = CONFIG.replace("MONTHS", ", ".join(keys)).replace("CITIES", ", ".join(CITIES))
    (root / "sales.yaml").write_text(config)
    return root / "sales.yaml"
