"""Snapshot a data version: what it holds, and whether it may reach training (blocking checks).

The same checks gate ingestion (on the staged partition, before it reaches the watched branch) and the
``snapshot`` asset (on what the version adds to its parent: defense in depth, visible in the Dagster UI).
Their cost follows the new data, not the history: earlier partitions are read only through their summaries.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from mlassets.core.config import PipelineConfig
from mlassets.core.data.outcome import CheckOutcome
from mlassets.core.data.raw import changed_partitions, main_table, partition_objects, raw_repo
from mlassets.core.data.store import VersionedStore
from mlassets.core.data.summary import PREFIX as SUMMARY_PREFIX
from mlassets.core.data.summary import PartitionSummary, TargetStats, summarize_object, summary_path
from mlassets.core.records import Record

CHECK_NAMES = ("schema", "min_rows", "row_change", "target_mean", "target_quantiles")


@dataclass(frozen=True)
class VersionChecks:
    outcomes: list[CheckOutcome]
    rows_per_partition: dict[str, int]  # rows of the main table, from its one object per partition
    new_partitions: list[str]  # added or changed compared with the parent

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)

    def failures(self) -> list[str]:
        """One line per failed check: ``<check>: <message naming the column and an offending value>``."""
        return [f"{o.name}: {o.message}" for o in self.outcomes if not o.passed]


@dataclass(frozen=True, kw_only=True)
class Snapshot(Record):
    """A data version as the ``snapshot`` asset recorded it: what it holds and what its checks said."""

    commit: str
    parent: str
    partitions: list[str]
    rows: int
    rows_per_partition: dict[str, int]
    new_partitions: list[str]
    uri: str
    outcomes: list[CheckOutcome]

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)


def read_summaries(store: VersionedStore, cfg: PipelineConfig, ref: str,
                   paths: dict[str, str]) -> dict[str, PartitionSummary]:
    """Each partition's summary at ``ref``, written at ingestion; computed from the data where it is missing."""
    repo = raw_repo(cfg)
    stored = set(store.list_objects(repo, ref, prefix=SUMMARY_PREFIX))
    out = {}
    for key, path in paths.items():
        if summary_path(key) in stored:
            out[key] = PartitionSummary.from_json(store.read(repo, ref, summary_path(key)).decode())
        else:  # ingested before summaries existed
            out[key] = summarize_object(store, repo, ref, key, path, cfg.dataset)
    return out


def _schema(store: VersionedStore, cfg: PipelineConfig, ref: str, objects: dict[str, dict[str, str]]) -> CheckOutcome:
    """Every table of the partitions in ``objects`` against its schema; a declared table missing, or a table
    nobody declared, fails (a delivery never inherits a stale table, and nothing unvalidated lands). Each table's
    objects are scanned in budget-sized batches, as one table (``validate.scan_objects``); partitions that are time
    periods hold only their period's rows and no key of another partition (``periods``)."""
    from mlassets.core.data.periods import check_keys_across, check_periods
    from mlassets.core.data.schema import main_columns, merge_outcomes, table_rules, target_hint
    from mlassets.core.data.validate import scan_objects

    if not objects:
        return CheckOutcome("schema", True, "no new partitions: every earlier one was validated at ingestion")
    main, declared, repo, budget = main_table(cfg), cfg.dataset.tables, raw_repo(cfg), cfg.dataset.memory_budget_mb
    outcomes: list[CheckOutcome] = []
    paths: dict[str, list[str]] = {name: [] for name in [main, *declared]}
    for key, tables in objects.items():
        for name in sorted(set(tables) - {main} - set(declared)):
            outcomes.append(CheckOutcome("schema", False, f"table {name!r} in partition {key} is not declared in "
                                                          "dataset.tables (every table needs a schema)", 1))
        for name in sorted(set(declared) - set(tables)):
            outcomes.append(CheckOutcome("schema", False, f"table {name!r} is missing in partition {key} (it is "
                                                          "declared in dataset.tables)", 1))
        for name, path in tables.items():
            if name in paths:
                paths[name].append(path)
    rules = table_rules(main_columns(cfg.dataset), cfg.dataset.key)
    outcomes.append(target_hint(scan_objects(store, repo, ref, paths[main], rules, budget), cfg.dataset))
    for name, spec in declared.items():
        if paths[name]:
            outcomes.append(scan_objects(store, repo, ref, paths[name], table_rules(spec.columns, spec.key, name),
                                         budget))
    new = {k: t[main] for k, t in objects.items() if main in t}
    others = {k: t[main] for k, t in partition_objects(store, cfg, ref).items() if main in t and k not in new}
    for found in (check_periods(store, cfg.dataset, repo, ref, new, budget),
                  check_keys_across(store, cfg.dataset, repo, ref, new, others, budget)):
        if found is not None:
            outcomes.append(found)
    return merge_outcomes(outcomes)


def check_version(
    store: VersionedStore, cfg: PipelineConfig, ref: str, parent: str, scope: Collection[str] | None = None
) -> VersionChecks:
    """Every blocking check of the version at ``ref`` against ``parent``, reading only what is new.

    Schema and minimum rows cover the partitions in ``scope`` (default: those that changed since ``parent``,
    because every earlier commit was validated when it was ingested); row change and target distribution
    compare the changed partitions with the others through their summaries.
    """
    from mlassets.core.data.partition_checks import validate_row_change, validate_target_mean, validate_target_quantiles
    from mlassets.core.data.schema import validate_min_rows

    table = main_table(cfg)
    objects = partition_objects(store, cfg, ref)
    paths = {k: t[table] for k, t in objects.items() if table in t}
    new = [k for k in changed_partitions(store, cfg, ref, parent) if k in paths]
    scope = new if scope is None else [k for k in paths if k in scope]
    summaries = read_summaries(store, cfg, ref, paths)
    counts = {k: s.rows for k, s in summaries.items()}
    new_stats = TargetStats.merge([summaries[k].target for k in new])
    seen = [s.target for k, s in summaries.items() if k not in new]  # what derived target bands are read from
    ref_stats = TargetStats.merge(seen)
    others = {k: n for k, n in counts.items() if k not in scope}  # what a derived minimum is read from
    outcomes = [
        _schema(store, cfg, ref, {k: objects[k] for k in scope}),
        validate_min_rows({k: counts[k] for k in scope}, cfg.dataset, others),
        validate_row_change(counts, new, cfg.dataset, {k: s.days for k, s in summaries.items()}),
        validate_target_mean(new_stats, ref_stats, new, cfg.dataset, seen),
        validate_target_quantiles(new_stats, ref_stats, new, cfg.dataset, seen),
    ]
    return VersionChecks(outcomes, counts, new)


def snapshot_version(store: VersionedStore, cfg: PipelineConfig, commit: str) -> Snapshot:
    """Record the data version at ``commit`` and run every blocking check on what it adds to its parent."""
    repo = raw_repo(cfg)
    info = store.get_commit(repo, commit)
    parent = info.parents[0] if info.parents else ""
    checks = check_version(store, cfg, info.id, parent)
    return Snapshot(
        commit=info.id, parent=parent, partitions=list(checks.rows_per_partition),
        rows=sum(checks.rows_per_partition.values()), rows_per_partition=checks.rows_per_partition,
        new_partitions=checks.new_partitions, uri=store.uri(repo, info.id), outcomes=checks.outcomes,
    )
