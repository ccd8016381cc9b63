"""The pipeline config: typed sections (``schema``), every cross-field rule (``checks``), YAML reading (``load``).

A dataset is one YAML file; ``load_config`` reads it strictly (unknown keys, wrong types and every broken rule
fail at load, naming the key path and the value), so nothing is found wrong after an asset has run.
"""

from mlassets.core.config.load import (
    CONFIG_DIR,
    CONFIGS_ENV,
    config_paths,
    load_config,
    parse_config,
    resolve_config,
    save_config,
    shipped_configs,
)
from mlassets.core.config.schema import (
    AutomationConfig,
    ColumnSpec,
    DatasetConfig,
    FaultConfig,
    FeaturesConfig,
    GateConfig,
    ModelConfig,
    MonitoringConfig,
    PartitionsConfig,
    PipelineConfig,
    ProfileConfig,
    TableConfig,
    TrainingConfig,
    TuningConfig,
    canonical_hash,
)
from mlassets.core.config.typed import ConfigError

__all__ = [
    "AutomationConfig", "MonitoringConfig", "TuningConfig",
    "CONFIG_DIR", "ColumnSpec", "ConfigError", "DatasetConfig", "FaultConfig", "FeaturesConfig", "GateConfig",
    "ModelConfig", "PartitionsConfig", "PipelineConfig", "ProfileConfig", "TableConfig", "TrainingConfig",
    "CONFIGS_ENV", "canonical_hash", "config_paths", "load_config", "parse_config", "resolve_config",
    "save_config", "shipped_configs",
]
