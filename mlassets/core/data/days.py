"""Calendar days and instants as the dataset config means them: local days in a time zone, ISO bounds as UTC."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd



def local_days(times: pd.Series, timezone: str) -> pd.Series:
    """Each instant's calendar day in ``timezone`` (naive midnight); strings are parsed as UTC."""
    import pandas as pd

    if not isinstance(times.dtype, pd.DatetimeTZDtype):
        times = pd.to_datetime(times, utc=True, errors="coerce")
    return times.dt.tz_convert(timezone).dt.tz_localize(None).dt.normalize()


def utc_timestamp(text: str) -> pd.Timestamp:
    """An ISO date or time from the config as a UTC timestamp (naive values are UTC)."""
    import pandas as pd

    stamp = pd.Timestamp(text)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
