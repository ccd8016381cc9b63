"""What a training process hands back (``result.json``), and the candidate the training asset makes of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mlassets.core.config.families import DEFAULT
from mlassets.core.records import Record


@dataclass(frozen=True, kw_only=True)
class Environment(Record):
    """The facts that change a model's bits even with the same code, data, config and seed."""

    torch_version: str
    cpu_capability: str
    cpu_model: str
    blas: str
    threads: int
    world_size: int
    library: str = ""  # the boosted trees' library and device, e.g. "lightgbm 4.7.0" ("" for the torch families)


@dataclass(frozen=True, kw_only=True)
class TrainingResult(Record):
    """Rank 0's account of one training run, written atomically as ``<out>/result.json``."""

    data_version: str
    task: str
    seed: int
    environment: Environment
    backend: str
    device: str
    sharding: str
    precision: str
    n_train: int
    n_val: int
    curves: list[dict[str, float]]
    best_epoch: int
    val_metric: float
    val_metric_name: str  # mae (regression) or logloss (binary, multiclass)
    steps: int
    attempt: int
    resumed_from_step: int  # 0: started from scratch
    train_seconds: float
    loop_seconds: float
    validation_seconds: float
    weights_sha256: str  # of the bundle's weights.pt (the best epoch's weights)
    final_weights_sha256: str  # of the last step's weights, over names, dtypes, shapes and bytes
    model_dir: str
    checkpoints: list[dict[str, Any]]  # name, step, epoch, val_metric, path
    final_checkpoint: str | None
    best_checkpoint: str | None
    telemetry_dir: str
    telemetry: dict[str, float] = field(default_factory=dict)
    family: str = DEFAULT  # the model family that trained it (mlassets.core.config.families)
    model_code: dict[str, str] = field(default_factory=dict)  # a plug-in's name and source sha256, as trained

    def checkpoint_names(self) -> list[str]:
        return [str(c["name"]) for c in self.checkpoints]

    def summary(self) -> dict[str, Any]:
        """The few numbers a person reads first (the CLI's report and the asset's metadata)."""
        return {f"val_{self.val_metric_name}": self.val_metric, "best_epoch": self.best_epoch,
                "n_train": self.n_train, "n_val": self.n_val, "steps": self.steps, "attempt": self.attempt,
                "resumed_from_step": self.resumed_from_step, "train_seconds": self.train_seconds,
                "world_size": self.environment.world_size, "weights_sha256": self.weights_sha256}


@dataclass(frozen=True, kw_only=True)
class Provenance(Record):
    """How a model was made: everything a rebuild needs, and what it must match to be exact."""

    dataset: str
    data_commit: str  # the store commit (data version) it trained on
    source: str  # the dataset's source: a built-in name or ``package.module:function``
    store_backend: str  # local or lakefs: where the rebuild reads the data commit
    git_sha: str
    git_dirty: bool
    config_hash: str
    lock_hash: str
    seed: int
    environment: Environment
    weights_sha256: str
    mlflow_run_id: str
    image_digest: str = ""  # the training container's image, when it ran in one
    warm_start_from: str = ""  # the registered version whose weights it began from ("": trained from scratch)
    owners: list[str] = field(default_factory=list)  # the dataset's owners when it was trained
    family: str = DEFAULT  # the model family (records written before families have none: the default's)
    plugin: str = ""  # family torch: the plug-in that built the module ...
    plugin_sha256: str = ""  # ... and the sha256 of its source file when it trained
    native_model_uri: str = ""  # the same model logged with MLflow's own flavor (lightgbm, xgboost), when it has one


@dataclass(frozen=True, kw_only=True)
class CheckpointSet(Record):
    """The final and the best checkpoint of a run, committed to the derived repository."""

    commit: str
    final_uri: str
    best_uri: str
    working_area: str


@dataclass(frozen=True, kw_only=True)
class Candidate(Record):
    """A trained model waiting for evaluation: the run, how it was made, and where MLflow keeps it."""

    training: TrainingResult
    provenance: Provenance
    model_uri: str
