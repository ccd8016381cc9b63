"""Readable names for data versions: the partitions a version added and a short id, ``2013-03 · 6870220f``.

The full commit id stays the key everywhere (partitions, records, tags); a name is only what people read.
"""

from __future__ import annotations

from collections.abc import Sequence

SEPARATOR = " · "
SHORT_ID = 8  # hex digits of the commit id in a name
MOST_PARTITIONS = 3  # named one by one; more are counted


def short_id(data_version: str) -> str:
    """The first ``SHORT_ID`` characters of a data version (a store commit id)."""
    return data_version[:SHORT_ID]


def version_label(partitions: Sequence[str], data_version: str) -> str:
    """``2013-03 · 6870220f``: the partitions the version added (the first few, then a count) and its short id;
    the short id alone when it added none that are known."""
    named = [p for p in partitions if p]
    if not named:
        return short_id(data_version)
    shown = ", ".join(named[:MOST_PARTITIONS])
    if len(named) > MOST_PARTITIONS:
        shown += f" +{len(named) - MOST_PARTITIONS} more"
    return f"{shown}{SEPARATOR}{short_id(data_version)}"


def run_name(dataset: str, label: str) -> str:
    """An MLflow run's name: ``flights · 2013-03 · 6870220f``."""
    return f"{dataset}{SEPARATOR}{label}"


def asset_path(dataset: str, asset: str) -> list[str]:
    """An asset's key path in a dataset's graph (``["flights", "gate_result"]``; the raw data is ``raw_<dataset>``),
    which is also where its records are kept: without Dagster, for commands that only read."""
    return [dataset, f"raw_{dataset}" if asset == "raw" else asset]
