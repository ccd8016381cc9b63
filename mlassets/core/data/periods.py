"""Partitions that are time periods: a partition's rows lie in its period, and no row's key is another partition's.

With ``dataset.partitions.pattern`` ``YYYY-MM``, ``YYYY``, ``YYYY-Www`` (ISO week) or ``YYYY-MM-DD``, a partition key
names a period. A delivery whose time column holds dates outside it by more than a day (times are UTC, a period's
days the source's local ones), such as January's rows delivered as ``2024-03``, is refused naming the dates seen and
the period expected; rows whose key another partition of the version already holds are refused naming both
partitions. Both are part of the blocking ``schema`` check, on the new partitions
only. The key check compares the new partitions' key hashes with each other partition's: an object's sorted unique
hashes are computed once (its key columns read one budget-sized batch at a time) and kept in the home's working area
under the object's sha256 (``work/key-hashes/``: an object never changes), so a version's check reads the earlier
partitions' hashes, not their data; a hash match is confirmed on the keys themselves before anything is refused.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from mlassets.core.data.outcome import CheckOutcome

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    import pandas as pd

    from mlassets.core.config import DatasetConfig
    from mlassets.core.data.store import VersionedStore

PERIOD_PATTERNS = ("YYYY-MM", "YYYY", "YYYY-Www", "YYYY-MM-DD")
# a period's days are the source's local days; its rows' times are UTC, up to 14 hours away from them
SLACK = dt.timedelta(days=1)


def period(pattern: str, key: str) -> tuple[dt.date, dt.date] | None:
    """The first and last day of the period ``key`` names under ``pattern`` (None: the keys are not periods)."""
    if pattern not in PERIOD_PATTERNS:
        return None
    if pattern == "YYYY":
        return dt.date(int(key), 1, 1), dt.date(int(key), 12, 31)
    if pattern == "YYYY-Www":
        first = dt.date.fromisocalendar(int(key[:4]), int(key[6:]), 1)
        return first, first + dt.timedelta(days=6)
    if pattern == "YYYY-MM-DD":
        day = dt.date.fromisoformat(key)
        return day, day
    first = dt.date(int(key[:4]), int(key[5:7]), 1)
    after = dt.date(first.year + first.month // 12, first.month % 12 + 1, 1)
    return first, after - dt.timedelta(days=1)


def _names(keys: Mapping[str, str]) -> str:
    return f"partition {next(iter(keys))}" if len(keys) == 1 else f"partitions {', '.join(sorted(keys))}"


def _frames(store: VersionedStore, repo: str, ref: str, path: str, columns: list[str],
            budget_mb: int) -> Iterator[pd.DataFrame]:
    from mlassets.core.data.batches import iter_frames, object_file, open_parquet

    with object_file(store, repo, ref, path) as file:
        yield from iter_frames(open_parquet(file, path), budget_mb, columns, path)


def _dates(frame: pd.DataFrame, ds: DatasetConfig) -> pd.Series:
    from mlassets.core.data.dates import as_dates, built_date

    spec = ds.columns.get(ds.time_column or "")
    if spec is not None and spec.from_columns:
        return built_date(frame, spec.from_columns)[0]
    return as_dates(frame[ds.time_column], spec.format if spec is not None else None)


def check_periods(store: VersionedStore, ds: DatasetConfig, repo: str, ref: str, new: Mapping[str, str],
                  budget_mb: int) -> CheckOutcome | None:
    """Every row of each new partition (key -> main table object) dated inside the partition's period (None: the
    partitions are not periods, or the dataset has no time column)."""
    if not ds.time_column or ds.partitions.pattern not in PERIOD_PATTERNS:
        return None
    bad = []
    for key, path in sorted(new.items()):
        span = period(ds.partitions.pattern, key)
        if span is None or not ds.time_column:
            continue
        spec = ds.columns.get(ds.time_column)
        columns = list(spec.from_columns.values()) if spec is not None and spec.from_columns else [ds.time_column]
        first = last = None
        outside = rows = 0
        for frame in _frames(store, repo, ref, path, columns, budget_mb):
            if not set(columns) <= set(frame.columns):
                break  # the schema check names the missing column
            days = _dates(frame, ds).dropna().dt.date
            rows += len(days)
            if days.empty:
                continue
            first = min(first or days.min(), days.min())
            last = max(last or days.max(), days.max())
            outside += int(((days < span[0] - SLACK) | (days > span[1] + SLACK)).sum())
        if outside:
            bad.append(f"partition {key} holds rows dated {first}..{last} in column {ds.time_column!r} ({outside} of "
                       f"{rows} rows outside its period), but partition {key} is the period {span[0]}..{span[1]} "
                       "(a day either side allowed for time zones)")
    if bad:
        return CheckOutcome("schema", False, "; ".join(bad), len(bad))
    return CheckOutcome("schema", True, f"the rows of {_names(new)} lie in {'its' if len(new) == 1 else 'their'} "
                                        "period")


HASHES_VERSION = "1"  # bump when ``keys.key_hashes`` changes what it computes: kept hashes are then not read


def _kept(store: VersionedStore, repo: str, ref: str, path: str, key: list[str]) -> Path | None:
    """Where an object's key hashes are kept: named by its content and the key (None: the store cannot say)."""
    import hashlib

    from mlassets.core import paths

    try:
        sha = str(store.stat(repo, ref, path)["checksum"])
    except Exception:  # noqa: BLE001 - no checksum: computed each time, as before
        return None
    name = hashlib.sha256("\0".join([HASHES_VERSION, sha, *key]).encode()).hexdigest()[:40]
    try:
        return paths.work_dir("key-hashes") / f"{name}.npy"
    except OSError:  # a home without a writable working area: computed each time
        return None


