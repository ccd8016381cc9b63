"""group features: train / validation / holdout by time, from per-partition frames cached in the derived repository."""

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.datasets import raw_repo
from mlassets.core.feature_store import write_features
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import run_metadata
from mlassets.defs.partitions import data_versions
from mlassets.defs.resources import StoreResource


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    @dg.asset(key=keys.features, partitions_def=data_versions(cfg), group_name="features", deps=[keys.snapshot])
    def features(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
        """Joined rows of the version split by time; only new or changed partitions are computed again."""
        backend = store.open()
        result = write_features(backend, cfg, context.partition_key, run_metadata(context))
        data = backend.get_commit(raw_repo(cfg), result.data_version)
        return dg.MaterializeResult(
            metadata={
                "data_commit": result.data_version,
                "parent_commit": data.parents[0] if data.parents else "",
                "store_uri": dg.MetadataValue.url(backend.uri(raw_repo(cfg), result.data_version)),
                "features_commit": result.commit,
                "manifest_uri": dg.MetadataValue.url(result.manifest_uri),
                "partitions_computed": ", ".join(result.computed) or "none",
                "partitions_reused": ", ".join(result.reused) or "none",
                **{f"rows_{split}": dg.MetadataValue.int(n) for split, n in result.rows.items()},
            }
        )

    return [features]
