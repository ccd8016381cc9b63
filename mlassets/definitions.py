"""The Dagster ``Definitions`` of mlassets: one asset graph per shipped dataset config."""

from __future__ import annotations

import dagster as dg

from mlassets.core.config import PipelineConfig, load_config, shipped_configs
from mlassets.defs.factory import dataset_defs
from mlassets.defs.resources import default_resources


def build_definitions(configs: list[PipelineConfig]) -> dg.Definitions:
    return dg.Definitions.merge(*(dataset_defs(c) for c in configs), dg.Definitions(resources=default_resources()))


defs = build_definitions([load_config(p) for p in shipped_configs().values()])
