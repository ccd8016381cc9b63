"""The job spec of a training run on a shared GPU fleet (the ``fleet`` section of a dataset config).

GPUs = ranks x GPUs per rank; ranks default to ``training.nproc``. The checkpoint interval is
``training.checkpoint_every_minutes`` (one setting, read by the training loop and by admission).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from mlassets.core.config.typed import ConfigError

NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")  # a Kubernetes label value and a Dagster tag value
CAPACITIES = ("spot", "on-demand", "spot-first")


def check_name(key: str, value: str) -> str:
    if not NAME.match(value):
        raise ConfigError(f"{key}: {value!r} is not a name (lowercase letters, digits and '-', at most 63)")
    return value


@dataclass(frozen=True)
class FleetJobConfig:
    """The job spec of a training run on a shared GPU fleet (`fleet.yaml` names the teams and classes)."""

    team: str = "default"
    """The run's team in `fleet.yaml`: whose GPU quota and budget it counts against."""
    priority: str = "batch"
    """A priority class of `fleet.yaml`."""
    ranks: int = 0
    """Ranks of the job (GPUs = ranks x GPUs per rank); 0: `training.nproc`."""
    gpus_per_rank: int = 1
    """GPUs each rank uses."""
    expected_minutes: float = 60.0
    """What admission prices, and what the lease's overrun warning compares with."""
    capacity: Literal["spot", "on-demand", "spot-first"] = "spot-first"
    """`spot`, `on-demand`, or `spot-first` (spot, falling back to on-demand)."""
    preemptible: bool = True
    """A higher priority class may stop it (SIGTERM, checkpoint, requeue)."""

    def __post_init__(self) -> None:
        check_name("fleet.team", self.team)
        check_name("fleet.priority", self.priority)
        if self.ranks < 0:
            raise ConfigError(f"fleet.ranks: must be >= 0 (0: training.nproc), got {self.ranks}")
        if self.gpus_per_rank < 1:
            raise ConfigError(f"fleet.gpus_per_rank: must be >= 1, got {self.gpus_per_rank}")
        if not self.expected_minutes > 0:
            raise ConfigError(f"fleet.expected_minutes: must be > 0, got {self.expected_minutes}")
