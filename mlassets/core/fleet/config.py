"""``fleet.yaml``: GPU pools (size, capacity, price), teams (GPU quota, budget, the most GPUs of each capacity they
may hold), priority classes (who may preempt whom), the lease, the grace period, the runtime above which checkpoints
are mandatory, and the pod shape Kubernetes is given per GPU. Read with ``yaml.safe_load`` within the config size
limits; every error names the key path and the value."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mlassets.core.config.job import check_name
from mlassets.core.config.typed import ConfigError, build
from mlassets.core.config.yaml_limits import check_size, load_yaml

CAPACITIES = ("spot", "on-demand")  # the order a spot-first job tries them in
FLEET_ENV = "MLASSETS_FLEET"
SHIPPED = Path(__file__).resolve().parents[2] / "configs" / "fleet" / "fleet.yaml"


@dataclass(frozen=True)
class Pool:
    gpus: int
    capacity: Literal["spot", "on-demand"]
    price_per_gpu_hour: float


@dataclass(frozen=True)
class Team:
    gpu_quota: int  # the most GPUs the team holds at once, whatever their capacity
    budget: float
    # the most GPUs of one capacity the team holds at once (default: its quota, at most the capacity's GPUs); every
    # team borrows the fleet's idle GPUs within these limits (Kueue: the team cohort's borrowingLimit)
    borrowing_limit: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PriorityClass:
    value: int
    preempts: list[str] = field(default_factory=list)  # classes whose preemptible jobs this one may stop


@dataclass(frozen=True)
class Lease:
    seconds: float = 1800.0  # a lease lasts this long after its last renewal
    heartbeat_s: float = 30.0  # how often each rank renews it (and how often the scheduler ticks)
    startup_s: float = 300.0  # until a rank reaches its first step, the lease lasts this long (imports, data loading)


@dataclass(frozen=True)
class Kubernetes:
    """What ``mlassets fleet kueue`` renders for: the namespace of the team queues and jobs (with
    ``team_namespaces``: one per team, ``<namespace>-<team>``), and what a pod asks per GPU beside it (Kueue quotas
    cover cpu and memory as well as GPUs)."""
    namespace: str = "mlassets"
    cpu_per_gpu: int = 4
    memory_gib_per_gpu: int = 16
    team_namespaces: bool = False


@dataclass(frozen=True)
class FleetConfig:
    pools: dict[str, Pool]
    teams: dict[str, Team]
    priority_classes: dict[str, PriorityClass]
    lease: Lease = field(default_factory=Lease)
    grace_s: float = 60.0
    overrun_factor: float = 1.5
    checkpoints_mandatory_after_minutes: float = 60.0
    currency: str = "₹"
    kubernetes: Kubernetes = field(default_factory=Kubernetes)

    def __post_init__(self) -> None:
        for section in ("pools", "teams", "priority_classes"):
            if not getattr(self, section):
                raise ConfigError(f"{section}: at least one is needed")
            for name in getattr(self, section):
                check_name(f"{section}.{name}", name)
        for name, pool in self.pools.items():
            if pool.gpus < 1 or pool.price_per_gpu_hour < 0:
                raise ConfigError(f"pools.{name}: gpus must be >= 1 and the price >= 0, got {pool.gpus}, "
                                  f"{pool.price_per_gpu_hour}")
        for name, team in self.teams.items():
            if team.gpu_quota < 0 or team.budget < 0:
                raise ConfigError(f"teams.{name}: gpu_quota and budget must be >= 0, got {team.gpu_quota}, "
                                  f"{team.budget}")
            for capacity, limit in team.borrowing_limit.items():
                key = f"teams.{name}.borrowing_limit.{capacity}"
                if capacity not in CAPACITIES:
                    raise ConfigError(f"{key}: {capacity!r} is not a capacity ({', '.join(CAPACITIES)})")
                if not 0 <= limit <= team.gpu_quota:
                    raise ConfigError(f"{key}: must be between 0 and the team's gpu_quota {team.gpu_quota}, "
                                      f"got {limit}")
        for name, cls in self.priority_classes.items():
            for other in cls.preempts:
                if other not in self.priority_classes:
                    raise ConfigError(f"priority_classes.{name}.preempts: {other!r} is not a priority class "
                                      f"({', '.join(self.priority_classes)})")
                if self.priority_classes[other].value >= cls.value:
                    raise ConfigError(f"priority_classes.{name}.preempts: {other!r} has value "
                                      f"{self.priority_classes[other].value}, not below {cls.value}")
        if self.lease.heartbeat_s <= 0 or self.lease.seconds <= self.lease.heartbeat_s:
            raise ConfigError(f"lease: seconds ({self.lease.seconds}) must exceed heartbeat_s "
                              f"({self.lease.heartbeat_s}) > 0")
        if self.grace_s <= 0 or self.overrun_factor < 1 or self.checkpoints_mandatory_after_minutes <= 0:
            raise ConfigError(f"grace_s {self.grace_s} must be > 0, overrun_factor {self.overrun_factor} >= 1, "
                              f"checkpoints_mandatory_after_minutes {self.checkpoints_mandatory_after_minutes} > 0")
        check_name("kubernetes.namespace", self.kubernetes.namespace)
        for team_name in self.teams:
            check_name(f"teams.{team_name}: its namespace", self.namespace_of(team_name))
        for key in ("cpu_per_gpu", "memory_gib_per_gpu"):
            if getattr(self.kubernetes, key) < 1:
                raise ConfigError(f"kubernetes.{key}: must be >= 1, got {getattr(self.kubernetes, key)}")

    def namespace_of(self, team: str) -> str:
        """The Kubernetes namespace of ``team``'s LocalQueues and jobs."""
        ns = self.kubernetes.namespace
        return f"{ns}-{team}" if self.kubernetes.team_namespaces else ns

    def gpus(self, capacity: str) -> int:
        """GPUs of the pools a job of this capacity may be placed on (spot-first: every pool)."""
        return sum(p.gpus for p in self.pools.values() if capacity in ("spot-first", p.capacity))

    def largest_pool(self, capacity: str) -> int:
        """The most GPUs one job of this capacity can hold: a job runs in one pool (one Kueue flavor)."""
        return max((p.gpus for p in self.pools.values() if capacity in ("spot-first", p.capacity)), default=0)

    def team_limit(self, team: str, capacity: str) -> int:
        """The most GPUs of ``capacity`` (spot or on-demand) ``team`` holds at once."""
        spec = self.teams[team]
        return spec.borrowing_limit.get(capacity, min(spec.gpu_quota, self.gpus(capacity)))


def parse_fleet(data: object) -> FleetConfig:
    return build(FleetConfig, data, "")


def fleet_path() -> Path:
    return Path(os.environ.get(FLEET_ENV) or SHIPPED)


def load_fleet(path: str | Path | None = None) -> FleetConfig:
    """The fleet of ``path``, ``$MLASSETS_FLEET`` or the shipped default; errors name the file and the key."""
    path = Path(path) if path is not None else fleet_path()
    if not path.is_file():
        raise ConfigError(f"{FLEET_ENV}: fleet file {str(path)!r} does not exist")
    check_size(path.stat().st_size, str(path))
    try:
        return parse_fleet(load_yaml(path.read_text(), str(path)))
    except ConfigError as exc:
        raise ConfigError(f"{path.name}: {exc}") from None
