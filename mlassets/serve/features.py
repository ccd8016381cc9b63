"""Feature retrieval at request time: a row may give a table's key instead of the columns the model takes from it.

The dataset config's other tables (``dataset.tables``, e.g. flights' ``weather`` keyed by ``origin`` and
``time_hour``) are the features store: the columns of such a table that the model takes (``precip``, ``visib``,
``wind_speed``) are looked up by its key in the newest data version of the watched branch, the same rows the
source's join gave training (``build_frame``: the weather at the origin and the scheduled hour). A row that holds
the key columns the model does not take itself (``time_hour``) is a lookup row; a key the store does not hold is
a 422 naming it. The index is read at start and again when the branch moves (``refresh``, from the poll thread).
The endpoint runs ``fill`` on a thread pool of its own, so a slow lookup delays only its own request.
``MLASSETS_FEATURE_DELAY_MS`` adds that many milliseconds to every lookup (a slow features store, for tests and
drills).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mlassets.core.config import PipelineConfig
from mlassets.core.data import raw
from mlassets.core.data.store import VersionedStore
from mlassets.serve.rows import BadRequest, Schema, shown

LOG = logging.getLogger("mlassets.serve")
DELAY_ENV = "MLASSETS_FEATURE_DELAY_MS"


@dataclass(frozen=True)
class Table:
    """One table to look up: its name, key columns, the model's columns it gives, and the key columns a request
    adds for it (those the model does not take itself)."""

    name: str
    key: list[str]
    columns: list[str]
    extra_keys: list[str]


def tables_for(cfg: PipelineConfig | None, schema: Schema) -> list[Table]:
    """The config's keyed tables that give some of the model's columns (none: retrieval is off)."""
    if cfg is None:
        return []
    out = []
    for name, table in cfg.dataset.tables.items():
        given = [c for c in schema.columns if c in table.columns and c not in table.key]
        if table.key and given:
            out.append(Table(name, list(table.key), given, [k for k in table.key if k not in schema.columns]))
    return out


def _key_value(value: Any, column: str, row: int, dtype: str) -> Any:
    if dtype == "datetime":
        try:
            moment = pd.Timestamp(value)
        except (ValueError, TypeError):
            raise BadRequest(422, f"row {row}: key {column!r} must be a time (ISO 8601), got {shown(value)}") from None
        if pd.isna(moment):
            raise BadRequest(422, f"row {row}: key {column!r} may not be missing")
        return (moment.tz_localize("UTC") if moment.tzinfo is None else moment.tz_convert("UTC")).value
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        raise BadRequest(422, f"row {row}: key {column!r} must be a string or a number, got {shown(value)}")
    return value


class FeatureLookup:
    """The index of each table (key tuple -> the model's columns) at one commit of the watched branch."""

    def __init__(self, store: VersionedStore, cfg: PipelineConfig, tables: list[Table], delay_ms: float = 0.0) -> None:
        self.store, self.cfg, self.tables, self.delay_ms = store, cfg, tables, delay_ms
        self.repo = raw.raw_repo(cfg)
        self.commit = ""
        self._index: dict[str, dict[tuple, tuple]] = {}
        self._lock = threading.Lock()
        self._dtypes = {t.name: {k: cfg.dataset.tables[t.name].columns[k].dtype for k in t.key} for t in tables}
        self.refresh()

    @property
    def extra_columns(self) -> set[str]:
        return {k for t in self.tables for k in t.extra_keys}

    def refresh(self) -> bool:
        """Re-read the tables when the watched branch moved; whether it did."""
        head = self.store.resolve(self.repo, raw.WATCHED_BRANCH)
        if head == self.commit:
            return False
        index = {}
        for table in self.tables:
            frame = raw.read_table(self.store, self.cfg, head, table.name)
            keys = [frame[k] for k in table.key]
            keys = [pd.to_datetime(k, utc=True).astype("int64") if self._dtypes[table.name][c] == "datetime" else k
                    for k, c in zip(keys, table.key, strict=True)]
            values = frame[table.columns].astype("float64", errors="ignore")
            index[table.name] = dict(zip(zip(*keys, strict=True), values.itertuples(index=False, name=None),
                                         strict=True))
        with self._lock:
            self._index, self.commit = index, head
        LOG.warning("feature retrieval: %s at %s@%s", ", ".join(f"{t.name} ({len(index[t.name])} rows)"
                                                              for t in self.tables), self.repo, head[:12])
        return True

    def fill(self, records: list[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], int]:
        """The rows with looked-up columns filled in (key columns the model does not take dropped), and how many
        rows were looked up; a ``BadRequest`` naming a key the store does not hold."""
        with self._lock:
            index = self._index
        out, looked = [], 0
        for i, row in enumerate(records):
            tables = [t for t in self.tables if any(k in row for k in t.extra_keys)]
            if not tables:
                out.append(row)
                continue
            filled = dict(row)
            for table in tables:
                given = [c for c in table.columns if c in row]
                if given:
                    raise BadRequest(422, f"row {i}: give {', '.join(map(repr, table.extra_keys))} (looked up in "
                                          f"{table.name}) or {given[0]!r}, not both")
                missing = [k for k in table.key if k not in row]
                if missing:
                    raise BadRequest(422, f"row {i}: missing key column {missing[0]!r} to look up {table.name}")
                dtypes = self._dtypes[table.name]
                key = tuple(_key_value(row[k], k, i, dtypes[k]) for k in table.key)
                found = index[table.name].get(key)
                if found is None:
                    named = ", ".join(f"{k}={row[k]!r}" for k in table.key)
                    raise BadRequest(422, f"row {i}: no {table.name} row for {named} in the features store "
                                          f"({self.repo}@{self.commit[:12]})")
                filled.update({c: None if isinstance(v, float) and np.isnan(v) else v
                               for c, v in zip(table.columns, found, strict=True)})
                for k in table.extra_keys:
                    filled.pop(k, None)
            looked += 1
            out.append(filled)
        if looked and self.delay_ms:
            time.sleep(self.delay_ms / 1000)
        return out, looked


def lookup_for(cfg: PipelineConfig | None, schema: Schema, store: VersionedStore | None = None) \
        -> FeatureLookup | None:
    """The endpoint's lookup, or None (no keyed table gives a model column, or the store has no data yet)."""
    tables = tables_for(cfg, schema)
    if not tables or cfg is None:
        return None
    from mlassets.core.data.store import open_store

    delay = delay_ms()
    try:
        return FeatureLookup(store or open_store(), cfg, tables, delay)
    except Exception as exc:  # noqa: BLE001 - no data ingested yet: the endpoint serves full rows only
        LOG.warning("feature retrieval is off: %s", exc)
        return None


def delay_ms() -> float:
    """``MLASSETS_FEATURE_DELAY_MS`` (0 when unset); a ``ValueError`` naming it for a value that is no number >= 0."""
    text = os.environ.get(DELAY_ENV, "").strip()
    try:
        value = float(text) if text else 0.0
    except ValueError:
        value = -1.0
    if not 0 <= value <= 60_000:
        raise ValueError(f"{DELAY_ENV}: must be a number of milliseconds between 0 and 60000, got {text!r}")
    return value
