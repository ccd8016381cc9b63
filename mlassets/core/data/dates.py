"""Dates as the config declares them, and nothing else: parsed by an explicit format or built from columns.

A ``datetime`` column is read by ``dataset.columns.<c>.format`` (a ``strftime`` format, matched exactly), or, with
no format, as ISO 8601 (``2013-01-31``, ``2013-01-31T05:00``, ``2013-01-31 05:00:00+02:00``): pandas alone reads
``2009.5`` as May 2009 and ``2012/01/01`` as a date, so the ISO shape is checked before pandas parses. A value
that does not fit is rejected (the files source names file, column, row and value). Times without a zone are UTC.

``dataset.columns.<c>.from_columns: {year: <col>, month: <col>, day: <col>}`` builds the column from whole numbers
of other columns (``day`` 1 and ``month`` 1 when not named), so a table of years and months can be split by time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

ISO_8601 = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}(:?\d{2})?)?$")
PARTS = ("year", "month", "day")


def describe_format(fmt: str | None) -> str:
    return f"in the format {fmt!r}" if fmt else "in ISO 8601 (e.g. 2013-01-31 or 2013-01-31T05:00:00)"


def parse_dates(values: pd.Series, fmt: str | None = None) -> pd.Series:
    """Strings as UTC timestamps, NaT where a value does not fit ``fmt`` (ISO 8601 when None) exactly."""
    import pandas as pd

    text = values.astype("string").str.strip()
    if fmt:
        return pd.to_datetime(text, format=fmt, exact=True, utc=True, errors="coerce")
    iso = text.str.fullmatch(ISO_8601.pattern).fillna(False).astype(bool)
    parsed = pd.to_datetime(text.where(iso), format="ISO8601", utc=True, errors="coerce")
    return parsed.where(iso, pd.NaT)


def as_dates(values: pd.Series, fmt: str | None = None) -> pd.Series:
    """A column declared ``datetime`` in UTC: typed timestamps as they are (naive ones read as UTC), text parsed
    by ``parse_dates``."""
    import pandas as pd

    if isinstance(values.dtype, pd.DatetimeTZDtype):
        return values.dt.tz_convert("UTC")
    if pd.api.types.is_datetime64_dtype(values):
        return values.dt.tz_localize("UTC")
    return parse_dates(values, fmt)


def built_date(frame: pd.DataFrame, parts: Mapping[str, str]) -> tuple[pd.Series, pd.Series]:
    """``(dates, bad)``: the date each row's ``parts`` columns name (UTC midnight), and which rows name none (a
    missing, fractional or out-of-range year, month or day)."""
    import numpy as np
    import pandas as pd

    numbers = {p: pd.to_numeric(frame[c], errors="coerce").astype("float64") for p, c in parts.items()}
    whole = pd.DataFrame({p: numbers.get(p, pd.Series(1.0, index=frame.index)) for p in PARTS})
    bad = whole.isna().any(axis=1) | (whole % 1 != 0).any(axis=1)
    filled = whole.where(~bad, 1).astype(np.int64)
    dates = pd.to_datetime(filled, errors="coerce", utc=True)
    return dates.where(~bad), bad | dates.isna()
