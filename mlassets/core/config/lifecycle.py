"""The sections of what follows training: the promotion gate, the automation that starts runs with nobody at the
keyboard, monitoring, and tuning (``schema.PipelineConfig`` holds them; ``checks`` checks them across sections)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from mlassets.core.config.typed import ConfigError, at_least


@dataclass(frozen=True)
class GateConfig:
    """The rules a candidate must pass before it may become champion (``mlassets.core.evaluate.gate``)."""

    main_metric: Literal["mae", "rmse", "logloss", "brier", "accuracy"] = "mae"
    """Unset: the task's (`mae` for regression, `logloss` for binary and multiclass). `mae`, `rmse` (regression),
    `logloss`, `brier` (binary), `logloss`, `accuracy` (multiclass; higher is better, so its limits are
    minimums)."""
    tolerance: float = 0.01
    """The candidate may be this much worse than the champion overall (relative)."""
    slice_min_rows: int = 200
    """Slice values with at least this many holdout rows are judged one by one; a column's smaller values are pooled
    into one slice, `<column>=(N values under 200 rows, pooled)`, judged the same way when they have 30 rows
    together."""
    slice_max_regression: float = 0.03
    """A judged slice may be at most this much worse than the champion's (relative), with a bootstrap interval that
    excludes zero."""
    bootstrap_samples: int = 1000
    """Paired bootstrap samples of the slice intervals."""
    confidence: float = 0.95
    """The family-wise confidence of the slice intervals, Bonferroni-corrected: each at `1 - 0.05 / slices judged`
    (99.74% for 19 slices), so the chance that a healthy model is rejected by any of its slices stays near 5%."""
    absolute_max_metric: float | None = None  # derived: evaluate.derived
    """A first model (no champion) must reach this; unset: it must beat a naive baseline on the same holdout (the
    training median for MAE, mean for RMSE, base rate for binary, class shares for multiclass log loss)."""
    absolute_min_metric: float | None = None
    """The same for a higher-is-better main metric (`accuracy`); unset: beat always predicting the most frequent
    training class."""
    latency_budget_ms: float = 50.0  # see evaluate.latency
    """Single-row latency budget: the median of 15 rounds' medians (a p99 is shown, never gated). Unjudged (passed,
    the note says why) when the process was on a CPU under half the wall time it timed the calls."""
    latency_max_regression: float = 0.5
    """The candidate's single-row latency against the champion's, both timed side by side in one process: rejected
    only when the whole bootstrap interval of the change lies above +50%; unjudged, as the budget, on a loaded host."""
    latency_p99_ms: float | None = None
    """The former name of `gate.latency_budget_ms`, still read (configs written before)."""
    max_size_mb: float = 100.0
    """Budget of the saved model."""
    calibration_max_ece: float = 0.05
    """Binary and multiclass tasks (multiclass: top-label ECE)."""
    prediction_min: float | None = None
    """Sanity range of predictions; unset: the training target's range widened by half its width on each side
    (binary: [0, 1]; multiclass: probabilities in [0, 1] summing to 1, these unused)."""
    prediction_max: float | None = None
    """The upper end of the sanity range (unset: derived as `prediction_min` is)."""
    promotion: Literal["auto", "manual", "online"] = "auto"
    """`manual`: a passing version waits for `mlassets promote`; `online`: it earns full release through a canary or
    shadow on `mlassets serve` (`serving.online`)."""
    small_slices: Literal["pass", "hold"] = "pass"
    """Slice values too small to judge even pooled are listed; `hold`: such a version is not promoted."""

    def __post_init__(self) -> None:
        old = self.latency_p99_ms
        if old is not None:
            if self.latency_budget_ms not in (old, 50.0):
                raise ConfigError(f"gate.latency_p99_ms: {old!r} is the former name of gate.latency_budget_ms "
                                  f"({self.latency_budget_ms!r} given too); keep gate.latency_budget_ms only")
            object.__setattr__(self, "latency_budget_ms", float(old))  # frozen: the value moves to the new name
            object.__setattr__(self, "latency_p99_ms", None)
        self.check()

    def check(self) -> None:
        """Each key's range, naming the key and the value (``gate.main_metric`` against the task: ``checks``)."""
        at_least({"gate.tolerance": self.tolerance, "gate.slice_max_regression": self.slice_max_regression}, 0)
        at_least({"gate.slice_min_rows": self.slice_min_rows, "gate.bootstrap_samples": self.bootstrap_samples}, 1)
        if not 0 < self.confidence < 1:
            raise ConfigError(f"gate.confidence: must be between 0 and 1 (e.g. 0.95), got {self.confidence!r}")
        at_least({"gate.latency_max_regression": self.latency_max_regression}, 0)
        for key in ("absolute_max_metric", "latency_budget_ms", "max_size_mb"):
            if getattr(self, key) is not None and getattr(self, key) <= 0:
                raise ConfigError(f"gate.{key}: must be > 0, got {getattr(self, key)!r}")
        if self.absolute_min_metric is not None:
            at_least({"gate.absolute_min_metric": self.absolute_min_metric}, 0)
        if self.main_metric == "accuracy" and (self.absolute_min_metric or 0) > 1:
            raise ConfigError(f"gate.absolute_min_metric: {self.absolute_min_metric!r} is above 1, and accuracy is a "
                              "share of rows (0 to 1)")
        if not 0 <= self.calibration_max_ece <= 1:
            raise ConfigError(f"gate.calibration_max_ece: must be in [0, 1], got {self.calibration_max_ece!r}")
        low, high = self.prediction_min, self.prediction_max
        if low is not None and high is not None and low >= high:
            raise ConfigError(f"gate.prediction_min: {low:g} must be below gate.prediction_max {high:g}")


