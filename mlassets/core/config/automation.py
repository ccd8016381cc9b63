"""Rules of the automation, monitoring and tuning sections: cron expressions, owners, the landing folder."""

from __future__ import annotations

import re
import zoneinfo

from mlassets.core.config.families import DEFAULT, FAMILIES, TUNABLE, facts_of
from mlassets.core.config.schema import PipelineConfig
from mlassets.core.config.typed import ConfigError

_CRON_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12),
                ("day of week", 0, 7))
_NAMES = {3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
          4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]}
_OWNER = re.compile(r"team:[A-Za-z0-9_.-]+|[^@\s]+@[^@\s]+\.[^@\s]+")


def tuned_params(family: str, params: list[str]) -> list[str]:
    """``tuning.params`` as given, or the family's default when empty."""
    return list(params) or list(FAMILIES.get(family, FAMILIES[DEFAULT]).tuned)


def _cron_value(text: str, field: int) -> int:
    names = _NAMES.get(field, [])
    if text.lower() in names:
        return names.index(text.lower()) + (1 if field == 3 else 0)
    if not text.isdigit():
        raise ValueError(text)
    return int(text)


def check_cron(expr: str, where: str) -> None:
    """Five fields (minute hour day-of-month month day-of-week): numbers, names, ``*``, ranges, steps, lists."""
    parts = expr.split()
    if len(parts) != 5:
        raise ConfigError(f"{where}: {expr!r} is not a cron expression of 5 fields (minute hour day month weekday)")
    for i, (part, (name, low, high)) in enumerate(zip(parts, _CRON_FIELDS, strict=True)):
        for item in part.split(","):
            body, _, step = item.partition("/")
            try:
                if step and (not step.isdigit() or int(step) < 1):
                    raise ValueError(step)
                bounds = [] if body == "*" else [_cron_value(v, i) for v in body.split("-", 1)]
            except ValueError:
                raise ConfigError(f"{where}: {expr!r}: {name} field {part!r} is not valid") from None
            if any(not low <= v <= high for v in bounds) or (len(bounds) == 2 and bounds[0] > bounds[1]):
                raise ConfigError(f"{where}: {expr!r}: {name} field {part!r} is outside {low}-{high}")


def check_automation(cfg: PipelineConfig) -> None:
    auto, mon, tune = cfg.automation, cfg.monitoring, cfg.tuning
    if not auto.owners:
        raise ConfigError("automation.owners: name at least one owner (an email or team:name)")
    for owner in auto.owners:
        if not _OWNER.fullmatch(owner):
            raise ConfigError(f"automation.owners: {owner!r} is neither an email nor team:name")
    try:
        zoneinfo.ZoneInfo(auto.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"automation.timezone: {auto.timezone!r} is not a known time zone") from None
    for where, cron in (("automation.schedule", auto.schedule), ("tuning.schedule", tune.schedule)):
        if cron:
            check_cron(cron, where)
    if auto.landing and cfg.dataset.source != "files":
        raise ConfigError(f"automation.landing: {auto.landing!r} is for source 'files'; source "
                          f"{cfg.dataset.source!r} reads no files")
    if not 0 < mon.drift_ks_pvalue < 1:
        raise ConfigError(f"monitoring.drift_ks_pvalue: must be in (0, 1), got {mon.drift_ks_pvalue!r}")
    for name in ("drift_psi", "decay_tolerance"):
        if not getattr(mon, name) > 0:
            raise ConfigError(f"monitoring.{name}: must be > 0, got {getattr(mon, name)!r}")
    if mon.drift_min_rows < 1:
        raise ConfigError(f"monitoring.drift_min_rows: must be >= 1, got {mon.drift_min_rows}")
    unknown = [p for p in tune.params if p not in TUNABLE]
    if unknown:
        raise ConfigError(f"tuning.params: {unknown[0]!r} cannot be tuned (allowed: {', '.join(TUNABLE)})")
    allowed = facts_of(cfg.model.family).tunable
    other = [p for p in tune.params if p not in allowed]
    if other:
        raise ConfigError(f"tuning.params: {other[0]!r} is not searched for model.family {cfg.model.family!r} "
                          f"(it searches {', '.join(allowed)})")
    if tune.trials < 1 or tune.epochs < 0:
        raise ConfigError(f"tuning.trials / epochs: need trials >= 1 and epochs >= 0, got {tune.trials}, "
                          f"{tune.epochs}")
