"""group snapshot: a data version, recorded and validated; its checks block everything downstream."""

from collections.abc import Iterator

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.snapshot import snapshot_version
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.partitions import data_versions
from mlassets.defs.resources import StoreResource

CHECKS = {
    "schema": "pandera schema of the config: types, ranges, nullability (target non-null), allowed values, key",
    "min_rows": "every month holds at least dataset.min_rows rows",
}


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    specs = [dg.AssetCheckSpec(n, asset=keys.snapshot, blocking=True, description=d) for n, d in CHECKS.items()]

    @dg.asset(
        key=keys.snapshot,
        partitions_def=data_versions(cfg),
        group_name="snapshot",
        deps=[dg.AssetDep(keys.raw, partition_mapping=dg.AllPartitionMapping())],
        check_specs=specs,
        kinds={"pandera"},
    )
    def snapshot(context: dg.AssetExecutionContext, store: StoreResource) -> Iterator[object]:
        """The data version (a store commit) this partition reads, validated before anything trains on it."""
        report = snapshot_version(store.open(), cfg, context.partition_key)
        yield dg.MaterializeResult(
            metadata={
                "data_commit": report.commit,
                "parent_commit": report.parent,
                "months": ", ".join(report.months),
                "rows": dg.MetadataValue.int(report.rows),
                "rows_per_month": dg.MetadataValue.json(report.rows_per_month),
                "store_uri": dg.MetadataValue.url(report.uri),
            }
        )
        for outcome in report.outcomes:
            yield dg.AssetCheckResult(
                check_name=outcome.name,
                passed=outcome.passed,
                severity=dg.AssetCheckSeverity.ERROR,
                description=outcome.message,
                metadata={"failures": dg.MetadataValue.int(outcome.failures)},
            )

    return [snapshot]
