"""The sections of what follows training: the promotion gate, the automation that starts runs with nobody at the
keyboard, monitoring, and tuning (``schema.PipelineConfig`` holds them; ``checks`` checks them across sections)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from mlassets.core.config.typed import ConfigError


@dataclass(frozen=True)
class GateConfig:
    main_metric: Literal["mae", "rmse", "logloss", "brier", "accuracy"] = "mae"  # unset in YAML: mae for regression,
    # logloss for binary and multiclass (config.load); logloss/brier: binary;
    # logloss/accuracy: multiclass (accuracy is higher-is-better: its limits are minimums)
    tolerance: float = 0.01
    slice_min_rows: int = 200
    slice_max_regression: float = 0.03
    bootstrap_samples: int = 1000
    confidence: float = 0.95
    absolute_max_metric: float | None = None  # none: a first model must beat a naive baseline (evaluate.derived)
    absolute_min_metric: float | None = None  # ... the same for higher-is-better metrics (accuracy)
    latency_budget_ms: float = 50.0  # single-row latency: the median of round medians (see evaluate.latency)
    latency_max_regression: float = 0.5  # vs the champion, timed interleaved: fails when the interval is above it
    latency_p99_ms: float | None = None  # the former name of latency_budget_ms, still read (older configs)
    max_size_mb: float = 100.0  # serialized model budget
    calibration_max_ece: float = 0.05  # binary and multiclass (top-label) tasks
    prediction_min: float | None = None  # none: the training target's range with a margin (evaluate.derived)
    prediction_max: float | None = None
    promotion: Literal["auto", "manual", "online"] = "auto"  # online: a canary or shadow first (serving.online)
    small_slices: Literal["pass", "hold"] = "pass"  # slices below slice_min_rows are listed; hold: not promoted

    def __post_init__(self) -> None:
        old = self.latency_p99_ms
        if old is None:
            return
        if self.latency_budget_ms not in (old, 50.0):
            raise ConfigError(f"gate.latency_p99_ms: {old!r} is the former name of gate.latency_budget_ms "
                              f"({self.latency_budget_ms!r} given too); keep gate.latency_budget_ms only")
        object.__setattr__(self, "latency_budget_ms", float(old))  # frozen: the value moves to the new name
        object.__setattr__(self, "latency_p99_ms", None)


@dataclass(frozen=True)
class AutomationConfig:
    """What starts runs with nobody at the keyboard: the Dagster daemon's sensors and schedules."""

    owners: list[str] = field(default_factory=lambda: ["team:ml"])  # every asset's owners (emails or team:name)
    on_new_data: bool = True  # a sensor runs the pipeline for every new commit of the watched branch
    landing: str = ""  # files source: a folder watched for deliveries, one file or folder per partition key
    sensor_interval_s: int = 30  # how often the sensors look
    landing_settle_s: int = 10  # a landed file is read once its size and mtime are unchanged this long (0: at once)
    landing_max_mb: int = 10_240  # a landed delivery above this is refused, never read
    schedule: str = ""  # cron of a retrain on the newest data version ("": none), e.g. "0 3 * * 1"
    timezone: str = "UTC"  # of the cron
    retrain: Literal["full", "warm_start"] = "full"  # scheduled retrains: from scratch, or from the champion
    full_retrain_every: int = 4  # warm_start: every Nth scheduled retrain is a full one
    gpu_slots: int = 1  # training steps run in the `gpu` concurrency pool, this many at once

    def __post_init__(self) -> None:
        for name in ("sensor_interval_s", "full_retrain_every", "gpu_slots", "landing_max_mb"):
            if getattr(self, name) < 1:
                raise ConfigError(f"automation.{name}: must be >= 1, got {getattr(self, name)}")
        if self.landing_settle_s < 0:
            raise ConfigError(f"automation.landing_settle_s: must be >= 0, got {self.landing_settle_s}")


@dataclass(frozen=True)
class MonitoringConfig:
    """Drift of new data against the champion's training data, and how fast a champion's accuracy decays."""

    drift_psi: float = 0.2  # a feature whose population stability index exceeds this has drifted
    drift_ks_pvalue: float = 0.001  # the target has drifted when the KS test's p-value is below this
    drift_min_rows: int = 200  # slices with fewer rows (new or reference) are not compared
    retrain_on_drift: bool = True  # drift requests a retrain, tagged with the reason
    decay_tolerance: float = 0.05  # recommend retraining before the metric worsens by more than this


@dataclass(frozen=True)
class TuningConfig:
    """An Optuna study on the validation split (never the holdout) whose best values training uses."""

    params: list[str] = field(default_factory=list)  # what is searched; none given: the family's default (mlp: lr,
    # weight_decay, dropout; torch: lr, weight_decay; lightgbm/xgboost: num_leaves, learning_rate,
    # min_child_samples, feature_fraction), filled in at load
    apply: bool = False  # training uses the newest tuned values of `params`; false: the config's values
    trials: int = 12
    epochs: int = 0  # per trial (0: training.epochs)
    seed: int = 0
    schedule: str = ""  # cron of a study ("": on demand only)
    storage: str = ""  # "": sqlite in $MLASSETS_HOME; else an RDB URL (or $MLASSETS_OPTUNA_STORAGE)
