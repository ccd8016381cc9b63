"""Every rule of a config fails at load, naming the key path and the value (each section's own ranges beside its
fields, what reads several sections in mlassets/core/config/checks.py)."""

from __future__ import annotations

import math

import pytest
import yaml

from mlassets.core.config import ConfigError, FaultConfig, TrainingConfig, parse_config, shipped_configs


def _config(name: str = "flights") -> dict:
    return yaml.safe_load(shipped_configs()[name].read_text())


def _set(data: dict, path: str, value: object) -> dict:
    *parents, leaf = path.split(".")
    node = data
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    return data


FOUND_ACCEPTED = [  # (key path, value, what the error must say): each was accepted before these rules
    ("training.loss", "bce", "training.loss: 'bce' does not fit dataset.task 'regression'"),
    ("training.checkpoint_every_steps", -5, "training.checkpoint_every_steps: must be >= 0, got -5"),
    ("training.collective_timeout_s", 0, "training.collective_timeout_s: must be >= 1, got 0"),
    ("gate.main_metric", "logloss", "gate.main_metric: 'logloss' does not fit dataset.task 'regression'"),
    ("gate.tolerance", -0.5, "gate.tolerance: must be >= 0, got -0.5"),
    ("gate.bootstrap_samples", 0, "gate.bootstrap_samples: must be >= 1, got 0"),
    ("gate.confidence", 2, "gate.confidence: must be between 0 and 1 (e.g. 0.95), got 2.0"),
    ("gate.prediction_min", 2000, "gate.prediction_min: 2000 must be below gate.prediction_max 1500"),
    ("gate.slice_min_rows", -10, "gate.slice_min_rows: must be >= 1, got -10"),
    ("dataset.columns.distance", {"dtype": "float", "min": 10, "max": 1},
     "dataset.columns.distance: min 10 is above max 1"),
    ("dataset.key", [], "dataset.key: [] names no column"),
    ("training.lr", math.nan, "training.lr: expected a finite number, got nan"),
    ("dataset.partitions.keys", ["2013-01", ""], "dataset.partitions.keys[1]: '' is not a partition key"),
    ("dataset.partitions.keys", ["../../etc/x"], "dataset.partitions.keys[0]: '../../etc/x' is not a partition key"),
    ("model.registered_name", "team/model", "model.registered_name: 'team/model' is not a name MLflow's"),
    ("model.registered_name", "a:b", "model.registered_name: 'a:b' is not a name MLflow's"),
]

