"""(being built)"""

import dagster as dg

from mlassets.core.config import PipelineConfig
from mlassets.defs.keys import DatasetKeys


def build(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.AssetsDefinition]:
    return []


def automation(cfg: PipelineConfig, keys: DatasetKeys) -> list[dg.SensorDefinition | dg.ScheduleDefinition]:
    return []
