"""A run's job spec: the dataset config's ``fleet`` section (ranks from ``training.nproc`` unless given, the checkpoint
interval from ``training.checkpoint_every_minutes``), overridden per run, carried as run tags and recorded with the
model. ``from_tags`` reads back exactly what ``tags`` wrote."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from mlassets.core.config import ConfigError, PipelineConfig
from mlassets.core.config.job import FleetJobConfig
from mlassets.core.config.typed import build
from mlassets.core.fleet.config import FleetConfig

TAG = "mlassets/fleet."  # one run tag per field: mlassets/fleet.team, mlassets/fleet.gpus, ...
PRIORITY_TAG = "dagster/priority"  # Dagster's run queue dequeues higher values first
TEAM_TAG = "mlassets/team"  # the per-team run limit of the queue (tag_concurrency_limits) matches it
# The numbers a job spec may hold (the ranks and GPUs of the largest clusters; a year): what a flag, a run tag or a
# config names beyond them is refused naming it, before it reaches the lease table or a manifest.
RANGES = {"ranks": (1, 65536), "gpus_per_rank": (1, 64), "expected_minutes": (0.0, 525600.0),
          "checkpoint_every_minutes": (0.0, 525600.0)}


@dataclass(frozen=True)
class JobSpec:
    team: str
    priority: str
    ranks: int
    gpus_per_rank: int
    expected_minutes: float
    capacity: str
    preemptible: bool
    checkpoint_every_minutes: float

    @property
    def gpus(self) -> int:
        return self.ranks * self.gpus_per_rank

    def tags(self, fleet: FleetConfig | None = None) -> dict[str, str]:
        """Dagster run tags: every field, the GPUs, the team, and the queue priority when the fleet is known."""
        out = {f"{TAG}{k}": _text(v) for k, v in dataclasses.asdict(self).items()}
        out[f"{TAG}gpus"] = str(self.gpus)
        out[TEAM_TAG] = self.team
        if fleet is not None:
            out[PRIORITY_TAG] = str(fleet.priority_classes[self.priority].value)
        return out

    def record(self) -> dict[str, str]:
        """What the registry record keeps (string tags, as MLflow holds them)."""
        return {k.replace("/", "_"): v for k, v in self.tags().items() if k.startswith(TAG)}


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


OVERRIDABLE = tuple(f.name for f in dataclasses.fields(FleetJobConfig)) + ("checkpoint_every_minutes",)


def job_spec(cfg: PipelineConfig, overrides: dict[str, Any] | None = None) -> JobSpec:
    """The run's spec: the config's, with ``overrides`` (CLI flags or run tags, names as in the config) on top;
    an override is checked like the config key it replaces."""
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    unknown = sorted(set(overrides) - set(OVERRIDABLE))
    if unknown:
        raise ConfigError(f"fleet.{unknown[0]}: unknown job spec key (allowed: {', '.join(OVERRIDABLE)})")
    interval = overrides.pop("checkpoint_every_minutes", cfg.training.checkpoint_every_minutes)
    if isinstance(interval, bool) or not isinstance(interval, int | float):
        raise ConfigError(f"training.checkpoint_every_minutes: must be a number >= 0, got {interval!r}")
    check_range("training.checkpoint_every_minutes", "checkpoint_every_minutes", interval)
    section = build(FleetJobConfig, {**dataclasses.asdict(cfg.fleet_job), **overrides}, "fleet") if overrides \
        else cfg.fleet_job
    spec = JobSpec(team=section.team, priority=section.priority, ranks=section.ranks or cfg.training.nproc,
                   gpus_per_rank=section.gpus_per_rank, expected_minutes=section.expected_minutes,
                   capacity=section.capacity, preemptible=section.preemptible,
                   checkpoint_every_minutes=float(interval))
    for field in ("ranks", "gpus_per_rank", "expected_minutes"):
        check_range(f"fleet.{field}", field, getattr(spec, field))
    return spec


def check_range(key: str, field: str, value: float) -> None:
    """``value`` is a finite number in the range of job spec ``field``, else the error names ``key`` and it."""
    low, high = RANGES[field]
    exclusive = field == "expected_minutes"
    if not math.isfinite(value) or value > high or (value <= low if exclusive else value < low):
        what = "a whole number" if isinstance(low, int) else "a finite number"
        bound = f"above {low:g}" if exclusive else f"from {low:g}"
        raise ConfigError(f"{key}: {value!r} is out of range ({what} {bound} to {high:g})")


def from_tags(tags: dict[str, str]) -> JobSpec | None:
    """The spec a run carries in its tags, or None when it carries none."""
    if f"{TAG}team" not in tags:
        return None
    kinds = {f.name: f.type for f in dataclasses.fields(JobSpec)}
    values: dict[str, Any] = {}
    for name, kind in kinds.items():
        text = tags.get(f"{TAG}{name}")
        if text is None:
            raise ConfigError(f"run tag {TAG}{name}: missing")
        try:
            values[name] = (text == "true") if kind == "bool" else int(text) if kind == "int" else \
                float(text) if kind == "float" else text
        except ValueError:
            raise ConfigError(f"run tag {TAG}{name}: {text!r} is not a {kind}") from None
        if name in RANGES:
            check_range(f"run tag {TAG}{name}", name, values[name])
    return JobSpec(**values)


def check_against(spec: JobSpec, fleet: FleetConfig) -> None:
    """The spec names a team and a priority class the fleet has."""
    if spec.team not in fleet.teams:
        raise ConfigError(f"fleet.team: {spec.team!r} is not a team of the fleet ({', '.join(fleet.teams)})")
    if spec.priority not in fleet.priority_classes:
        raise ConfigError(f"fleet.priority: {spec.priority!r} is not a priority class of the fleet "
                          f"({', '.join(fleet.priority_classes)})")
