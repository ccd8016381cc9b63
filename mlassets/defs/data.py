"""group data: each partition of raw data, validated in a store transaction, then landed on the watched branch."""

import dataclasses
import tempfile
from contextlib import nullcontext
from pathlib import Path

import dagster as dg

from mlassets.core.automation.landing import read_unchanged
from mlassets.core.config import PipelineConfig
from mlassets.core.data.ingest import DataRejected, Ingested, ingest_partition
from mlassets.core.data.raw import check_partition_key, main_table, partition_tables, raw_repo, stage_tables
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import run_metadata, store_link, version_metadata
from mlassets.defs.partitions import data_versions, raw_partitions
from mlassets.defs.resources import StoreResource


class IngestConfig(dg.Config):
    """Where the partition's tables come from, and fault injection for demos and tests (off by default)."""

    delivered: str = ""  # a delivered file, or a folder of <table> files, instead of the source (a replay, a test)
    delivered_sha256: str = ""  # its fingerprint when the landing sensor found it whole: read only if still so
    corrupt_slice: str = ""  # e.g. "carrier=EV": shift that slice's training labels
    corrupt_shift: float = 0.0


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    versions = data_versions(cfg)

    @dg.asset(key=keys.raw, partitions_def=raw_partitions(cfg), group_name="data", kinds={"parquet"})
    def raw(context: dg.AssetExecutionContext, config: IngestConfig, store: StoreResource) -> dg.Output[Ingested]:
        """One partition of source data, validated before it reaches the watched branch; its commit is a new
        data version. Fails, naming every failed check, with the watched branch unchanged."""
        from mlassets.core.data.corruption import LabelCorruption, corrupt_training_labels

        try:
            key = check_partition_key(cfg, context.partition_key)
        except ValueError as exc:
            raise dg.Failure(str(exc)) from None
        work = tempfile.TemporaryDirectory(prefix="mlassets-ingest-")  # the staged tables, streamed to the store
        guard = read_unchanged(config.delivered, config.delivered_sha256, key) if config.delivered else nullcontext()
        try:
            notes: list[str] = []
            with guard:  # the delivery the sensor found whole, unchanged while read; else nothing is written
                tables = (partition_tables(cfg, key, config.delivered or None, notes) if config.corrupt_slice
                          else stage_tables(cfg, key, Path(work.name), config.delivered or None, notes))
        except (ValueError, OSError) as exc:  # an unreadable delivery: named, and nothing was written
            work.cleanup()
            raise dg.Failure(description=f"partition {key} was not ingested: {exc}") from None
        if config.corrupt_slice:
            corruption = LabelCorruption.parse(config.corrupt_slice, config.corrupt_shift)
            main = main_table(cfg)
            tables = {**tables, main: corrupt_training_labels(tables[main], cfg, corruption)}
            context.log.warning(f"fault injection: {corruption} in {key}")
        backend = store.open()
        try:
            ingested = ingest_partition(backend, cfg, key, tables, run_metadata(context))
        except DataRejected as exc:
            raise dg.Failure(
                description=str(exc),
                metadata={"partition": key, "failed_checks": ", ".join(o.name for o in exc.outcomes if not o.passed)},
            ) from None
        finally:
            work.cleanup()
        ingested = dataclasses.replace(ingested, notes=notes)
        if ingested.created:
            context.instance.add_dynamic_partitions(versions.name, [ingested.key])
        context.log.info(ingested.message)
        for note in notes:
            context.log.warning(note)
        return dg.Output(ingested, data_version=dg.DataVersion(ingested.data_version), metadata={
            **version_metadata(backend, cfg, ingested.data_version),
            "data_commit": ingested.data_version,
            "new_data_version": ingested.created,
            "parent_commit": ingested.parent,
            "rows": dg.MetadataValue.int(sum(ingested.rows.values())),
            **{f"rows_{table}": dg.MetadataValue.int(n) for table, n in ingested.rows.items()},
            "store_uri": backend.uri(raw_repo(cfg), ingested.data_version),
            "store_commit": store_link(backend, raw_repo(cfg), ingested.data_version),
            "checks": dg.MetadataValue.md("\n".join(f"- {o.name}: {o.message}" for o in ingested.checks)
                                          or ingested.message),
            "fault_injection": config.corrupt_slice or "none",
            "notes": dg.MetadataValue.md("\n".join(f"- {n}" for n in notes) or "none"),
        })

    return [raw]
