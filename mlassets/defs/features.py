"""group features: train / validation / holdout splits by time, stored in the derived repository."""

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.core.feature_store import write_features
from mlassets.defs.keys import DatasetKeys
from mlassets.defs.lookup import run_metadata
from mlassets.defs.partitions import data_versions
from mlassets.defs.resources import StoreResource


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    @dg.asset(key=keys.features, partitions_def=data_versions(cfg), group_name="features", deps=[keys.snapshot])
    def features(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
        """Joined rows of the version split by time; each model fits its own preprocessing on train."""
        result = write_features(store.open(), cfg, context.partition_key, run_metadata(context))
        return dg.MaterializeResult(
            metadata={
                "data_commit": result.data_version,
                "features_commit": result.commit,
                **{f"rows_{split}": dg.MetadataValue.int(n) for split, n in result.rows.items()},
                **{f"uri_{split}": dg.MetadataValue.url(uri) for split, uri in result.uris.items()},
            }
        )

    return [features]
