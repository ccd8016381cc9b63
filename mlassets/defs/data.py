"""group data: each month of raw data committed to the watched branch of the versioned store."""


import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.datasets import (
    LabelCorruption,
    corrupt_training_labels,
    ingest_month,
    month_tables,
    raw_repo,
)
from mlassets.core.snapshot import main_table
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import run_metadata
from mlassets.defs.partitions import data_versions, months
from mlassets.defs.resources import StoreResource


class IngestConfig(dg.Config):
    """Fault injection for demos and tests, off by default: shift one slice's training labels."""

    corrupt_slice: str = ""  # e.g. "carrier=EV"
    corrupt_shift: float = 0.0


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    versions = data_versions(cfg)

    @dg.asset(key=keys.raw, partitions_def=months(cfg), group_name="data", kinds={"parquet"})
    def raw(context: dg.AssetExecutionContext, config: IngestConfig, store: StoreResource) -> dg.MaterializeResult:
        """One month of source data, committed as one commit; its id is a new data version."""
        tables = month_tables(cfg, context.partition_key)
        if config.corrupt_slice:
            corruption = LabelCorruption.parse(config.corrupt_slice, config.corrupt_shift)
            main = main_table(cfg)
            tables = {**tables, main: corrupt_training_labels(tables[main], cfg, corruption)}
            context.log.warning(f"fault injection: {corruption} in {context.partition_key}")
        backend = store.open()
        commit = ingest_month(backend, cfg, context.partition_key, tables, run_metadata(context))
        context.instance.add_dynamic_partitions(versions.name, [commit.id])
        return dg.MaterializeResult(
            metadata={
                "data_commit": commit.id,
                "parent_commit": commit.parents[0] if commit.parents else "",
                "rows": dg.MetadataValue.int(sum(len(t) for t in tables.values())),
                "store_uri": dg.MetadataValue.url(backend.uri(raw_repo(cfg), commit.id)),
                "fault_injection": config.corrupt_slice or "none",
            }
        )

    return [raw]