MORE_RULES = [
    ("dataset.name", "ab", "dataset.name: 'ab' must be 3-63 lower-case letters, digits and '_' (it names the store's "
                           "repository 'ab'"),  # issue 33: refused at load, not at ingest
    ("dataset.name", "Sales", "dataset.name: 'Sales' must be 3-63 lower-case"),
    ("dataset.slices", ["origin", "tail_number"], "dataset.columns: column 'tail_number' is used but not declared"),
    ("dataset.columns.time_hour", {"dtype": "datetime", "min_date": "2014-01-01", "max_date": "2013-01-01"},
     "min_date '2014-01-01' is after max_date '2013-01-01'"),
    ("dataset.columns.carrier", {"dtype": "str", "min": 1}, "dataset.columns.carrier: min/max are for int and float"),
    ("dataset.columns.distance", {"dtype": "float", "allowed": ["1"]}, "only str columns take allowed values"),
    ("dataset.partitions.keys", ["2013-01", "2013-01"], "dataset.partitions.keys: '2013-01' is listed twice"),
    ("dataset.partitions.keys", ["2013-13"], "dataset.partitions.keys[0]: '2013-13' does not match "
                                             "dataset.partitions.pattern 'YYYY-MM'"),
    ("dataset.partitions.pattern", "([a-z", "dataset.partitions.pattern: '([a-z' is not a regular expression"),
    ("dataset.time_column", "carrier", "dataset.time_column: 'carrier' is declared as 'str'; it must be a datetime"),
    ("dataset.time_column", None, "features.split: 'time' needs dataset.time_column; without one, use split: hash"),
    ("dataset.source", "nope", "dataset.source: 'nope' is neither a built-in source"),
    ("dataset.path", "x.csv", "dataset.path: 'x.csv' is for source 'files'"),
    ("features.holdout_fraction", 0.9, "features.validation_fraction + holdout_fraction: 1.05 leaves no rows"),
    ("features.validation_fraction", 0, "features.validation_fraction: must be between 0 and 1, got 0.0"),
    ("model", {"registered_name": "m", "output_min": 2000, "output_max": 1000},
     "model.output_min: 2000 must be below model.output_max 1000"),
    ("training.retries", -1, "training.retries: must be >= 0, got -1"),
    ("training.telemetry_every_steps", -1, "training.telemetry_every_steps: must be >= 0"),
    ("training.checkpoint_every_minutes", -1.0, "training.checkpoint_every_minutes: must be >= 0"),
    ("training.keep_last", 0, "training.keep_last: must be >= 1, got 0"),
    ("training.nproc", 1024, "training.batch_size: 512 is the global batch"),
    ("training.faults", {"slow_rank": -3}, "training.faults.slow_rank: must be >= -1, got -3"),
    ("training.weight_decay", -0.1, "training.weight_decay: must be >= 0, got -0.1"),
    ("gate.confidence", 0, "gate.confidence: must be between 0 and 1"),
    ("gate.slice_max_regression", -0.03, "gate.slice_max_regression: must be >= 0"),
    ("gate.latency_budget_ms", 0, "gate.latency_budget_ms: must be > 0, got 0.0"),
    ("gate.latency_max_regression", -0.5, "gate.latency_max_regression: must be >= 0, got -0.5"),
    ("gate", {"latency_p99_ms": 20, "latency_budget_ms": 30},
     "gate.latency_p99_ms: 20.0 is the former name of gate.latency_budget_ms (30.0 given too)"),
    ("gate.calibration_max_ece", 1.5, "gate.calibration_max_ece: must be in [0, 1], got 1.5"),
    ("gate.absolute_max_metric", math.inf, "gate.absolute_max_metric: expected a finite number, got inf"),
    ("gate.small_slices", "ignore", "gate.small_slices: 'ignore' is not one of ['pass', 'hold']"),
    ("features.timezone", "Mars/Olympus", "features.timezone: 'Mars/Olympus' is not a known time zone"),
    ("automation.schedule", "0 3 * *", "automation.schedule: '0 3 * *' is not a cron expression of 5 fields"),
    ("automation.schedule", "0 25 * * 1", "automation.schedule: '0 25 * * 1': hour field '25' is outside 0-23"),
    ("tuning.schedule", "*/0 * * * *", "tuning.schedule: '*/0 * * * *': minute field '*/0' is not valid"),
    ("automation.timezone", "Mars/Olympus", "automation.timezone: 'Mars/Olympus' is not a known time zone"),
    ("automation.owners", ["ops"], "automation.owners: 'ops' is neither an email nor team:name"),
    ("automation.owners", [], "automation.owners: name at least one owner"),
    ("automation.landing", "incoming/", "automation.landing: 'incoming/' is for source 'files'"),
    ("automation.gpu_slots", 0, "automation.gpu_slots: must be >= 1, got 0"),
    ("automation.retrain", "partial", "automation.retrain: 'partial' is not one of ['full', 'warm_start']"),
    ("monitoring.drift_ks_pvalue", 1.5, "monitoring.drift_ks_pvalue: must be in (0, 1), got 1.5"),
    ("monitoring.drift_psi", 0, "monitoring.drift_psi: must be > 0, got 0.0"),
    ("tuning.params", ["lr", "momentum"], "tuning.params: 'momentum' cannot be tuned"),
]


@pytest.mark.parametrize("cron", ["0 3 * * 1", "*/15 2-5 1,15 jan-jun mon-fri", "30 4 * * 7", "0 0 1 */3 *"])
def test_cron_expressions_users_write_are_accepted(cron: str) -> None:
    cfg = parse_config(_set(_config(), "automation.schedule", cron))
    assert cfg.automation.schedule == cron


@pytest.mark.parametrize(("path", "value", "message"), FOUND_ACCEPTED + MORE_RULES,
                         ids=[f"{p}={v!r}" for p, v, _ in FOUND_ACCEPTED + MORE_RULES])
