"""A Texas-housing-like table made here (seeded): the shape of ggplot2's ``txhousing`` that the first-hour issue was
walked with. 46 cities, one row per city and month from 2000 to July 2015, with ``year``, ``month`` and a
fractional-year ``date`` (``2009.5``), sales, listings, months of inventory and the median price (the target).
Prices are six-figure dollars: nothing like the flights delays the old defaults were set for.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

CITIES = ["abilene", "amarillo", "arlington", "austin", "bay-area", "beaumont", "brazoria-county", "brownsville",
          "bryan-college-station", "collin-county", "corpus-christi", "dallas", "denton-county", "el-paso",
          "fort-bend", "fort-worth", "galveston", "garland", "harlingen", "houston", "irving", "kerrville",
          "killeen-fort-hood", "laredo", "longview-marshall", "lubbock", "lufkin", "mcallen", "midland",
          "montgomery-county", "nacogdoches", "ne-tarrant-county", "odessa", "paris", "port-arthur", "san-angelo",
          "san-antonio", "san-marcos", "sherman-denison", "south-padre-island", "temple-belton", "texarkana",
          "tyler", "victoria", "waco", "wichita-falls"]


def housing_table(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    months = pd.period_range("2000-01", "2015-07", freq="M")
    base = rng.lognormal(np.log(120_000), 0.3, len(CITIES))
    size = rng.lognormal(np.log(150), 1.0, len(CITIES))
    rows = []
    for c, city in enumerate(CITIES):
        for p in months:
            years = p.year - 2000 + (p.month - 1) / 12
            season = 1 + 0.04 * np.sin(2 * np.pi * (p.month - 3) / 12)
            sales = max(1.0, rng.poisson(size[c] * season * (1 + 0.02 * years)))
            listings = max(1.0, rng.poisson(size[c] * 6))
            median = base[c] * 1.03**years * season * rng.lognormal(0, 0.05)
            rows.append({"city": city, "year": p.year, "month": p.month, "date": round(p.year + (p.month - 1) / 12, 4),
                         "sales": sales, "listings": listings, "inventory": round(listings / sales, 1),
                         "median": round(median, -2)})
    return pd.DataFrame(rows)


def write_housing(directory: Path, years: list[int], epochs: int = 40) -> Path:
    """The table as one CSV and a config that names no threshold (every gate and band key is derived); the
    time split runs on a date built from ``year`` and ``month`` (the fractional ``date`` is not a date)."""
    directory.mkdir(parents=True, exist_ok=True)
    housing_table().to_csv(directory / "txhousing.csv", index=False)
    config = {
        "dataset": {
            "name": "housing", "source": "files", "path": "txhousing.csv", "partition_column": "year",
            "partitions": {"pattern": "YYYY", "keys": years},  # bare years, as YAML reads them
            "target": "median", "time_column": "month_start", "key": ["city", "year", "month"], "slices": ["city"],
            "columns": {
                "city": {"dtype": "str"}, "year": {"dtype": "int"}, "month": {"dtype": "int", "min": 1, "max": 12},
                "month_start": {"dtype": "datetime", "from_columns": {"year": "year", "month": "month"}},
                "sales": {"dtype": "float", "min": 0}, "listings": {"dtype": "float", "min": 0},
                "inventory": {"dtype": "float", "min": 0}, "median": {"dtype": "float", "min": 0},
            },
        },
        "features": {"categorical": ["city"], "numeric": ["month", "sales", "listings", "inventory"],
                     "holdout_days": 62, "validation_days": 62},  # monthly rows: two months each
        "model": {"registered_name": "housing_median", "output_min": 0},
        "training": {"epochs": epochs, "batch_size": 64},  # a few hundred rows a year: more passes than flights needs
    }
    path = directory / "housing.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