@dataclass(frozen=True)
class AutomationConfig:
    """What starts runs with nobody at the keyboard: the Dagster daemon's sensors and schedules."""

    owners: list[str] = field(default_factory=lambda: ["team:ml"])
    """Owners of every asset of the dataset (emails or `team:name`); told when a run fails."""
    on_new_data: bool = True
    """A sensor runs the pipeline for every new commit of the watched branch; false: snapshot and drift report
    only."""
    landing: str = ""
    """Files: a folder watched for deliveries, one file or folder per partition key (relative to the config)."""
    sensor_interval_s: int = 30
    """How often the sensors look."""
    landing_settle_s: int = 10
    """A landed file is read once its size and mtime are unchanged this long (`0`: at first sight)."""
    landing_max_mb: int = 10_240
    """A landed file or folder above this size is refused, never read."""
    schedule: str = ""
    """Cron of a retrain on the newest data version, e.g. `"0 3 * * 1"`; `""`: none."""
    timezone: str = "UTC"
    """The time zone of the cron."""
    retrain: Literal["full", "warm_start"] = "full"
    """Scheduled retrains from scratch, or `warm_start` from the champion's weights."""
    full_retrain_every: int = 4
    """`warm_start`: every Nth scheduled retrain is a full one."""
    gpu_slots: int = 1
    """Training steps run in the `gpu` concurrency pool, this many at once."""

    def __post_init__(self) -> None:
        for name in ("sensor_interval_s", "full_retrain_every", "gpu_slots", "landing_max_mb"):
            if getattr(self, name) < 1:
                raise ConfigError(f"automation.{name}: must be >= 1, got {getattr(self, name)}")
        if self.landing_settle_s < 0:
            raise ConfigError(f"automation.landing_settle_s: must be >= 0, got {self.landing_settle_s}")


@dataclass(frozen=True)
class MonitoringConfig:
    """Drift of new data against the champion's training data, and how fast a champion's accuracy decays."""

    drift_psi: float = 0.2
    """A feature whose population stability index exceeds this has drifted."""
    drift_ks_pvalue: float = 0.001
    """The target has drifted when the KS test's p-value is below this."""
    drift_min_rows: int = 200
    """Slices with fewer rows (new or reference) are not compared."""
    retrain_on_drift: bool = True
    """Drift requests a retrain, tagged with the reason."""
    decay_tolerance: float = 0.05
    """The recommended cadence retrains before the metric worsens by more than this."""


@dataclass(frozen=True)
class TuningConfig:
    """An Optuna study on the validation split (never the holdout) whose best values training uses."""

    params: list[str] = field(default_factory=list)  # filled in at load: automation.tuned_params
    """What the study searches; unset: the family's (`mlp`: `lr`, `weight_decay`, `dropout`; `torch`: `lr`,
    `weight_decay`; `lightgbm`/`xgboost`: `num_leaves`, `learning_rate`, `min_child_samples`, `feature_fraction`).
    `mlp` may also search `batch_size` and `embedding_dim`."""
    apply: bool = False
    """Training uses the newest tuned values of `params`; false: the config pins them."""
    trials: int = 12
    """Trials per study run."""
    epochs: int = 0
    """Epochs per trial; 0: `training.epochs`."""
    seed: int = 0
    """The sampler's seed."""
    schedule: str = ""
    """Cron of a study; `""`: on demand only."""
    storage: str = ""
    """Where the study persists: `""`: sqlite in `$MLASSETS_HOME`; else an RDB URL (or `$MLASSETS_OPTUNA_STORAGE`)."""
