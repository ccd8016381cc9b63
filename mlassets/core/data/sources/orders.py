"""orders (synthetic, deterministic): delivery orders per ISO week, for an ETA model and a "late" classifier.

A week's orders come from a numpy Generator seeded by the week key ("2024-W01"), so a week always holds
the same rows on any machine. The delivery time depends on distance, items, courier load, rain, the hour
and the city; the promise a customer sees depends on distance and items only, so ``late`` (delivery took
longer than promised) is what load, rain and rush hours add. Options, off by default and env-free:
``DRIFT`` (week -> strength: longer trips, busier couriers, slower deliveries) and ``BROKEN`` (weeks whose
delivery times one app release reported in seconds), or the same through ``generate_week`` and
``with_drift`` in tests.
"""

from __future__ import annotations

import datetime as dt
import hashlib

import numpy as np
import pandas as pd

MAIN_TABLE = "orders"
CITIES = ("amsterdam", "berlin", "lisbon", "madrid", "paris", "rome")
_SHARE = np.array([0.15, 0.2, 0.1, 0.15, 0.25, 0.15])
_CITY_MIN_PER_KM = np.array([3.0, 3.4, 3.8, 3.6, 4.4, 4.0])  # minutes per km at an idle courier
_CITY_RAIN = np.array([0.35, 0.25, 0.2, 0.1, 0.25, 0.15])  # chance of rain
ORDERS_PER_WEEK = 3000
DRIFT: dict[str, float] = {}  # week -> drift strength (0: none, 1: strong)
BROKEN: frozenset[str] = frozenset()  # weeks with delivery times in seconds for one city
BROKEN_CITY = "lisbon"
INPUTS = ["order_id", "city", "created_at", "distance_km", "items", "courier_load", "rain_mm"]


def week_start(key: str) -> pd.Timestamp:
    """Monday 00:00 UTC of an ISO week key such as ``2024-W01``."""
    try:
        year, week = key.split("-W")
        return pd.Timestamp(dt.date.fromisocalendar(int(year), int(week), 1), tz="UTC")
    except ValueError:
        raise ValueError(f"week {key!r}: expected an ISO week such as 2024-W01") from None


def _rng(*parts: str) -> np.random.Generator:
    digest = hashlib.sha256("/".join(parts).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _inputs(key: str, rng: np.random.Generator) -> pd.DataFrame:
    n = ORDERS_PER_WEEK + int(rng.integers(-150, 151))
    city = rng.choice(len(CITIES), size=n, p=_SHARE)
    lunch = rng.random(n) < 0.45
    hour = np.where(lunch, rng.normal(12.5, 1.0, n), rng.normal(19.5, 1.5, n)).clip(9, 23.99)
    seconds = rng.integers(0, 7, n) * 86400 + (hour * 3600).astype("int64")
    rain = np.where(rng.random(n) < _CITY_RAIN[city], rng.exponential(2.5, n), 0.0).clip(0, 60)
    frame = pd.DataFrame({
        "order_id": [f"{key}-{i:05d}" for i in range(n)],
        "city": np.array(CITIES)[city],
        "created_at": week_start(key) + pd.to_timedelta(seconds, unit="s"),
        "distance_km": rng.gamma(2.0, 1.5, n).clip(0.3, 25.0).round(2),
        "items": 1 + rng.poisson(2.0, n),
        "courier_load": rng.beta(2.0, 3.0, n).round(3),
        "rain_mm": rain.round(1),
    })
    return frame.sort_values("created_at", kind="stable").reset_index(drop=True)


def _drift_inputs(frame: pd.DataFrame, strength: float) -> pd.DataFrame:
    frame = frame.copy()
    frame["distance_km"] = (frame["distance_km"] * (1 + 0.4 * strength)).clip(0.3, 25.0).round(2)
    frame["courier_load"] = (frame["courier_load"] + 0.25 * strength).clip(0.0, 1.0).round(3)
    return frame


def _outcomes(frame: pd.DataFrame, rng: np.random.Generator, strength: float) -> pd.DataFrame:
    """Delivery time (target ``eta_minutes``), the promise, and ``late`` for given inputs."""
    frame = frame.copy()
    city = frame["city"].map({c: i for i, c in enumerate(CITIES)}).to_numpy()
    hour = frame["created_at"].dt.hour.to_numpy()
    rush = np.isin(hour, (12, 13, 19, 20))
    prep = 6.0 + 1.1 * frame["items"].to_numpy()
    load = frame["courier_load"].to_numpy()
    travel = frame["distance_km"].to_numpy() * _CITY_MIN_PER_KM[city] * (1 + 0.8 * load)
    eta = prep + travel * (1 + 0.04 * frame["rain_mm"].to_numpy()) + 5.0 * rush + 6.0 * strength
    eta = eta + rng.gamma(2.0, 2.0, len(frame)) - 2.0
    frame["promised_minutes"] = np.ceil(10 + prep + 4.5 * frame["distance_km"].to_numpy()).astype("int64")
    frame["eta_minutes"] = eta.clip(3.0, 240.0).round(1)
    frame["late"] = (frame["eta_minutes"] > frame["promised_minutes"]).astype("int64")
    return frame


def generate_week(key: str, sample_fraction: float = 1.0, drift: float = 0.0, broken: bool = False) -> pd.DataFrame:
    """The orders of one ISO week (a deterministic sample if ``sample_fraction`` < 1)."""
    rng = _rng("orders", key)
    frame = _outcomes(_drift_inputs(_inputs(key, rng), drift), rng, drift)
    if broken:
        rows = frame["city"] == BROKEN_CITY
        frame.loc[rows, "eta_minutes"] = (frame.loc[rows, "eta_minutes"] * 60).round(1)
    if sample_fraction < 1.0:
        keep = _rng("orders-sample", key).random(len(frame)) < sample_fraction
        frame = frame[keep].reset_index(drop=True)
    return frame


def with_drift(frame: pd.DataFrame, strength: float, seed: str = "drift") -> pd.DataFrame:
    """Orders like ``frame`` after a drift: longer trips, busier couriers, and slower deliveries for them."""
    return _outcomes(_drift_inputs(frame[INPUTS], strength), _rng(seed), strength)


def load_month(key: str, sample_fraction: float = 1.0) -> dict[str, pd.DataFrame]:
    """The source plugin's entry: one partition (an ISO week) of raw tables."""
    return {"orders": generate_week(key, sample_fraction, DRIFT.get(key, 0.0), key in BROKEN)}


def build_frame(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Orders with the hour and weekday of their creation (UTC) as derived columns."""
    frame = tables["orders"].copy()
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
    frame["hour"] = frame["created_at"].dt.hour.astype("int64")
    frame["weekday"] = frame["created_at"].dt.weekday.astype("int64")
    return frame
