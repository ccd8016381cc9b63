"""group snapshot: a data version, recorded and validated; its checks block everything downstream."""

from collections.abc import Iterator

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.data.raw import raw_repo
from mlassets.core.data.snapshot import snapshot_version
from mlassets.core.data.version_keys import resolve_key
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import store_link, version_metadata
from mlassets.defs.partitions import blocking_check, data_versions
from mlassets.defs.resources import StoreResource

CHECKS = {
    "schema": "the config's schema on the partitions the version adds: types, ranges, dates, nullability "
              "(target non-null), allowed values, unique key",
    "min_rows": "every new partition holds at least dataset.min_rows rows",
    "row_change": "rows of each new partition within dataset.row_change_band of the mean of the others",
    "target_mean": "target mean of the new partitions within dataset.target_mean_band std of the others",
    "target_quantiles": "target quartiles of the new partitions within dataset.target_quantile_band IQR of the others",
}


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    versions = data_versions(cfg)
    specs = [blocking_check(n, keys.snapshot, versions, d) for n, d in CHECKS.items()]

    @dg.asset(
        key=keys.snapshot,
        partitions_def=versions,
        group_name="snapshot",
        deps=[dg.AssetDep(keys.raw, partition_mapping=dg.AllPartitionMapping())],
        check_specs=specs,
        kinds={"polars"},
    )
    def snapshot(context: dg.AssetExecutionContext, store: StoreResource) -> Iterator[object]:
        """The data version (a store commit) this partition reads, validated before anything trains on it."""
        backend = store.open()
        try:
            commit = resolve_key(backend, cfg, context.partition_key)
        except ValueError as exc:
            raise dg.Failure(str(exc)) from None
        report = snapshot_version(backend, cfg, commit)
        yield dg.Output(report, data_version=dg.DataVersion(report.commit), metadata={
            **version_metadata(backend, cfg, report.commit),
            "data_commit": report.commit,
            "parent_commit": report.parent,
            "partitions": ", ".join(report.partitions),
            "new_partitions": ", ".join(report.new_partitions),
            "rows": dg.MetadataValue.int(report.rows),
            "rows_per_partition": dg.MetadataValue.json(report.rows_per_partition),
            "store_uri": report.uri,
            "store_commit": store_link(backend, raw_repo(cfg), report.commit),
        })
        for outcome in report.outcomes:
            yield dg.AssetCheckResult(
                check_name=outcome.name,
                passed=outcome.passed,
                severity=dg.AssetCheckSeverity.ERROR,
                description=outcome.message,
                metadata={"failures": dg.MetadataValue.int(outcome.failures)},
            )

    return [snapshot]