def _hashes(store: VersionedStore, repo: str, ref: str, path: str, key: list[str], budget_mb: int) -> np.ndarray:
    """The object's key hashes, sorted and unique: read where kept, else computed and kept."""
    import os
    import tempfile

    import numpy as np

    from mlassets.core.data.keys import key_hashes

    kept = _kept(store, repo, ref, path, key)
    if kept is not None and kept.exists():
        try:
            loaded = np.load(kept, allow_pickle=False)
            if loaded.dtype == np.uint64 and loaded.ndim == 1:
                return loaded
        except (OSError, ValueError):
            pass  # damaged: computed again below
    parts = [key_hashes(f, key) for f in _frames(store, repo, ref, path, key, budget_mb) if set(key) <= set(f)]
    out = np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.uint64)
    if kept is not None:
        try:
            fd, tmp = tempfile.mkstemp(dir=kept.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as file:
                np.save(file, out, allow_pickle=False)
            os.replace(tmp, kept)  # whole or absent: a reader never sees half
        except OSError:  # a full disk: kept next time, perhaps
            pass
    return out


def _common(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """The values of ``mine`` that sorted ``theirs`` holds (a binary search each: no sort of both together)."""
    import numpy as np

    if not len(mine) or not len(theirs):
        return np.empty(0, dtype=np.uint64)
    at = np.minimum(np.searchsorted(theirs, mine), len(theirs) - 1)
    return mine[theirs[at] == mine]


def _shared_keys(store: VersionedStore, repo: str, ref: str, paths: tuple[str, str], key: list[str],
                 hashes: np.ndarray, budget_mb: int) -> list[tuple]:
    """Keys both objects hold, compared exactly (a hash match alone never fails a delivery)."""
    from mlassets.core.data.keys import canonical_keys, key_hashes

    sides = []
    for path in paths:
        rows: set[tuple] = set()
        for frame in _frames(store, repo, ref, path, key, budget_mb):
            if set(key) <= set(frame.columns):
                import numpy as np

                chosen = frame[np.isin(key_hashes(frame, key), hashes)]
                rows |= set(canonical_keys(chosen, key).iter_rows())
        sides.append(rows)
    return sorted(sides[0] & sides[1], key=str)


def check_keys_across(store: VersionedStore, ds: DatasetConfig, repo: str, ref: str, new: Mapping[str, str],
                      others: Mapping[str, str], budget_mb: int) -> CheckOutcome | None:
    """No row of a new partition has a key another partition holds (partition key -> main table object); None
    when the partitions are not periods or there is nothing to compare."""

    if not ds.key or not new or not others or ds.partitions.pattern not in PERIOD_PATTERNS:
        return None
    bad = []
    for key, path in sorted(new.items()):
        mine = _hashes(store, repo, ref, path, ds.key, budget_mb)
        for other, other_path in sorted(others.items()):
            theirs = _hashes(store, repo, ref, other_path, ds.key, budget_mb)
            common = _common(mine, theirs)
            if not common.size:
                continue
            shared = _shared_keys(store, repo, ref, (path, other_path), ds.key, common, budget_mb)
            if shared:
                example = dict(zip(ds.key, shared[0], strict=True))
                bad.append(f"{len(shared)} rows of partition {key} have keys partition {other} already holds "
                           f"(key {ds.key}; e.g. {example})")
    if bad:
        return CheckOutcome("schema", False, "; ".join(bad), len(bad))
    return CheckOutcome("schema", True, f"no key of {_names(new)} in another partition")
