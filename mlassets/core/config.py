"""Typed pipeline configuration, one dataclass per YAML section, loaded with clear errors.

Every error names the offending key path (``training.epochs``) and the value that was given.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
import zoneinfo
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml


class ConfigError(ValueError):
    """A configuration value is missing, unknown or of the wrong type."""


@dataclass(frozen=True)
class ColumnSpec:
    dtype: Literal["int", "float", "str", "datetime"]
    nullable: bool = False
    min: float | None = None
    max: float | None = None
    allowed: list[str] | None = None


@dataclass(frozen=True)
class DatasetConfig:
    name: str
    source: str
    target: str
    time_column: str
    key: list[str]
    slices: list[str]
    months: list[str]
    columns: dict[str, ColumnSpec]
    min_rows: int = 1000  # per month
    sample_fraction: float = 1.0  # < 1: a deterministic sample of each month (tests, quick demos)


@dataclass(frozen=True)
class FeaturesConfig:
    categorical: list[str]
    numeric: list[str]
    holdout_days: int = 7
    validation_days: int = 7
    train_window_months: int = 12
    timezone: str = "UTC"  # days for the time split are counted in this zone


@dataclass(frozen=True)
class ModelConfig:
    registered_name: str
    embedding_dim: int = 8
    hidden: list[int] = field(default_factory=lambda: [64, 32])
    dropout: float = 0.0


@dataclass(frozen=True)
class TrainingConfig:
    epochs: int = 4
    batch_size: int = 512
    lr: float = 0.003
    weight_decay: float = 0.0
    loss: Literal["l1", "mse", "huber"] = "l1"
    seed: int = 42
    threads: int = 1
    nproc: int = 1


@dataclass(frozen=True)
class GateConfig:
    main_metric: Literal["mae", "rmse"] = "mae"
    tolerance: float = 0.01
    slice_min_rows: int = 200
    slice_max_regression: float = 0.03
    bootstrap_samples: int = 1000
    confidence: float = 0.95
    absolute_max_metric: float = 60.0
    prediction_min: float = -200.0
    prediction_max: float = 1500.0
    promotion: Literal["auto", "manual"] = "auto"


@dataclass(frozen=True)
class PipelineConfig:
    dataset: DatasetConfig
    features: FeaturesConfig
    model: ModelConfig
    training: TrainingConfig
    gate: GateConfig

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def config_hash(self) -> str:
        """sha256 of the canonical JSON form: equal configs hash equal whatever the YAML layout."""
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _coerce(tp: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(inner[0], value, path)
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{path}: {_describe(value)} is not one of {list(args)}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{path}: expected a list, got {_describe(value)}")
        return [_coerce(args[0], v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping, got {_describe(value)}")
        return {str(k): _coerce(args[1], v, f"{path}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, path)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected true/false, got {_describe(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected an integer, got {_describe(value)}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{path}: expected a number, got {_describe(value)}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: expected a string, got {_describe(value)}")
        return value
    raise ConfigError(f"{path}: unsupported type {tp}")  # pragma: no cover - schema bug


def _build(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{path or 'config'}: expected a mapping, got {_describe(data)}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        where = f"{path}.{unknown[0]}" if path else unknown[0]
        raise ConfigError(f"{where}: unknown key (allowed: {', '.join(sorted(names))})")
    kwargs = {}
    for f in dataclasses.fields(cls):
        key = f"{path}.{f.name}" if path else f.name
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{key}: required key is missing")
            continue
        kwargs[f.name] = _coerce(hints[f.name], data[f.name], key)
    return cls(**kwargs)


def _check(cfg: PipelineConfig) -> None:
    ds, feats = cfg.dataset, cfg.features
    for name in [ds.target, ds.time_column, *ds.key, *ds.slices]:
        if name not in ds.columns:
            raise ConfigError(f"dataset.columns: column {name!r} is used but not declared")
    for section, cols in (("categorical", feats.categorical), ("numeric", feats.numeric)):
        if ds.target in cols:
            raise ConfigError(f"features.{section}: the target {ds.target!r} cannot be a feature")
    positive = {
        "features.holdout_days": feats.holdout_days,
        "features.validation_days": feats.validation_days,
        "features.train_window_months": feats.train_window_months,
        "training.epochs": cfg.training.epochs,
        "training.batch_size": cfg.training.batch_size,
        "training.threads": cfg.training.threads,
        "training.nproc": cfg.training.nproc,
        "dataset.min_rows": ds.min_rows,
    }
    for key, value in positive.items():
        if value < 1:
            raise ConfigError(f"{key}: must be >= 1, got {value}")
    overlap = sorted(set(feats.categorical) & set(feats.numeric))
    if overlap:
        raise ConfigError(f"features: column {overlap[0]!r} is both categorical and numeric")
    if not feats.categorical and not feats.numeric:
        raise ConfigError("features: no categorical and no numeric features")
    if cfg.training.lr <= 0 or cfg.training.weight_decay < 0:
        raise ConfigError(f"training.lr / weight_decay: need lr > 0 and weight_decay >= 0, got "
                          f"{cfg.training.lr} / {cfg.training.weight_decay}")
    if not 0 <= cfg.model.dropout < 1:
        raise ConfigError(f"model.dropout: must be in [0, 1), got {cfg.model.dropout}")
    if cfg.model.embedding_dim < 1 or any(h < 1 for h in cfg.model.hidden):
        raise ConfigError(f"model.embedding_dim / hidden: sizes must be >= 1, got {cfg.model.embedding_dim} / "
                          f"{cfg.model.hidden}")
    if cfg.training.nproc != 1:  # the training process runs one rank for now
        raise ConfigError(f"training.nproc: {cfg.training.nproc} ranks are not supported yet; use 1")
    try:
        zoneinfo.ZoneInfo(feats.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"features.timezone: {feats.timezone!r} is not a known time zone") from None
    if not 0 < ds.sample_fraction <= 1:
        raise ConfigError(f"dataset.sample_fraction: must be in (0, 1], got {ds.sample_fraction}")
    if not ds.name.replace("_", "").isalnum() or not ds.name[0].isalpha():
        raise ConfigError(f"dataset.name: {ds.name!r} must be letters, digits and '_', starting with a letter")


def parse_config(data: Any) -> PipelineConfig:
    cfg = _build(PipelineConfig, data, "")
    _check(cfg)
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


CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


def shipped_configs() -> dict[str, Path]:
    """The dataset configs shipped with the package, by file stem."""
    return {p.stem: p for p in sorted(CONFIG_DIR.glob("*.yaml"))}
