"""Reading a pipeline config: YAML (``yaml.safe_load``) into the typed sections, then every rule.

Every error names the offending key path (``training.epochs``) and the value that was given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mlassets.core.config._typed import ConfigError, build
from mlassets.core.config.rules import check
from mlassets.core.config.schema import PipelineConfig


def parse_config(data: Any) -> PipelineConfig:
    cfg = build(PipelineConfig, data, "")
    check(cfg)
    return cfg


def load_config(path: str | Path) -> PipelineConfig:
    """Load and validate a pipeline config from a YAML file (``yaml.safe_load``)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    try:
        return parse_config(data)
    except ConfigError as exc:
        raise ConfigError(f"{path.name}: {exc}") from None


CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


def shipped_configs() -> dict[str, Path]:
    """The dataset configs shipped with the package, by file stem."""
    return {p.stem: p for p in sorted(CONFIG_DIR.glob("*.yaml"))}
