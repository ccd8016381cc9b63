"""The Dagster ``Definitions`` of mlassets: one asset graph per dataset config found (``$MLASSETS_CONFIGS``: files
or folders of them; else the configs registered in ``$MLASSETS_HOME/configs``; else the shipped ones)."""

from __future__ import annotations

import os

import dagster as dg

from mlassets.core.config import PipelineConfig, config_paths, load_config
from mlassets.defs.alerts import failure_sensor
from mlassets.defs.factory import dataset_defs
from mlassets.defs.resources import default_resources

_BUILT: dict[tuple, dg.Definitions] = {}
_ENV = ("MLASSETS_HOME", "MLASSETS_CONFIGS", "MLASSETS_PROFILE", "MLASSETS_STORE", "DAGSTER_HOME",
        "MLFLOW_TRACKING_URI")


def build_definitions(configs: list[PipelineConfig]) -> dg.Definitions:
    shared = dg.Definitions(resources=default_resources(), sensors=[failure_sensor(configs)])
    return dg.Definitions.merge(*(dataset_defs(c) for c in configs), shared)


@dg.definitions
def defs() -> dg.Definitions:
    """Built when loaded (``dagster dev``, the daemon, each run), from the configs found then; a process that runs
    many jobs (the CLI, the demo) builds them once for as long as the configs and the settings stay the same."""
    paths = config_paths()
    key = (tuple((str(p), p.read_bytes()) for p in paths), tuple(os.environ.get(v) for v in _ENV))
    if key not in _BUILT:
        _BUILT.clear()
        _BUILT[key] = build_definitions([load_config(p) for p in paths])
    return _BUILT[key]