def test_each_rule_fails_at_load_naming_key_and_value(path: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(_set(_config(), path, value))
    assert message in str(err.value)


def test_files_source_rules() -> None:
    data = _set(_config(), "dataset.source", "files")
    with pytest.raises(ConfigError, match=r"dataset.path: '' must name each partition's file or folder with "):
        parse_config(data)
    _set(data, "dataset.path", "data/{partition}.csv")
    _set(data, "dataset.tables.weather.path", "")
    with pytest.raises(ConfigError, match=r"dataset.tables.weather.path: '' must contain \{partition\}"):
        parse_config(data)


@pytest.mark.parametrize(("path", "value", "message"), [
    ("training.loss", "l1", "training.loss: 'l1' does not fit dataset.task 'binary'; use bce (or auto)"),
    ("gate.main_metric", "mae", "gate.main_metric: 'mae' does not fit dataset.task 'binary'; use logloss or brier"),
    ("dataset.columns.late", {"dtype": "str"}, "the target of a binary task must be int or float"),
    ("model.output_min", 0, "model.output_min / output_max: a binary model's outputs are probabilities already"),
])
def test_binary_task_rules(path: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(_set(_config("orders_late"), path, value))
    assert message in str(err.value)


def test_the_shipped_values_pass_every_rule() -> None:
    for name in shipped_configs():
        parse_config(_config(name))


def _multiclass() -> dict:
    """The flights config with a multiclass target (the carrier, from where and when a flight goes)."""
    data = _config()
    _set(data, "dataset.task", "multiclass")
    _set(data, "dataset.target", "carrier")
    _set(data, "dataset.slices", ["origin"])
    _set(data, "features.categorical", ["origin", "dest"])
    _set(data, "training.loss", "auto")
    _set(data, "gate.main_metric", "logloss")
    return data


@pytest.mark.parametrize(("path", "value", "message"), [
    ("gate.main_metric", "mae", "gate.main_metric: 'mae' does not fit dataset.task 'multiclass'; use logloss or "
                                "accuracy"),
    ("gate.main_metric", "macro_f1", "gate.main_metric: 'macro_f1' is not one of ["),
    ("training.loss", "bce", "training.loss: 'bce' does not fit dataset.task 'multiclass'; use cross_entropy"),
    ("dataset.slices", ["origin", "carrier"], "dataset.slices: 'carrier' is the target of a multiclass task; the "
                                              "evaluation slices by true class already"),
    ("dataset.columns.carrier", {"dtype": "datetime"}, "dataset.columns.carrier: the target of a multiclass task "
                                                       "holds class labels (str, int or float), not 'datetime'"),
    ("gate.absolute_min_metric", -0.5, "gate.absolute_min_metric: must be >= 0, got -0.5"),
    ("model.output_max", 1.0, "model.output_min / output_max: a multiclass model's outputs are class probabilities"),
])
def test_multiclass_task_rules(path: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(_set(_multiclass(), path, value))
    assert message in str(err.value)


def test_accuracy_is_a_multiclass_gate_metric_with_a_minimum_for_a_first_model() -> None:
    cfg = parse_config(_set(_set(_multiclass(), "gate.main_metric", "accuracy"), "gate.absolute_min_metric", 0.8))
    assert (cfg.gate.main_metric, cfg.gate.absolute_min_metric) == ("accuracy", 0.8)
    with pytest.raises(ConfigError, match=r"gate.absolute_min_metric: 1.5 is above 1, and accuracy is a share"):
        parse_config(_set(_set(_multiclass(), "gate.main_metric", "accuracy"), "gate.absolute_min_metric", 1.5))
    with pytest.raises(ConfigError, match=r"gate.main_metric: 'accuracy' does not fit dataset.task 'regression'"):
        parse_config(_set(_config(), "gate.main_metric", "accuracy"))


def test_a_config_written_before_the_latency_budget_was_renamed_still_loads() -> None:
    """Configs kept in a home (and recorded beside every model) name every key, the old one included."""
    cfg = parse_config(_set(_config(), "gate.latency_p99_ms", 40))
    assert cfg.gate.latency_budget_ms == 40.0 and cfg.to_dict()["gate"]["latency_p99_ms"] is None
    assert parse_config(cfg.to_dict()).gate.latency_budget_ms == 40.0


def test_the_training_section_checks_its_own_ranges_however_it_is_built() -> None:
    """Not only at load: a training section built or replaced in code (a tuning trial's) is refused the same way."""
    with pytest.raises(ConfigError, match=r"^training.batch_size: 4 is the global batch; it must hold at least one "):
        TrainingConfig(batch_size=4, nproc=8)
    with pytest.raises(ConfigError, match=r"^training.lr: must be > 0, got 0.0$"):
        TrainingConfig(lr=0.0)
    with pytest.raises(ConfigError, match=r"^training.faults.crash_rank: must be >= -1, got -2$"):
        FaultConfig(crash_rank=-2)
