"""group data: each partition of raw data, validated on a short-lived branch, then merged into the watched branch."""

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.datasets import (
    LabelCorruption,
    corrupt_training_labels,
    main_table,
    month_tables,
    raw_repo,
    tables_from_dir,
)
from mlassets.core.ingest import DataRejected, ingest_month
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import run_metadata
from mlassets.defs.partitions import data_versions, months
from mlassets.defs.resources import StoreResource


class IngestConfig(dg.Config):
    """Where the partition's tables come from, and fault injection for demos and tests (off by default)."""

    tables_dir: str = ""  # load <table>.parquet files from here instead of the source (a delivered file, a replay)
    corrupt_slice: str = ""  # e.g. "carrier=EV": shift that slice's training labels
    corrupt_shift: float = 0.0


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    versions = data_versions(cfg)

    @dg.asset(key=keys.raw, partitions_def=months(cfg), group_name="data", kinds={"parquet"})
    def raw(context: dg.AssetExecutionContext, config: IngestConfig, store: StoreResource) -> dg.MaterializeResult:
        """One partition of source data, validated before it reaches the watched branch; its commit is a new
        data version. Fails, naming every failed check, with the watched branch unchanged."""
        key = context.partition_key
        tables = tables_from_dir(config.tables_dir) if config.tables_dir else month_tables(cfg, key)
        if config.corrupt_slice:
            corruption = LabelCorruption.parse(config.corrupt_slice, config.corrupt_shift)
            main = main_table(cfg)
            tables = {**tables, main: corrupt_training_labels(tables[main], cfg, corruption)}
            context.log.warning(f"fault injection: {corruption} in {key}")
        backend = store.open()
        try:
            ingested = ingest_month(backend, cfg, key, tables, run_metadata(context))
        except DataRejected as exc:
            raise dg.Failure(
                description=str(exc),
                metadata={"partition": key, "failed_checks": ", ".join(o.name for o in exc.outcomes if not o.passed)},
            ) from None
        context.instance.add_dynamic_partitions(versions.name, [ingested.commit.id])
        return dg.MaterializeResult(
            data_version=dg.DataVersion(ingested.commit.id),
            metadata={
                "data_commit": ingested.commit.id,
                "parent_commit": ingested.parent,
                "staged_commit": ingested.staged,
                "rows": dg.MetadataValue.int(sum(ingested.rows.values())),
                **{f"rows_{table}": dg.MetadataValue.int(n) for table, n in ingested.rows.items()},
                "store_uri": dg.MetadataValue.url(backend.uri(raw_repo(cfg), ingested.commit.id)),
                "checks": dg.MetadataValue.md("\n".join(f"- {o.name}: {o.message}" for o in ingested.outcomes)),
                "fault_injection": config.corrupt_slice or "none",
            },
        )

    return [raw]
