"""What a study searches, and how a set of values enters a config (the study's trials and training share it)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from mlassets.core.config import ConfigError, PipelineConfig, parse_config
from mlassets.core.train.search import SPACE, Param  # noqa: F401 - the study's names for them


def suggest(trial: Any, params: Sequence[str], space: Mapping[str, Param] = SPACE) -> dict[str, float]:
    """One value per searched parameter, drawn by the study's sampler (``trial`` is an ``optuna.Trial``)."""
    values: dict[str, float] = {}
    for name in params:
        p = space[name]
        values[name] = (trial.suggest_categorical(name, list(p.choices)) if p.choices
                        else trial.suggest_float(name, p.low, p.high, log=p.log))
    return values


def with_values(cfg: PipelineConfig, values: Mapping[str, float]) -> PipelineConfig:
    """``cfg`` with ``values`` in their sections (``lr`` -> ``training.lr``, ``dropout`` -> ``model.dropout``);
    every config rule is checked again, naming the key and value that break one."""
    sections: dict[str, dict[str, float | int]] = {"training": {}, "model": {}}
    for name, value in values.items():
        if name not in SPACE:
            raise ConfigError(f"tuned value {name!r}: not a tunable parameter (allowed: {', '.join(SPACE)})")
        param = SPACE[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(f"{param.section}.{name}: tuned value {value!r} is not a finite number")
        if param.choices and value != int(value):
            raise ConfigError(f"{param.section}.{name}: tuned value {value!r} is not an integer")
        sections[param.section][name] = int(value) if param.choices else float(value)
    out = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, **sections["training"]),
                              model=dataclasses.replace(cfg.model, **sections["model"]))
    parse_config(out.to_dict())  # a tuned value that breaks a rule fails here, by key path
    return out


def epochs_of(cfg: PipelineConfig) -> int:
    """Epochs a trial trains: ``tuning.epochs``, else the config's own."""
    return cfg.tuning.epochs or cfg.training.epochs
