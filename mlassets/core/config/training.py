"""The ``training`` section: the loop's optimizer, ranks, checkpoints, telemetry, profiling and fault injection.

As in ``schema``, each field's meaning is the string right below it (rendered into ``docs/reference/config.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from mlassets.core.config.typed import ConfigError, at_least


@dataclass(frozen=True)
class FaultConfig:
    """Fault injection for tests, demos and the dashboard; everything off by default (no random numbers drawn)."""

    slow_loader_ms: float = 0.0
    """Added to every batch fetch, every rank."""
    slow_rank: int = -1
    """This rank sleeps `slow_rank_ms` per step (its compute); -1: none."""
    slow_rank_ms: float = 0.0
    """The slow rank's extra compute per step."""
    allreduce_delay_ms: float = 0.0
    """Added inside the gradient all-reduce."""
    heavy_compute: int = 0
    """Extra matmuls per step."""
    crash_at_step: int = -1
    """Raise at this global step (once per run directory); -1: never."""
    crash_rank: int = 0
    """The rank that crashes at `crash_at_step`; -1: every rank."""
    slow_input_rank: int = -1
    """This rank's input path waits `slow_input_ms` per batch fetch (a straggler's host); -1: none."""
    slow_input_ms: float = 0.0
    """The slow input rank's wait per batch fetch."""
    slow_checkpoint_ms: float = 0.0
    """Added to every checkpoint write (a slow disk or object store)."""

    def __post_init__(self) -> None:
        for key in ("slow_rank", "crash_rank", "slow_input_rank"):  # a rank number, or -1 (torchrun may run more)
            at_least({f"training.faults.{key}": getattr(self, key)}, -1)


@dataclass(frozen=True)
class ProfileConfig:
    """``torch.profiler`` traces of a window of steps on every rank, for HolisticTraceAnalysis; off by default."""

    steps: int = 0
    """Steps recorded per rank (traces under `<run>/profile/rank<r>.json`, read by the dashboard); 0: no
    profiling."""
    wait: int = 2
    """Steps skipped first (start-up)."""
    warmup: int = 1
    """Steps profiled but thrown away (profiler start-up)."""

    def __post_init__(self) -> None:
        for name in ("steps", "wait", "warmup"):
            if getattr(self, name) < 0:
                raise ConfigError(f"training.profile.{name}: must be >= 0, got {getattr(self, name)}")


@dataclass(frozen=True)
class TrainingConfig:
    """How a candidate trains: every key has a default."""

    epochs: int = 4
    """Passes over the training split."""
    batch_size: int = 512
    """The global batch, split across ranks."""
    lr: float = 0.003
    """The optimizer's learning rate."""
    weight_decay: float = 0.0
    """The optimizer's weight decay."""
    loss: Literal["auto", "l1", "mse", "huber", "bce", "cross_entropy"] = "auto"
    """`l1`, `mse`, `huber` (regression), `bce` (binary) or `cross_entropy` (multiclass); `auto`: `l1`, `bce` or
    `cross_entropy` by `dataset.task`."""
    seed: int = 42
    """Recorded; a rebuild uses it (same config and data commit: bit-identical weights)."""
    threads: int = 1
    """Threads per rank; recorded, a rebuild uses them."""
    nproc: int = 1
    """Ranks on this node (`torchrun --nproc-per-node`)."""
    backend: Literal["auto", "gloo", "nccl"] = "auto"
    """The process group's backend; `auto`: nccl on CUDA, gloo on CPU."""
    precision: Literal["fp32", "bf16"] = "fp32"
    """`bf16`: autocast on GPU only."""
    sharding: Literal["ddp", "fsdp"] = "ddp"
    """`fsdp`: FSDP2 `fully_shard`, sharded checkpoints."""
    checkpoint_every_steps: int = 0
    """Full-state checkpoints every this many steps; 0: at the end of every epoch (boosted trees: every N rounds,
    0: 100)."""
    checkpoint_every_minutes: float = 0.0
    """Full-state checkpoints by the clock too; 0: not by the clock (boosted trees: never by minutes)."""
    keep_last: int = 2
    """Checkpoints kept in the working area, plus the best."""
    async_checkpoint: bool = True
    """Write checkpoints asynchronously (`torch.distributed.checkpoint.async_save`)."""
    collective_timeout_s: int = 120
    """A dead rank fails the step within this."""
    telemetry_every_steps: int = 50
    """Step telemetry is aggregated to MLflow this often."""
    faults: FaultConfig = field(default_factory=FaultConfig)
    """Fault injection for tests and the dashboard."""
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    """`torch.profiler` traces for the dashboard."""
    lr_schedule: Literal["constant", "cosine"] = "constant"
    """`cosine`: the learning rate decays to 0 over all steps."""
    loader: Literal["memory", "stream"] = "memory"
    """The one loader's window: `stream` reads the splits a window of about `stream_window_rows` rows of row groups at
    a time, shuffled within it (the memory bound), resumed exactly; `memory` makes the window the whole split,
    decoded once."""
    stream_window_rows: int = 262_144
    """`stream`: rows shuffled together (the loader's memory bound: it holds the window in use and the next one, read
    ahead); boosted trees read this many rows at a time into the library's bins."""
    retries: int = 1
    """Dagster retries of the training step; each attempt resumes from the newest checkpoint."""
    budget_hours: float = 24.0
    """A run expected to take longer (steps x the step time measured on its first steps) stops there, naming the
    cost; `mlassets run --force` trains anyway; 0: no budget."""

    def __post_init__(self) -> None:
        """Each key's range, naming the key and the value (``training.loss`` against the task: ``checks``)."""
        at_least({"training.epochs": self.epochs, "training.batch_size": self.batch_size,
                  "training.threads": self.threads, "training.nproc": self.nproc, "training.keep_last": self.keep_last,
                  "training.stream_window_rows": self.stream_window_rows,
                  "training.collective_timeout_s": self.collective_timeout_s}, 1)
        at_least({"training.checkpoint_every_steps": self.checkpoint_every_steps,
                  "training.checkpoint_every_minutes": self.checkpoint_every_minutes,
                  "training.telemetry_every_steps": self.telemetry_every_steps, "training.retries": self.retries,
                  "training.budget_hours": self.budget_hours, "training.weight_decay": self.weight_decay}, 0)
        if self.lr <= 0:
            raise ConfigError(f"training.lr: must be > 0, got {self.lr!r}")
        if self.batch_size < self.nproc:
            raise ConfigError(f"training.batch_size: {self.batch_size} is the global batch; it must hold at least one "
                              f"row per rank (training.nproc {self.nproc})")
