"""Typed pipeline configuration, one dataclass per YAML section, loaded with clear errors.

Every error names the offending key path (``training.epochs``) and the value that was given.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import zoneinfo
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from mlassets.core._typed import ConfigError, build

__all__ = ["ConfigError", "PipelineConfig", "load_config", "parse_config", "shipped_configs"]


@dataclass(frozen=True)
class ColumnSpec:
    dtype: Literal["int", "float", "str", "datetime"]
    nullable: bool = False
    min: float | None = None
    max: float | None = None
    allowed: list[str] | None = None
    min_date: str | None = None  # datetime columns: inclusive ISO bounds, read as UTC ("2013-01-01")
    max_date: str | None = None

    def __post_init__(self) -> None:
        import datetime

        for name in ("min_date", "max_date"):
            value = getattr(self, name)
            if value is None:
                continue
            if self.dtype != "datetime":
                raise ConfigError(f"{name}: only datetime columns take date bounds, this one is {self.dtype!r}")
            try:
                datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                raise ConfigError(f"{name}: {value!r} is not an ISO date or time") from None


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
    task: Literal["regression", "binary"] = "regression"  # binary: the target is 0/1, models give P(1)
    min_rows: int = 1000  # per month
    sample_fraction: float = 1.0  # < 1: a deterministic sample of each month (tests, quick demos)
    # Blocking count and distribution checks of new partitions against the rest of the version:
    row_change_band: float = 0.5  # rows of a new partition within +-50% of the mean of the others
    target_mean_band: float = 0.5  # |mean - reference mean| <= band * reference std
    target_quantile_band: float = 0.5  # quartiles: |q - reference q| <= band * reference IQR

    def __post_init__(self) -> None:
        for name in ("row_change_band", "target_mean_band", "target_quantile_band"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"dataset.{name}: must be > 0, got {getattr(self, name)}")


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
class FaultConfig:
    """Fault injection for tests, demos and the dashboard; everything off by default."""

    slow_loader_ms: float = 0.0  # added to every batch fetch, every rank
    slow_rank: int = -1  # this rank sleeps slow_rank_ms per step
    slow_rank_ms: float = 0.0
    allreduce_delay_ms: float = 0.0  # added inside the gradient all-reduce
    heavy_compute: int = 0  # extra matmuls per step
    crash_at_step: int = -1  # raise at this global step (once per run directory)
    crash_rank: int = 0  # the rank that crashes at crash_at_step; -1: every rank


@dataclass(frozen=True)
class TrainingConfig:
    epochs: int = 4
    batch_size: int = 512  # global batch, split across ranks
    lr: float = 0.003
    weight_decay: float = 0.0
    loss: Literal["auto", "l1", "mse", "huber", "bce"] = "auto"  # auto: l1 for regression, bce for binary
    seed: int = 42
    threads: int = 1  # per rank
    nproc: int = 1  # ranks on this node (torchrun --nproc-per-node)
    backend: Literal["auto", "gloo", "nccl"] = "auto"  # auto: nccl on CUDA, gloo on CPU
    precision: Literal["fp32", "bf16"] = "fp32"  # bf16 autocast on GPU only
    sharding: Literal["ddp", "fsdp"] = "ddp"  # fsdp: FSDP2 fully_shard, sharded checkpoints
    checkpoint_every_steps: int = 0  # 0: at the end of every epoch only
    checkpoint_every_minutes: float = 0.0
    keep_last: int = 2  # checkpoints kept in the working area, plus the best
    async_checkpoint: bool = True
    collective_timeout_s: int = 120
    telemetry_every_steps: int = 50  # aggregates to MLflow this often
    faults: FaultConfig = field(default_factory=FaultConfig)
    lr_schedule: Literal["constant", "cosine"] = "constant"  # cosine: decays to 0 over all steps
    retries: int = 1  # Dagster retries of the training step; each attempt resumes from the newest checkpoint


@dataclass(frozen=True)
class GateConfig:
    main_metric: Literal["mae", "rmse", "logloss", "brier"] = "mae"  # logloss/brier: binary task
    tolerance: float = 0.01
    slice_min_rows: int = 200
    slice_max_regression: float = 0.03
    bootstrap_samples: int = 1000
    confidence: float = 0.95
    absolute_max_metric: float = 60.0
    latency_p99_ms: float = 50.0  # single-row p99 budget
    max_size_mb: float = 100.0  # serialized model budget
    calibration_max_ece: float = 0.05  # binary task only
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
        return canonical_hash(self.to_dict())


def canonical_hash(data: dict[str, Any]) -> str:
    """sha256 of a config dict as recorded (``to_dict()``), independent of the code reading it later."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


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
    if cfg.training.keep_last < 1:
        raise ConfigError(f"training.keep_last: must be >= 1, got {cfg.training.keep_last}")
    try:
        zoneinfo.ZoneInfo(feats.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"features.timezone: {feats.timezone!r} is not a known time zone") from None
    if not 0 < ds.sample_fraction <= 1:
        raise ConfigError(f"dataset.sample_fraction: must be in (0, 1], got {ds.sample_fraction}")
    if not ds.name.replace("_", "").isalnum() or not ds.name[0].isalpha():
        raise ConfigError(f"dataset.name: {ds.name!r} must be letters, digits and '_', starting with a letter")


def parse_config(data: Any) -> PipelineConfig:
    cfg = build(PipelineConfig, data, "")
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
