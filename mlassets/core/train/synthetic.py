"""Synthetic flights-like rows with a learnable signal, for tests, benchmarks and the GPU check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

CARRIERS = {"AA": -10.0, "DL": 0.0, "UA": 15.0, "B6": 30.0, "EV": 5.0}


def flights_like(n: int, seed: int) -> pd.DataFrame:
    """``n`` rows with every column the shipped flights config trains on; the delay follows the features."""
    rng = np.random.default_rng(seed)
    carrier = rng.choice(list(CARRIERS), n)
    dep_hour = rng.integers(5, 23, n)
    precip = rng.exponential(0.05, n)
    temp = rng.normal(15, 10, n)
    temp[rng.random(n) < 0.05] = np.nan
    signal = np.vectorize(CARRIERS.get)(carrier) + 2.5 * (dep_hour - 5) + 200 * precip
    return pd.DataFrame({
        "carrier": carrier,
        "origin": rng.choice(["EWR", "JFK", "LGA"], n),
        "dest": rng.choice([f"D{i:02d}" for i in range(12)], n),
        "dep_hour": dep_hour,
        "weekday": rng.integers(0, 7, n),
        "distance": rng.uniform(100, 2500, n),
        "temp": temp,
        "precip": precip,
        **{c: rng.normal(0, 1, n) for c in ["dewp", "humid", "wind_speed", "pressure", "visib"]},
        "arr_delay": signal + rng.normal(0, 5, n),
    })


def write_splits(directory: Path, n_train: int, n_val: int, seed: int = 0,
                 row_group_rows: int | None = None) -> tuple[Path, Path]:
    """Write ``train.parquet`` and ``validation.parquet`` under ``directory`` (row groups of ``row_group_rows``, else
    one); return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    train, val = directory / "train.parquet", directory / "validation.parquet"
    flights_like(n_train, seed).to_parquet(train, row_group_size=row_group_rows)
    flights_like(n_val, seed + 1).to_parquet(val, row_group_size=row_group_rows)
    return train, val


def tiny_config(model: dict | None = None, **training: object) -> dict:
    """The shipped flights config with a small network and the given ``training`` overrides, as a dict."""
    from mlassets.core.config import load_config, parse_config, shipped_configs

    data = load_config(shipped_configs()["flights"]).to_dict()
    data["model"].update({"embedding_dim": 4, "hidden": [16, 8], "dropout": 0.0, **(model or {})})
    data["training"].update({"epochs": 2, "batch_size": 128, "lr": 0.01, "threads": 1, **training})
    return parse_config(data).to_dict()
